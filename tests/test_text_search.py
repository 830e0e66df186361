"""The full-text side path (migration 0010): same results as PGVectorStore's own text query under
RLS, for every role; nothing above clearance; the app role cannot read the side table; the side
table follows every write to data_chunks in the same transaction."""

from __future__ import annotations

import asyncio

import pytest
import yaml
from llama_index.core.schema import NodeWithScore, QueryBundle
from sqlalchemy import text
from sqlalchemy.exc import ProgrammingError

from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

from policydesk.accounts.access import ROLES, Clearance, clearance_for
from policydesk.retrievers import chunk_vector_store
from policydesk.retrievers.scoped import ArmConfig
from policydesk.retrievers.text import IndexedTextRetriever, or_query
from policydesk.storage.predicate import access_filters
from policydesk.storage.scope import permitted_scope
from policydesk.storage.upstream import store_engines
from tests.conftest import REPO

QUESTIONS = [q["question"] for f in ("golden_dev.yaml", "golden_test.yaml")
             for q in yaml.safe_load((REPO / "evals" / f).read_text())["items"]][:40] + [
    "SIU fraud referral case scoring threshold", "regulatory complaint reporting to the state",
    "behavioral health crisis caller", "rate schedule percent of Medicare", "timely filing 90 days",
    "what's the co-pay for tele-health?", "", "!!!", "a.b.c dotted.words", "prior-authorization (PA) turnaround",
]


class _PlainTextSearch:
    """The reference: PGVectorStore's own TEXT_SEARCH query under RLS, with the access predicate
    as its metadata filters (the path production read before the side path)."""

    def __init__(self, store, config: ArmConfig) -> None:
        self.store, self.config = store, config

    def retrieve(self, query: str) -> list[NodeWithScore]:
        c = self.config
        with permitted_scope(c.clearance):
            result = self.store.query(VectorStoreQuery(query_str=query, similarity_top_k=c.top_k,
                                                       sparse_top_k=c.top_k, filters=access_filters(c.clearance),
                                                       mode=VectorStoreQueryMode.TEXT_SEARCH))
        nodes = result.nodes or []
        for n in nodes:
            n.metadata.pop("custom_fields", None)
        return [NodeWithScore(node=n, score=s) for n, s in zip(nodes, result.similarities or [None] * len(nodes))]


def _arms(db, role: str, k: int = 20):
    c = clearance_for(role)
    store = chunk_vector_store(db)
    config = ArmConfig(clearance=c, top_k=k)
    return _PlainTextSearch(store, config), IndexedTextRetriever(store_engines(store)[0], config)


def _ranked(nodes) -> list[tuple[str, float]]:
    # PGVectorStore orders by rank only; equal ranks come back in any order, so compare with the
    # side path's tie-break (node id) applied to both.
    return sorted(((n.node.node_id, float(n.score)) for n in nodes), key=lambda x: (-x[1], x[0]))


@pytest.mark.parametrize("role", ROLES)
def test_side_path_returns_what_the_plain_rls_query_returns(role, demo_db):
    # The reference reads every match (k=200) so that ties at the cut-off are decided by the same
    # rule as the side path (rank, then node id), not by the plan's arbitrary order.
    plain, _ = _arms(demo_db, role, k=200)
    _, indexed = _arms(demo_db, role, k=20)
    compared = 0
    for q in QUESTIONS:
        expected = _ranked(plain.retrieve(q))[:20] if q.strip("!") else []
        got = indexed.retrieve(q)
        assert _ranked(got) == expected, q
        assert [n.node.node_id for n in got] == [i for i, _ in expected], q  # and already in that order
        compared += bool(expected)
    assert compared >= 30


@pytest.mark.parametrize("role", ROLES)
def test_side_path_nodes_carry_text_and_metadata_like_the_store(role, demo_db):
    plain, indexed = _arms(demo_db, role, k=5)
    q = "How long does a provider have to file a claim?"
    a = {n.node.node_id: n.node for n in plain.retrieve(q)}
    b = {n.node.node_id: n.node for n in indexed.retrieve(q)}
    assert a.keys() == b.keys() and a
    for node_id, node in a.items():
        assert b[node_id].get_content() == node.get_content()
        assert b[node_id].metadata == {k: v for k, v in node.metadata.items() if k != "custom_fields"}


