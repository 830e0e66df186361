"""The clearance guard's read of stored chunk rows, in one round trip.

The guard runs on every request, between retrieval and version resolution, so it must cost
under 1 ms p95 at top-k 8 (a `policydesk bench` target): one statement with `access_clause` in its WHERE and the ids as
one array parameter, compiled once per clearance and read through `pipelined.scoped_reads`
(BEGIN, scope, SELECT and ROLLBACK in one wait; docs/performance.md, "Clearance guard").
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy import any_, select
from sqlalchemy.engine import Dialect, Engine

from policydesk.storage.clearance import Clearance
from policydesk.storage.models import Chunk
from policydesk.storage.predicate import access_clause
from policydesk.storage.sources import array_param
from policydesk.storage.pipelined import compiled, scoped_reads


class StoredChunk(NamedTuple):
    """What the guard judges a node by: the stored columns, never the node's own metadata."""

    node_id: str
    access_level: str
    sensitive: bool
    text: str
    line_of_business: Any  # the JSONB list as ingest stored it, or None (every product)


def stored_chunks(engine: Engine, *, chunk_ids: Iterable[str], clearance: Clearance) -> dict[str, StoredChunk]:
    """The stored rows of these chunk ids that the caller may read, keyed by id."""
    ids = sorted(set(chunk_ids))
    if not ids:
        return {}
    sql, params = _statement(engine.dialect, clearance)
    [rows] = scoped_reads(engine, clearance, [(sql, params | {"ids": ids})])
    return {r[0]: StoredChunk(*r) for r in rows}


@lru_cache(maxsize=256)
def _statement(dialect: Dialect, clearance: Clearance) -> tuple[str, dict]:
    stmt = select(
        Chunk.node_id, Chunk.access_level, Chunk.sensitive, Chunk.text, Chunk.metadata_["line_of_business"],
    ).where(Chunk.node_id == any_(array_param("ids")), access_clause(clearance, Chunk))
    return compiled(stmt, dialect, keep=("ids",))


class CallerChunks:
    """The chunks one caller may read, re-read from the store on demand: the synthesizer's source
    of truth for what it shows the model and checks quotes against, whatever built its context."""

    def __init__(self, engine: Engine, clearance: Clearance) -> None:
        if not isinstance(clearance, Clearance):
            raise TypeError(f"CallerChunks needs the caller's Clearance, not {type(clearance).__name__}")
        self.engine, self.clearance = engine, clearance

    def read(self, chunk_ids: Iterable[str]) -> dict[str, Any]:
        """Stored text and metadata of the ids the caller may read, as `TextNode`s keyed by id;
        an id that does not exist or is above the clearance is simply absent."""
        from llama_index.core.schema import TextNode

        ids = sorted(set(chunk_ids))
        if not ids:
            return {}
        sql, params = _node_statement(self.engine.dialect, self.clearance)
        [rows] = scoped_reads(self.engine, self.clearance, [(sql, params | {"ids": ids})])
        return {r[0]: TextNode(id_=r[0], text=r[1], metadata={k: v for k, v in (r[2] or {}).items() if not k.startswith("_")})
                for r in rows}

    def reread(self, nodes: Iterable[Any]) -> tuple[list[Any], list[str]]:
        """(the nodes the caller may read, as stored, in their order and each once, with their
        scores; the ids of the others): what a synthesizer may show, whatever it was handed."""
        from llama_index.core.schema import NodeWithScore

        first: dict[str, Any] = {}
        for n in nodes:
            first.setdefault(n.node.node_id, n)
        stored = self.read(first)
        kept = [NodeWithScore(node=stored[i], score=n.score) for i, n in first.items() if i in stored]
        return kept, [i for i in first if i not in stored]


@lru_cache(maxsize=256)
def _node_statement(dialect: Dialect, clearance: Clearance) -> tuple[str, dict]:
    stmt = select(Chunk.node_id, Chunk.text, Chunk.metadata_).where(
        Chunk.node_id == any_(array_param("ids")), access_clause(clearance, Chunk))
    return compiled(stmt, dialect, keep=("ids",))
