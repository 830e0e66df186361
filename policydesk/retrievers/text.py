"""The full-text arm on the indexed side path (migration 0010), under the caller's clearance.

One statement inside the caller's scope: `policydesk_text_search` (a SECURITY DEFINER function
over the narrow `chunk_search` table, one row per distinct text and bucket with its own GIN
index, migration 0022) yields ids and ranks of the matching chunks the clearance admits, joined to the `data_chunks` rows read with the access
predicate in the WHERE and row-level security behind it, as the dense arm reads them. A chunk
the function names but the join cannot read is dropped, so the side path never widens what a
caller sees.

Ranks and order match PGVectorStore's own TEXT_SEARCH query (the same query-string cleaning,
`to_tsquery('english', ...)` OR-query and `ts_rank`), which `tests/test_text_search.py` pins for
every role, whenever the candidate cap (`ArmConfig.text_candidates`, migration 0016) does not
bind: on a corpus the caller sees no more than the cap of, always. Above it, only rows holding
the question's rarest words (their frequencies summing to at most the cap) are ranked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from sqlalchemy import BindParameter, Float, Integer, Select, String, bindparam, column, func, select

from policydesk.retrievers.scoped import TEXT_CANDIDATES, ArmConfig
from policydesk.retrievers.store import node_from_row
from policydesk.retrievers.threaded import ThreadedRetriever
from policydesk.storage.clearance import Clearance
from policydesk.storage.models import Chunk
from policydesk.storage.pipelined import compiled, scoped_reads
from policydesk.storage.predicate import access_clause


def search_statement(query: str | BindParameter, k: int | BindParameter, clearance: Clearance,
                     candidates: int | BindParameter = TEXT_CANDIDATES) -> Select:
    """One round trip: ids and ranks from the side path (ranking at most about `candidates` rows
    picked by the question's rarest words, migration 0016), joined to the chunk rows read under
    the access predicate (and RLS behind it)."""
    found = func.policydesk_text_search(query, k, candidates).table_valued(
        column("node_id", String), column("rank", Float)).render_derived(name="s")
    return (select(Chunk.node_id, Chunk.text, Chunk.metadata_, found.c.rank)
            .join_from(found, Chunk, Chunk.node_id == found.c.node_id)
            .where(access_clause(clearance, Chunk))
            .order_by(found.c.rank.desc(), Chunk.node_id))


def or_query(query_str: str) -> str:
    """PGVectorStore's cleaning: drop tsquery punctuation (keeping dots inside words), OR the words."""
    return re.sub(r"(?!\b\.\b)\W+", " ", query_str).strip().replace(" ", "|")


@lru_cache(maxsize=256)
def _compiled_search(dialect, clearance: Clearance) -> tuple[str, dict]:
    """`search_statement` for this clearance with the query, k and cap left as parameters,
    compiled once (read through `storage/pipelined.py`)."""
    params = (bindparam("query", value="", type_=String), bindparam("k", value=0, type_=Integer),
              bindparam("candidates", value=0, type_=Integer))
    return compiled(search_statement(*params[:2], clearance, params[2]), dialect, keep=("query", "k", "candidates"))


class IndexedTextRetriever(ThreadedRetriever):
    """Postgres full-text search through the side path, then the chunk rows under RLS."""

    def __init__(self, engine, config: ArmConfig, **kwargs: Any) -> None:
        self._engine, self._config = engine, config
        super().__init__(**kwargs)

    @property
    def config(self) -> ArmConfig:
        return self._config

    def statement(self, query_bundle: QueryBundle) -> tuple[str, dict] | None:
        """The search as (sql, params) for a pipelined read (`storage/pipelined.py`); None when
        the question has no searchable word."""
        query = or_query(query_bundle.query_str)
        if not query:
            return None
        c = self._config
        sql, params = _compiled_search(self._engine.dialect, c.clearance)
        return sql, params | {"query": query, "k": c.top_k, "candidates": c.text_candidates}

    @staticmethod
    def nodes(rows: list[tuple], build: Callable[[str, str, dict], TextNode] = node_from_row) -> list[NodeWithScore]:
        return [NodeWithScore(node=build(node_id, text, metadata), score=float(rank))
                for node_id, text, metadata, rank in rows]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        statement = self.statement(query_bundle)
        if statement is None:
            return []
        # BEGIN, the scope, the search and ROLLBACK in one wait on the server.
        [rows] = scoped_reads(self._engine, self._config.clearance, [statement])
        return self.nodes(rows)
