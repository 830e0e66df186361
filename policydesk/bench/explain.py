"""EXPLAIN (ANALYZE, BUFFERS) dumps of the statements retrieval runs, for the scale bench.

Each function runs a statement's EXPLAIN as the application would run it (scope, login) and
writes the plan to a file in the directory it is given (the bench's output directory, never the
repository), returning the facts the bench reports about it.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event, select, text
from sqlalchemy.dialects import postgresql

from policydesk.storage.clearance import Clearance
from policydesk.storage.predicate import access_clause
from policydesk.storage.scope import permitted_scope
from policydesk.storage.sources import sections_statement, versions_statement


class Capture:
    """The last SELECT the application engine ran (the statement PGVectorStore built)."""

    def __init__(self, engine) -> None:
        self.statement = None
        self.params = None
        event.listen(engine, "before_cursor_execute", self._on)

    def _on(self, conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "data_chunks" in statement:
            self.statement, self.params = statement, parameters


def explain(db, clearance: Clearance, statement, params) -> str:
    with permitted_scope(clearance), db.app.begin() as conn:
        return "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + statement, params))


# The statement of policydesk_text_search (migration 0022), its variables as parameters: the
# function is PL/pgSQL, whose nested plans EXPLAIN does not show (and the embedded server ships no
# auto_explain), so the bench explains the statement the function runs with the same bindings.
_SIDE = ("SELECT u.id, t.rank FROM (SELECT c.node_ids, ts_rank(c.tsv, CAST(:full AS tsquery)) AS rank FROM ("
         "SELECT s.node_ids, s.tsv FROM chunk_search s WHERE s.tsv @@ CAST(:narrowed AS tsquery) "
         "AND s.access_level = ANY (:levels) AND NOT s.sensitive OFFSET 0) c "
         "WHERE c.tsv @@ CAST(:full AS tsquery) ORDER BY rank DESC FETCH FIRST 20 ROWS WITH TIES) t, "
         "unnest(t.node_ids) AS u(id) ORDER BY t.rank DESC, u.id LIMIT 20")


def explain_side_path(db, question: str, out_dir: Path, tag: str) -> dict:
    """The side path's statement (migrations 0016, 0022) as the definer runs it, for the rep: the
    candidate query at the configured cap, the statement, and the whole call."""
    from policydesk.retrievers.text import or_query

    from policydesk.config import get_settings

    q = or_query(question)
    cap = get_settings().TEXT_CANDIDATES  # as configured, like the retrieval stages
    levels = ["public", "internal"]
    with db.owner.begin() as conn:
        conn.execute(text("SELECT set_config('policydesk.levels', 'public,internal', true), "
                          "set_config('policydesk.sensitive', 'off', true)"))
        body = conn.execute(text("SELECT prosrc FROM pg_proc WHERE proname = 'policydesk_text_search'")).scalar_one()
        full = conn.execute(text("SELECT to_tsquery('english', :q)::text"), {"q": q}).scalar_one()
        narrowed = conn.execute(text("SELECT policydesk_text_candidates(:q, :c)::text"),
                                {"q": q, "c": cap}).scalar()
        sql = _SIDE
        params = {"full": full, "narrowed": narrowed or full, "levels": levels}
        branch = "\n".join(r[0] for r in conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + sql), params))
        call_sql = "SELECT * FROM policydesk_text_search(:q, 20, :c)"
        conn.execute(text(call_sql), {"q": q, "c": cap})  # its plans cached, as in use
        call = "\n".join(r[0] for r in conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + call_sql),
                                                     {"q": q, "c": cap}))
    (out_dir / f"{tag}_text_side_path_rep.txt").write_text(
        f"-- query {q!r}\n-- full query {full}\n-- candidate query at cap {cap}: {narrowed or 'none (the full query)'}\n"
        f"-- function body\n{body}\n-- the statement, variables bound\n{sql}\n-- plan\n{branch}\n"
        f"-- the call\n{call}\n")
    return {"case": "fulltext_side_path_rep", "uses_gin": "chunk_search_tsv" in branch,
            "narrowed": narrowed is not None, "branch_exec": branch.strip().splitlines()[-1],
            "call_exec": call.strip().splitlines()[-1]}


def explain_text_join(db, question: str, out_dir: Path, tag: str) -> dict:
    """The full-text arm's whole statement (side function joined to the chunk rows), as a rep."""
    from policydesk.retrievers.text import or_query, search_statement

    rep = Clearance(role="bench:rep", levels=("public", "internal"), sensitive=False)
    stmt = search_statement(or_query(question), 20, rep)
    sql = str(stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
    with permitted_scope(rep), db.app.begin() as conn:
        plan = "\n".join(r[0] for r in conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + sql)))
    (out_dir / f"{tag}_text_join_rep.txt").write_text(f"-- statement\n{sql}\n-- plan\n{plan}\n")
    return {"case": "fulltext_join_rep", "chunk_rows_by_node_id_index": "data_chunks_node_id_key" in plan,
            "seq_scan_on_chunks": "Seq Scan on data_chunks" in plan, "exec": plan.strip().splitlines()[-1]}


def explain_version_lookups(db, out_dir: Path, tag: str) -> dict:
    """EXPLAIN the version resolver's two statements for a synthetic 3-version policy a rep can see."""
    from policydesk.storage.models import DocumentVersion

    rep = Clearance(role="bench:rep", levels=("public", "internal"), sensitive=False)
    with db.owner.connect() as conn:
        doc_id = conn.execute(select(DocumentVersion.doc_id).where(
            DocumentVersion.doc_id.like("SYN-%"), DocumentVersion.version == 3,
            access_clause(rep, DocumentVersion)).limit(1)).scalar()
    plans = {}
    with permitted_scope(rep), db.app.begin() as conn:
        for name, stmt in (("versions", versions_statement([doc_id], rep)),
                           ("section", sections_statement(doc_id, 1, rep, "s0"))):
            sql = str(stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
            plans[name] = "\n".join(r[0] for r in conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + sql)))
    body = "".join(f"-- {n} ({doc_id})\n{p}\n\n" for n, p in plans.items())
    (out_dir / f"{tag}_version_lookups.txt").write_text(body)
    return {"case": "version_lookups", "doc_id": doc_id,
            "section_uses_doc_section_index": "data_chunks_doc_section" in plans["section"],
            "section_seq_scan": "Seq Scan on data_chunks" in plans["section"],
            "section_exec": plans["section"].strip().splitlines()[-1],
            "versions_exec": plans["versions"].strip().splitlines()[-1]}
