"""`policydesk stack`: Postgres (the embedded pgserver cluster, pgvector included), PgBouncer in
transaction mode in front of it, the migrations run once through the pooler, and `serve` pointed
at the pooler, from one command; Ctrl-C or SIGTERM stops all three.

The shape is production's (docs/deploy.md): the app reaches Postgres only through PgBouncer, with
psycopg's prepared statements off. PgBouncer is Debian's `pgbouncer` (found on PATH or in
/usr/sbin); it listens on loopback by default and asks every client for a password (SCRAM): the
owner's is new at each start (unless given) and written, with the URL, to DATA_DIR/stack/env (mode 600) for
admin commands (`users add`, `ingest`, `traces verify`).
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Optional
from urllib.parse import parse_qs, quote, urlparse

import typer
from pydantic import SecretStr

from policydesk.commands.common import _fail
from policydesk.config import Settings, get_settings

DATABASE = "policydesk"
OWNER = "postgres"  # the embedded cluster's own superuser: it runs the migrations and admin commands


@dataclass
class Pooler:
    proc: subprocess.Popen
    directory: Path
    port: int
    owner_password: str

    def url(self, host: str = "127.0.0.1") -> str:
        return f"postgresql://{OWNER}:{quote(self.owner_password, safe='')}@{host}:{self.port}/{DATABASE}"

    def log(self) -> str:
        path = self.directory / "pgbouncer.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: PgBouncer closes its connections and exits
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def pgbouncer_binary() -> str | None:
    found = shutil.which("pgbouncer")
    return found or ("/usr/sbin/pgbouncer" if os.access("/usr/sbin/pgbouncer", os.X_OK) else None)


def pgbouncer_ini(*, socket_dir: str, directory: Path, listen: str, port: int, pool_size: int,
                  max_client_conn: int) -> str:
    """Transaction pooling for the one database. Every setting PolicyDesk makes is per transaction,
    so no reset query is needed between clients; psycopg sends extra_float_digits at connect. The
    owner may open PgBouncer's console (database `pgbouncer`: SHOW POOLS, SHOW CLIENTS)."""
    return (f"[databases]\n{DATABASE} = host={socket_dir} port=5432 dbname={DATABASE}\n\n"
            f"[pgbouncer]\nlisten_addr = {listen}\nlisten_port = {port}\nunix_socket_dir =\n"
            f"auth_type = scram-sha-256\nauth_file = {directory / 'userlist.txt'}\n"
            f"pool_mode = transaction\ndefault_pool_size = {pool_size}\nmax_client_conn = {max_client_conn}\n"
            f"logfile = {directory / 'pgbouncer.log'}\npidfile = {directory / 'pgbouncer.pid'}\n"
            f"admin_users = {OWNER}\nserver_reset_query =\nignore_startup_parameters = extra_float_digits\n")