def test_async_side_path_matches_sync(demo_db):
    _, indexed = _arms(demo_db, "supervisor")
    q = "appeal deadline after a denial notice"
    assert [n.node.node_id for n in asyncio.run(indexed.aretrieve(QueryBundle(q)))] == \
        [n.node.node_id for n in indexed.retrieve(q)]


@pytest.mark.parametrize("role", ROLES)
def test_nothing_above_clearance_comes_back_from_the_side_function(role, demo_db):
    c = clearance_for(role)
    with demo_db.owner.connect() as conn:
        meta = {r.node_id: (r.access_level, r.sensitive) for r in conn.execute(
            text("SELECT node_id, access_level, sensitive FROM data_chunks"))}
    with permitted_scope(c), demo_db.app.connect() as conn:
        ids = [r.node_id for q in QUESTIONS if or_query(q) for r in conn.execute(
            text("SELECT node_id FROM policydesk_text_search(:q, 200)"), {"q": or_query(q)})]
    assert ids and all(c.permits(*meta[i]) for i in ids)
    if role == "compliance":  # the probes do reach restricted rows when cleared
        assert any(meta[i][0] in ("restricted", "compliance") or meta[i][1] for i in ids)


def test_the_side_function_tells_the_planner_it_returns_few_rows(demo_db):
    # Without a ROWS clause Postgres assumes 1,000 rows and joins to data_chunks by scanning every
    # permitted chunk (migration 0012); a migration replacing the function must keep it.
    with demo_db.owner.connect() as conn:
        rows = conn.execute(text("SELECT prorows FROM pg_proc WHERE proname = 'policydesk_text_search'")).scalars().all()
    assert rows and all(r <= 200 for r in rows)


def test_no_scope_no_rows_and_no_direct_read(demo_db):
    with demo_db.app.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM policydesk_text_search('claim|filing', 50)")).scalar_one() == 0
    with pytest.raises(ProgrammingError, match="permission denied"):
        with permitted_scope(Clearance("test", ("public",), False)), demo_db.app.connect() as conn:
            conn.execute(text("SELECT count(*) FROM chunk_search"))


def test_side_table_follows_every_write(make_db, embed_model, settings):
    db = make_db(demo=True)  # the demo corpus, ingested (a copy of the session's ingested template)

    def pairs(sql):
        with db.owner.connect() as conn:
            return set(map(tuple, conn.execute(text(sql)).all()))

    chunks = "SELECT node_id, access_level, sensitive, text_search_tsv::text FROM data_chunks"
    side = "SELECT u.id, s.access_level, s.sensitive, s.tsv::text FROM chunk_search s, unnest(s.node_ids) AS u(id)"
    assert pairs(chunks) == pairs(side) and len(pairs(side)) > 100
    with db.owner.begin() as conn:  # a reclassified chunk, an edited one and a deleted one
        first, second, third = conn.execute(text("SELECT node_id FROM data_chunks ORDER BY node_id LIMIT 3")).scalars()
        conn.execute(text("UPDATE data_chunks SET metadata_ = jsonb_set(metadata_, '{access_level}', '\"compliance\"') "
                          "WHERE node_id = :n"), {"n": first})
        conn.execute(text("UPDATE data_chunks SET text = 'zebra quokka' WHERE node_id = :n"), {"n": second})
        conn.execute(text("DELETE FROM data_chunks WHERE node_id = :n"), {"n": third})
    assert pairs(chunks) == pairs(side)
    with db.owner.begin() as conn:
        conn.execute(text("TRUNCATE data_chunks"))
    assert pairs(side) == set()


def _df_recount(conn) -> set[tuple]:
    return set(map(tuple, conn.execute(text(
        "SELECT l.lexeme, s.access_level, s.sensitive, count(*) FROM chunk_search s, unnest(s.node_ids) AS u(id), "
        "unnest(array_append(tsvector_to_array(s.tsv), '')) AS l(lexeme) GROUP BY 1, 2, 3")).all()))


