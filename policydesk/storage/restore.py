"""Restore of a PolicyDesk backup (policydesk/storage/backup.py) into an empty database.

Restore goes into an empty database, in one transaction: `pg_restore` writes the archive as SQL and
`psql` runs it after our BEGIN; COMMIT is sent only when `pg_restore` read the whole archive and
every statement succeeded. A damaged or truncated archive, a missing role or any failing statement
leaves the target as it was. `replace=True` drops what the target holds inside that same
transaction, so a failed restore leaves that in place too.

Roles are cluster-wide, not in the dump: the application login is created when the target server
lacks it, with the attributes migration 0001 gives it (LOGIN, NOSUPERUSER, NOBYPASSRLS, NOCREATEDB,
NOCREATEROLE), and afterwards checked as a start checks it (`security.database_problems`).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import DBAPIError

from policydesk.storage.backup import (BackupError, Contents, Tools, last_lines, libpq_target, postgres_tools,
                                       read_contents, read_manifest, server_major, what_it_holds)
from policydesk.storage.chain import CHAINED_TABLES, verify_chain
from policydesk.storage.security import database_problems

_ROLE_SHAPE = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_COPY_CHUNK = 1 << 20
_TABLE_ENTRY = re.compile(r"^\d+; \d+ \d+ TABLE public \S+ (\S+)$", re.MULTILINE)  # a `pg_restore --list` line


@dataclass
class RestoreResult:
    database: str
    contents: Contents
    chains: list[str] = field(default_factory=list)  # one line per chain: rows that verify
    problems: list[str] = field(default_factory=list)  # anything that does not hold after the restore

    @property
    def ok(self) -> bool:
        return not self.problems


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
    listing = _check_archive(tools, file, restorer)
    if held and not replace:
        raise BackupError(f"database {database} is not empty (it holds {'; '.join(held)}); nothing was changed. "
                          "Restore into a new, empty database, or pass --replace to drop what it holds and "
                          "restore in one transaction (a restore that fails then leaves it as it is)")
    _ensure_app_role(owner, app_role, app_password)
    conninfo, env = libpq_target(owner.url)
    _run_in_one_transaction(tools, file, _SKIPPED_ENTRY.sub(r";\1", listing), conninfo, env,
                            preamble=_REPLACE_SQL if held else "")
    with owner.connect() as conn:
        contents = read_contents(conn)
    result = RestoreResult(database, contents)
    for table in CHAINED_TABLES:
        report = verify_chain(owner, table)
        if report.ok:
            result.chains.append(f"{table}: {report.rows} rows verify")
        else:
            result.problems.append(f"{table}: chain BROKEN at {report.broken}")
    try:
        result.problems += database_problems(app)
    except DBAPIError as exc:  # restored, but the application login cannot connect as configured
        result.problems.append(f"the application login could not connect to the restored database "
                               f"({str(exc.orig or exc).strip().splitlines()[0]}): check POLICYDESK_APP_DB_PASSWORD "
                               "against the login's password on this server")
    if expected is not None:
        result.problems += [f"differs from the backup's manifest: {d}" for d in expected.differences(contents)]
    return result


# Everything the target holds of its own, dropped inside the restore's own transaction: other
# schemas, then public's relations and functions (by name, each IF EXISTS, since a CASCADE may have
# taken it already). Extensions stay: the owner login of a managed service may not drop `vector`,
# and the archive's CREATE EXTENSION IF NOT EXISTS finds it.
_REPLACE_SQL = r"""
DO $$ DECLARE statement text; BEGIN
  FOR statement IN SELECT unnest(coalesce(array_agg(format('DROP SCHEMA IF EXISTS %I CASCADE', n.nspname)), '{}'))
    FROM pg_namespace n WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'public')
      AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
      AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_namespace'::regclass AND d.objid = n.oid
                      AND d.deptype = 'e')
  LOOP EXECUTE statement; END LOOP;
  FOR statement IN SELECT unnest(coalesce(array_agg(format('DROP %s IF EXISTS public.%I CASCADE',
        CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE'
                       WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, c.relname)), '{}'))
    FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
      AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                      AND d.deptype IN ('e', 'a', 'i'))  -- a column's own sequence goes with its table
  LOOP EXECUTE statement; END LOOP;
  FOR statement IN SELECT unnest(coalesce(array_agg(format('DROP %s IF EXISTS %s CASCADE',
        CASE p.prokind WHEN 'p' THEN 'PROCEDURE' WHEN 'a' THEN 'AGGREGATE' ELSE 'FUNCTION' END,
        p.oid::regprocedure::text)), '{}'))
    FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
      AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                      AND d.deptype = 'e')
  LOOP EXECUTE statement; END LOOP;
