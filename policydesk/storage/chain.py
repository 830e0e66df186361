"""The hash chains over `traces` and `audit_log` (migration 0005): verify, check one row, purge.

The database computes every hash (a BEFORE INSERT trigger), so verification asks the same
function over the row as stored: an edited column, a deleted row or a reordered one shows up as
the first row whose hash or link does not match. Verification and purge run on the owner
engine; `row_proof` runs on the application engine inside the caller's scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from policydesk.storage.audit import insert_audit

GENESIS = "0" * 64
CHAINED_TABLES = ("traces", "audit_log")
# The row as the trigger hashed it (migration 0005), for a table aliased `t`: without the hash and
# the generated search column, and without `line_of_business` while it is NULL (migration 0014),
# so rows written before that column existed hash exactly as they did.
CANONICAL_ROW = "policydesk_canonical_row(to_jsonb(t))"
_RECOMPUTE = f"policydesk_row_digest(t.prev_hash, {CANONICAL_ROW})"


def pin_canonical_output(conn: Connection) -> None:
    """Print the canonical row as the trigger did (it pins these too), so every reader hashes the
    same bytes: UTC timestamps and shortest-exact floats, for this transaction only."""
    conn.execute(text("SELECT set_config('timezone', 'UTC', true), set_config('extra_float_digits', '1', true)"))


@dataclass(frozen=True)
class ChainBreak:
    table: str
    seq: int
    row_id: str
    reason: str

    def __str__(self) -> str:
        return f"{self.table} row {self.row_id} (seq {self.seq}): {self.reason}"


@dataclass(frozen=True)
class ChainReport:
    table: str
    rows: int
    head_seq: int | None
    broken: ChainBreak | None

    @property
    def ok(self) -> bool:
        return self.broken is None


def _last_cut(conn: Connection, table: str, before_seq: int) -> tuple[int, str] | None:
    row = conn.execute(text(
        "SELECT last_seq, last_hash FROM chain_cuts WHERE table_name = :t AND last_seq < :s "
        "ORDER BY last_seq DESC LIMIT 1"), {"t": table, "s": before_seq}).first()
    return (row.last_seq, row.last_hash) if row else None


def verify_chain(owner: Engine, table: str = "traces") -> ChainReport:
    """Walk the chain in seq order; stop at the first row whose hash or link is wrong."""
    if table not in CHAINED_TABLES:
        raise ValueError(f"{table!r} carries no hash chain")
    rows = 0
    expected_seq: int | None = None
    expected_prev: str | None = None
    with owner.begin() as conn:
        pin_canonical_output(conn)
        result = conn.execution_options(yield_per=1000).execute(text(
            f"SELECT t.seq, t.id::text AS id, t.prev_hash, t.row_hash, {_RECOMPUTE} AS recomputed "
            f"FROM {table} t ORDER BY t.seq"))
        for r in result:
            if expected_seq is None:  # the first row links to genesis or to the purge that cut before it
                cut = _last_cut(conn, table, r.seq)
                expected_seq, expected_prev = (cut[0] + 1, cut[1]) if cut else (1, GENESIS)
            broken = None
            if r.recomputed != r.row_hash:
                broken = "its content no longer matches its hash (the row was edited after it was written)"
            elif r.seq != expected_seq:
                broken = f"rows {expected_seq}..{r.seq - 1} are missing (deleted outside a recorded purge)"
            elif r.prev_hash != expected_prev:
                broken = "it does not link to the row before it (that row was edited or replaced)"
            if broken:
                result.close()
                return ChainReport(table, rows, r.seq, ChainBreak(table, r.seq, r.id, broken))
            rows += 1
            expected_seq, expected_prev = r.seq + 1, r.row_hash
    return ChainReport(table, rows, None if expected_seq is None else expected_seq - 1, None)


@dataclass(frozen=True)
class RowProof:
    seq: int
    row_hash: str
    content_ok: bool
    link_ok: bool

    @property
    def ok(self) -> bool:
        return self.content_ok and self.link_ok

    @property
    def text(self) -> str:
        if self.ok:
            return f"verifies: content matches its hash and links to the row before it (chain row {self.seq})"
        if not self.content_ok:
            return f"DOES NOT VERIFY: this answer was changed after it was recorded (chain row {self.seq})"
        return f"DOES NOT VERIFY: the row before it in the chain was changed or removed (chain row {self.seq})"


def row_proof(conn: Connection, trace_id) -> RowProof | None:
    """One trace's own check: its hash recomputes, and it links to its predecessor (or to a
    recorded purge cut). Runs in the caller's transaction, so RLS decides what it may see."""
    pin_canonical_output(conn)
    row = conn.execute(text(
        f"SELECT t.seq, t.prev_hash, t.row_hash, {_RECOMPUTE} AS recomputed FROM traces t WHERE t.id = :id"),
        {"id": trace_id}).first()
    if row is None:
        return None
    prev = conn.execute(text("SELECT row_hash FROM traces WHERE seq = :s"), {"s": row.seq - 1}).scalar()
    if prev is None:
        cut = _last_cut(conn, "traces", row.seq)
        prev = cut[1] if cut and cut[0] == row.seq - 1 else (GENESIS if row.seq == 1 else None)
    return RowProof(row.seq, row.row_hash, row.recomputed == row.row_hash, prev == row.prev_hash)


@dataclass(frozen=True)
class PurgeResult:
    rows_removed: int
    cut_seq: int | None
    cut_hash: str | None


def purge_chained(owner: Engine, *, cutoff: datetime, actor: str) -> PurgeResult:
    """Delete the oldest traces written before `cutoff`, as one prefix of the chain.

    Only a prefix: a row is removed only if every row before it in the chain is removed too, so
    what stays is one unbroken run starting at the recorded cut. The cut and an audit entry
    (who, when, cut-off, rows removed) are written in the same transaction as the delete.
    """
    with owner.begin() as conn:
        # Same lock as the insert trigger: no trace can be appended while the head is decided.
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('policydesk_chain_traces'))"))
        keep_from = conn.execute(text("SELECT min(seq) FROM traces WHERE created_at >= :c"), {"c": cutoff}).scalar()
        if keep_from is None:
            keep_from = (conn.execute(text("SELECT max(seq) FROM traces")).scalar() or 0) + 1
        last = conn.execute(text("SELECT seq, row_hash FROM traces WHERE seq < :k ORDER BY seq DESC LIMIT 1"),
                            {"k": keep_from}).first()
        removed = 0
        if last is not None:
            removed = conn.execute(text("DELETE FROM traces WHERE seq < :k"), {"k": keep_from}).rowcount
            conn.execute(text(
                "INSERT INTO chain_cuts (table_name, actor, cutoff, last_seq, last_hash, rows_removed) "
                "VALUES ('traces', :a, :c, :s, :h, :n)"),
                {"a": actor, "c": cutoff, "s": last.seq, "h": last.row_hash, "n": removed})
        insert_audit(conn, actor=actor, action="purge", target="traces", details={
            "cutoff": cutoff.isoformat(), "rows_removed": removed, "cut_seq": last.seq if last else None,
            "cut_hash": last.row_hash if last else None})
    return PurgeResult(removed, last.seq if last else None, last.row_hash if last else None)