def _df(conn) -> set[tuple]:
    return set(map(tuple, conn.execute(text(
        "SELECT lexeme, access_level, sensitive, ndoc FROM chunk_search_df")).all()))


def test_lexeme_counts_follow_every_write(make_db, embed_model, settings):
    # Migration 0016: per-clearance document frequencies, kept in the writing transaction.
    db = make_db(demo=True)  # the demo corpus, ingested (a copy of the session's ingested template)
    with db.owner.connect() as conn:
        assert _df(conn) == _df_recount(conn) and len(_df(conn)) > 1000
    with db.owner.begin() as conn:
        first, second, third = conn.execute(text("SELECT node_id FROM data_chunks ORDER BY node_id LIMIT 3")).scalars()
        conn.execute(text("UPDATE data_chunks SET metadata_ = jsonb_set(metadata_, '{access_level}', '\"compliance\"') "
                          "WHERE node_id = :n"), {"n": first})
        conn.execute(text("UPDATE data_chunks SET text = 'zebra quokka' WHERE node_id = :n"), {"n": second})
        conn.execute(text("DELETE FROM data_chunks WHERE node_id = :n"), {"n": third})
    with db.owner.connect() as conn:
        assert _df(conn) == _df_recount(conn)
        assert "quokka" in {r[0] for r in _df(conn)}
        total = conn.execute(text("SELECT sum(ndoc) FROM chunk_search_df WHERE lexeme = ''")).scalar_one()
        assert total == conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
    with db.owner.begin() as conn:
        conn.execute(text("TRUNCATE data_chunks"))
    with db.owner.connect() as conn:
        assert _df(conn) == set()
    db.dispose()  # the session keeps every database it made open: give the connections back


def test_the_application_login_cannot_read_the_lexeme_counts(demo_db):
    with pytest.raises(ProgrammingError, match="permission denied"):
        with permitted_scope(clearance_for("compliance")), demo_db.app.connect() as conn:
            conn.execute(text("SELECT count(*) FROM chunk_search_df"))


@pytest.mark.parametrize("role", ROLES)
def test_a_binding_cap_only_drops_rows_never_reorders_or_widens(role, demo_db):
    # With a cap far below the corpus, the side path ranks only rows holding the question's
    # rarest words: what comes back is the uncapped ranking with rows left out, same ranks.
    c = clearance_for(role)
    narrowed = 0
    with permitted_scope(c), demo_db.app.connect() as conn:
        for q in QUESTIONS[:30]:
            q = or_query(q)
            if not q:
                continue
            full = [tuple(r) for r in conn.execute(text(
                "SELECT node_id, rank FROM policydesk_text_search(:q, 200, 2147483647)"), {"q": q})]
            capped = [tuple(r) for r in conn.execute(text(
                "SELECT node_id, rank FROM policydesk_text_search(:q, 200, 10)"), {"q": q})]
            assert capped == [r for r in full if r in set(capped)], q
            narrowed += len(capped) < len(full)
    assert narrowed >= 10  # the cap did bind


def test_content_above_clearance_does_not_shape_a_callers_candidates(make_db, embed_model, settings):
    # The frequencies that pick the candidates count only the buckets the caller may read: making
    # a word common in compliance-only chunks changes nothing for a rep.
    db = make_db(demo=True)  # the demo corpus, ingested (a copy of the session's ingested template)
    rep = clearance_for("rep")
    q = or_query("timely filing limit for a corrected claim appeal")

    def rep_view():
        with permitted_scope(rep), db.app.connect() as conn:
            found = [tuple(r) for r in conn.execute(text(
                "SELECT node_id, rank FROM policydesk_text_search(:q, 20, 40)"), {"q": q})]
        with db.owner.begin() as conn:
            conn.execute(text("SELECT set_config('policydesk.levels', :l, true), "
                              "set_config('policydesk.sensitive', 'off', true)"), {"l": ",".join(rep.levels)})
            cand = conn.execute(text("SELECT policydesk_text_candidates(:q, 40)::text"), {"q": q}).scalar_one()
        return found, cand

    before = rep_view()
    assert before[1] is not None  # the cap binds for this question
    with db.owner.begin() as conn:
        ids = conn.execute(text("SELECT node_id FROM data_chunks WHERE NOT access_level = ANY(:l)"),
                           {"l": list(rep.levels)}).scalars().all()
        assert ids
        for lexeme_word in ("timely", "corrected"):
            conn.execute(text("UPDATE data_chunks SET text = text || :w WHERE node_id = ANY(:ids)"),
                         {"w": f" {lexeme_word}", "ids": ids})
    assert rep_view() == before
    db.dispose()  # the session keeps every database it made open: give the connections back