END $$;
"""
# A `pg_restore --list` entry left out of every restore: the extension's comment, which only the
# extension's owner may set (on a managed service, the administrator) and CREATE EXTENSION sets.
_SKIPPED_ENTRY = re.compile(r"^(\d+; \d+ \d+ COMMENT - EXTENSION \S+.*)$", re.MULTILINE)


def _check_archive(tools: Tools, file: Path, restorer: str) -> str:
    """Read the archive's table of contents before anything is touched: not a custom-format dump
    (a plain SQL file, another program's file) is refused here, and so is a restore by another
    login than the one that owned the tables: each table's owner policy names that login (`TO
    CURRENT_USER` when migrated), so under another owner forced row-level security would hide
    every row from ingest."""
    listed = subprocess.run([str(tools.pg_restore), "--list", str(file)], capture_output=True, text=True)
    if listed.returncode != 0:
        raise BackupError(f"{file} is not a readable pg_dump archive (custom format), nothing was changed: "
                          f"{last_lines(listed.stderr)}")
    owners = {m.group(1) for m in _TABLE_ENTRY.finditer(listed.stdout)}
    if owners and owners != {restorer}:
        raise BackupError(f"the backup's tables belong to the login {', '.join(sorted(owners))} and its row-level "
                          f"security policies name it; restore as that login (the user in DATABASE_URL), not "
                          f"{restorer}. Nothing was changed")
    return listed.stdout


def _ensure_app_role(owner: Engine, role: str, password: str) -> None:
    """The application login, as migration 0001 creates it, when this server lacks it (roles live
    in the cluster, not in the dump); an existing one is left as it is and checked afterwards."""
    quoted = password.replace("'", "''")
    with owner.begin() as conn:
        conn.exec_driver_sql(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN "
            f"CREATE ROLE {role} LOGIN PASSWORD '{quoted}' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE; "
            f"END IF; END $$")


def _run_in_one_transaction(tools: Tools, file: Path, listing: str, conninfo: str, env: dict, *,
                            preamble: str) -> None:
    """pg_restore's SQL through psql inside BEGIN ... COMMIT; COMMIT only after both succeeded.
    Objects are owned by the restoring login (the owner login of this installation), as if its
    migrations had made them; grants are kept. `listing` is the archive's table of contents as
    restored (entries left out begin with ';')."""
    with tempfile.TemporaryFile("w+") as restore_err, tempfile.TemporaryFile("w+") as psql_err, \
            tempfile.NamedTemporaryFile("w", suffix=".list") as entries:
        entries.write(listing)
        entries.flush()
        psql = subprocess.Popen(
            [str(tools.psql), "-X", "-q", "--no-password", "-v", "ON_ERROR_STOP=1", f"--dbname={conninfo}"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=psql_err, env=env)
        dump = subprocess.Popen([str(tools.pg_restore), "--no-owner", f"--use-list={entries.name}", "--file=-",
                                 str(file)],
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
            raise BackupError(f"the archive could not be read to its end ({last_lines(restore_err.read())}); "
                              "the restore was rolled back, nothing was changed")
        if psql_code != 0 or not committed:
            raise BackupError(f"a statement of the restore failed ({last_lines(psql_err.read())}); "
                              "the restore was rolled back, nothing was changed")


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