def start_pooler(server, directory: Path, settings: Settings, *, listen: str, port: int, pool_size: int,
                 max_client_conn: int, owner_password: str | None = None, seconds: float = 30) -> Pooler:
    binary = pgbouncer_binary()
    if binary is None:
        _fail("PgBouncer is not installed: install Debian's `pgbouncer` (apt-get install pgbouncer)")
    socket_dir = parse_qs(urlparse(server.get_uri()).query)["host"][0]
    directory.mkdir(parents=True, exist_ok=True)
    owner_password = owner_password or secrets.token_urlsafe(24)
    if '"' in owner_password:
        _fail("the owner password may not contain a double quote (PgBouncer's auth file quotes it)")
    userlist = directory / "userlist.txt"
    userlist.write_text(f'"{OWNER}" "{owner_password}"\n'
                        f'"{settings.APP_DB_ROLE}" "{settings.APP_DB_PASSWORD.get_secret_value()}"\n')
    userlist.chmod(0o600)
    (directory / "pgbouncer.ini").write_text(pgbouncer_ini(
        socket_dir=socket_dir, directory=directory, listen=listen, port=port, pool_size=pool_size,
        max_client_conn=max_client_conn))
    (directory / "pgbouncer.log").unlink(missing_ok=True)
    command = [binary]
    if os.geteuid() == 0:  # PgBouncer refuses root; run it as the user the cluster runs as
        ids = pwd.getpwnam(server.system_user or "postgres")
        for path in (directory, *directory.iterdir()):
            os.chown(path, ids.pw_uid, ids.pw_gid)
        command += ["-u", ids.pw_name]
    proc = subprocess.Popen([*command, str(directory / "pgbouncer.ini")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    pooler = Pooler(proc, directory, port, owner_password)
    _wait_for_pooler(pooler, seconds)
    return pooler


def _wait_for_pooler(pooler: Pooler, seconds: float) -> None:
    import psycopg

    deadline = time.monotonic() + seconds
    while True:
        try:
            with psycopg.connect(pooler.url(), connect_timeout=2, prepare_threshold=None) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError as exc:
            if pooler.proc.poll() is not None or time.monotonic() > deadline:
                pooler.stop()
                err = pooler.proc.stderr.read().decode(errors="replace") if pooler.proc.stderr else ""
                _fail(f"PgBouncer did not start on port {pooler.port}: {exc}\n{err}{pooler.log()}", code=3)
            time.sleep(0.2)


def _write_env(directory: Path, pooler: Pooler, listen: str) -> Path:
    """What an admin command needs to reach the stack's database as its owner."""
    path = directory / "env"
    host = "127.0.0.1" if listen in ("0.0.0.0", "*", "") else listen
    path.write_text(f"DATABASE_URL={pooler.url(host)}\nPOLICYDESK_DB_PREPARED_STATEMENTS=false\n")
    path.chmod(0o600)
    return path


class _Stop(Exception):
    pass


def _raise_stop(signum, frame) -> None:
    raise _Stop()


def stack(
    host: Annotated[str, typer.Option(help="Address `serve` listens on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port `serve` listens on.")] = 8000,
    pooler_host: Annotated[str, typer.Option("--pooler-host", help="Address PgBouncer listens on.")] = "127.0.0.1",
    pooler_port: Annotated[int, typer.Option("--pooler-port", help="Port PgBouncer listens on.")] = 6432,
    workers: Annotated[int, typer.Option("--workers", min=1, envvar="POLICYDESK_SERVE_WORKERS",
                                         help="`serve` worker processes.")] = 1,
    pool_size: Annotated[int, typer.Option(
        "--pool-size", min=1, help="PgBouncer's default_pool_size: server connections per (database, login).")] = 10,
    max_client_conn: Annotated[int, typer.Option(
        "--max-client-conn", min=1, help="PgBouncer's max_client_conn: client connections it accepts.")] = 200,
    forwarded_allow_ips: Annotated[Optional[str], typer.Option(
        "--forwarded-allow-ips", envvar="POLICYDESK_FORWARDED_ALLOW_IPS",
        help="Passed to `serve`: the reverse proxy's addresses.")] = None,
    owner_password: Annotated[Optional[str], typer.Option(
        "--owner-password", envvar="POLICYDESK_STACK_OWNER_PASSWORD", show_default=False,
        help="The owner login's password at PgBouncer; default a new random one per start, written "
             "to DATA_DIR/stack/env. Set it when another container must log in (deploy/policydesk-pod.yaml).")] = None,
    serve_app: Annotated[bool, typer.Option("--serve/--no-serve", help="--no-serve: Postgres and PgBouncer only.")] = True,
) -> None:
    """Postgres (embedded, pgvector), PgBouncer (transaction mode), migrations once, and `serve`
    through the pooler, from one command. Ctrl-C or SIGTERM stops all of it."""
    from policydesk.ops.logs import configure_logging
    from policydesk.ops.runtime import open_migrated
    from policydesk.storage.engine import create_database, embedded_server, stop_embedded_server

    settings = get_settings()
    if settings.database_url:
        _fail("`stack` starts its own Postgres under POLICYDESK_DATA_DIR: unset DATABASE_URL "
              "(with a Postgres of your own, put PgBouncer in front of it and run `serve`; docs/deploy.md)")
    configure_logging(settings.LOG_LEVEL)
    data_dir = Path(settings.DATA_DIR).expanduser().resolve()
    directory = data_dir / "stack"
    signal.signal(signal.SIGTERM, _raise_stop)
    server = pooler = serve_proc = None
    try:
        server = embedded_server(data_dir, settings.EMBEDDED_SHARED_BUFFERS)
        create_database(settings, DATABASE)
        pooler = start_pooler(server, directory, settings, listen=pooler_host, port=pooler_port,
                              pool_size=pool_size, max_client_conn=max_client_conn, owner_password=owner_password)
        env_file = _write_env(directory, pooler, pooler_host)
        pooled = settings.model_copy(update={"DATABASE_URL": SecretStr(pooler.url()), "DB_PREPARED_STATEMENTS": False})
        open_migrated(pooled).dispose()  # once, here, before any worker starts
        typer.echo(f"database ready: Postgres with pgvector behind PgBouncer (transaction mode) on "
                   f"{pooler_host}:{pooler_port}; admin commands: set -a; . {env_file}; set +a", err=True)
        if not serve_app:
            while True:
                time.sleep(3600)
        env = dict(os.environ, DATABASE_URL=pooler.url(), POLICYDESK_DB_PREPARED_STATEMENTS="false",
                   POLICYDESK_DATA_DIR=str(data_dir))
        command = [sys.executable, "-m", "policydesk.cli", "serve", "--host", host, "--port", str(port),
                   "--workers", str(workers)]
        if forwarded_allow_ips:
            command += ["--forwarded-allow-ips", forwarded_allow_ips]
        serve_proc = subprocess.Popen(command, env=env)
        typer.echo(f"PolicyDesk on http://{host}:{port} (readiness: /readyz)", err=True)
        code = serve_proc.wait()
        if code:
            _fail(f"serve exited with status {code}", code=code)
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the clean-up short
        if serve_proc is not None and serve_proc.poll() is None:
            serve_proc.send_signal(signal.SIGTERM)
            try:
                serve_proc.wait(60)
            except subprocess.TimeoutExpired:
                serve_proc.kill()
                serve_proc.wait(10)
        if pooler is not None:
            pooler.stop()
        stop_embedded_server(data_dir)  # this process's handle, the only one: the server stops with it
        if server is not None and (data_dir / "pg" / "postmaster.pid").exists():
            server.stop()  # a handle some other process left behind must not keep it running
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