def test_the_side_index_keeps_no_pending_list(demo_db):
    # Migration 0017: GIN's fast update leaves fresh rows in a pending list every search reads in
    # full; the side index writes straight into the index instead, so an ingest never slows the
    # searches after it. The ingest that built the demo database left nothing pending.
    with demo_db.owner.connect() as conn:
        options = conn.execute(text("SELECT reloptions FROM pg_class WHERE relname = 'chunk_search_tsv'")).scalar_one()
        merged = conn.execute(text("SELECT gin_clean_pending_list('chunk_search_tsv'::regclass)")).scalar_one()
    assert "fastupdate=off" in (options or [])
    assert merged == 0  # pages the call found pending and merged


def _ranked_per_chunk(db, clearance, q: str, k: int) -> list[tuple[str, float]]:
    """The reference: every readable chunk ranked on its own under RLS, ties broken by node id."""
    with permitted_scope(clearance), db.app.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT node_id, ts_rank(text_search_tsv, to_tsquery('english', :q)) AS r FROM data_chunks "
            "WHERE text_search_tsv @@ to_tsquery('english', :q) ORDER BY r DESC, node_id LIMIT :k"), {"q": q, "k": k})]


def _side(db, clearance, q: str, k: int) -> list[tuple[str, float]]:
    with permitted_scope(clearance), db.app.connect() as conn:
        return [tuple(r) for r in conn.execute(text(
            "SELECT node_id, rank FROM policydesk_text_search(:q, :k, 1000000)"), {"q": q, "k": k})]


def test_copies_of_a_text_are_ranked_once_and_return_like_every_chunk(make_db, embed_model, settings):
    # Migration 0022: word-for-word copies (an unchanged section in a new version, an edition's
    # shared section) share one side-table row; the top k, ties at the cut included, is what
    # ranking every chunk gives.
    db = make_db(demo=True)  # the demo corpus, ingested (a copy of the session's ingested template)
    with db.owner.begin() as conn:
        conn.execute(text(
            "INSERT INTO data_chunks (text, metadata_, node_id, embedding) "
            "SELECT c.text, c.metadata_, c.node_id || '-copy-' || g, c.embedding "
            "FROM data_chunks c, generate_series(1, 4) AS g WHERE c.id % 3 = 0"))
        copies = conn.execute(text("SELECT max(cardinality(node_ids)) FROM chunk_search")).scalar_one()
    assert copies >= 5
    questions = [or_query(q) for q in QUESTIONS if or_query(q)][:25]
    for role in ROLES:
        for k in (3, 20):
            for q in questions:
                assert _side(db, clearance_for(role), q, k) == _ranked_per_chunk(db, clearance_for(role), q, k), (role, k, q)
    with db.owner.begin() as conn:  # drop some copies and some originals
        conn.execute(text("DELETE FROM data_chunks WHERE node_id LIKE '%-copy-2' OR id % 7 = 0"))
        rows = conn.execute(text("SELECT sum(cardinality(node_ids)) FROM chunk_search")).scalar_one()
        assert rows == conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
    for q in questions:
        assert _side(db, clearance_for("rep"), q, 3) == _ranked_per_chunk(db, clearance_for("rep"), q, 3), q
    db.dispose()
