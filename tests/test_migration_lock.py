"""Start-up migrations take turns: processes started at once against one fresh database (several hosts
starting `serve`, or a CLI command beside them) each run the migrations; one migrates, the others wait
for it (an advisory lock, policydesk/storage/migrate.py), then find the schema at head and change
nothing. Real processes through the console script, on the test session's Postgres."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text

from policydesk.storage.engine import create_database, owner_url
from policydesk.storage.migrate import MIGRATIONS

CLI = str(Path(sys.executable).parent / "policydesk")
REPO = Path(__file__).resolve().parent.parent
STARTERS = 3


def _head() -> str:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(cfg).get_current_head()


# What `serve` (each worker's lifespan), `ask` and every other command run first: open the configured
# database with migrations applied (policydesk.ops.runtime.open_migrated). Each child imports everything,
# says so, then waits until the test releases all of them at once (a line on stdin, written to every
# child in turn once all are ready), so the starts collide as they do when hosts start together.
_CHILD = """
import sys
from policydesk.config import get_settings
from policydesk.ops.runtime import open_migrated
print("ready", flush=True)
sys.stdin.readline()
open_migrated(get_settings()).dispose()
print("migrated", flush=True)
"""


def test_processes_started_at_once_on_a_fresh_database_migrate_it_once(settings, tmp_path):
    name = f"policydesk_migrate_race_{uuid.uuid4().hex[:8]}"
    create_database(settings, name)
    url = owner_url(settings.database_url, settings.DATA_DIR, name)
    env = dict(os.environ, DATABASE_URL=url.render_as_string(hide_password=False),
               POLICYDESK_DATA_DIR=str(tmp_path / "data"),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    starters = [subprocess.Popen([sys.executable, "-c", _CHILD], env=env, cwd=REPO, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(STARTERS)]
    for p in starters:  # every child has imported PolicyDesk, on a loaded machine too
        assert p.stdout.readline().strip() == "ready", p.communicate(timeout=300)
    for p in starters:  # then all go at once
        p.stdin.write("go\n")
        p.stdin.flush()
    outcomes = [(p.wait(300), *p.communicate()) for p in starters]
    for code, out, err in outcomes:
        assert code == 0 and "migrated" in out, f"a start-up failed while another migrated:\n{err[-3000:]}"
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            revisions = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        assert revisions == [_head()]
    finally:
        engine.dispose()
    # The same start through the console script, now that the database is at head: nothing to do.
    done = subprocess.run([CLI, "users", "list"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_second_upgrade_waits_for_the_first_and_then_changes_nothing(settings):
    """The lock itself: while one transaction holds it, another upgrade blocks; once it commits,
    the waiting upgrade finds head and returns."""
    import threading

    from policydesk.storage.migrate import MIGRATION_LOCK, upgrade

    name = f"policydesk_migrate_wait_{uuid.uuid4().hex[:8]}"
    create_database(settings, name)
    owner = create_engine(owner_url(settings.database_url, settings.DATA_DIR, name))
    password = settings.APP_DB_PASSWORD.get_secret_value()
    try:
        upgrade(owner, settings.APP_DB_ROLE, password)
        done = threading.Event()
        with owner.connect() as holder:
            holder.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK})
            holder.commit()
            waiter = threading.Thread(target=lambda: (upgrade(owner, settings.APP_DB_ROLE, password), done.set()))
            waiter.start()
            time.sleep(2)
            assert not done.is_set(), "an upgrade ran while another process held the migration lock"
            holder.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK})
            holder.commit()
            waiter.join(60)
        assert done.is_set()
        with owner.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all() == [_head()]
    finally:
        owner.dispose()
