"""Readiness: whether this process may be sent traffic. Each check names what failed, so a load
balancer's 503 tells the operator where to look; liveness (/healthz) asks none of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from sqlalchemy import text

OK = "ok"


@dataclass
class Readiness:
    checks: dict[str, str]  # check -> "ok" or what is wrong
    notes: dict[str, str] = field(default_factory=dict)  # what an operator should know that does not hold traffic

    @property
    def ready(self) -> bool:
        return all(v == OK for v in self.checks.values())

    @property
    def failing(self) -> list[str]:
        return [k for k, v in self.checks.items() if v != OK]

    def to_json(self) -> dict:
        return {"status": "ready" if self.ready else "not_ready", "failing": self.failing, "checks": self.checks,
                "notes": self.notes}


@lru_cache(maxsize=1)
def head_revision() -> str:
    """The newest migration this code ships."""
    from alembic.script import ScriptDirectory

    from policydesk.storage.migrate import alembic_config

    return ScriptDirectory.from_config(alembic_config(None, "", "")).get_current_head()


def _database(db) -> tuple[str, str]:
    """(database, migrations): reachable as the application login; the schema at this code's head."""
    from policydesk.storage.migrate import current_revision

    try:
        with db.app.connect() as conn:
            conn.execute(text("SELECT 1"))
        current = current_revision(db.owner)
    except Exception as exc:  # noqa: BLE001 - any failure to reach it is the answer
        return f"unreachable ({exc.__class__.__name__})", "not checked: the database is unreachable"
    head = head_revision()
    return OK, OK if current == head else f"at {current or 'no revision'}, this code expects {head}"


def _topic_terms(db) -> str:
    """Every chunk change is counted in the topic gate's terms: one that is not (a bulk load
    since start-up) does not gate its subject yet. A restart or the next ingest counts it."""
    try:
        with db.app.connect() as conn:
            pending = conn.execute(text("SELECT policydesk_topic_terms_pending()")).scalar_one()
    except Exception as exc:  # noqa: BLE001
        return f"not checked ({exc.__class__.__name__})"
    return OK if not pending else f"{pending} chunk changes not counted yet (restart, or ingest, to count them)"


def _pipeline(pipeline) -> tuple[str, str]:
    """(embedding_model, refusal_gate): the model loaded, the gate's intent classifier fitted."""
    if pipeline is None:
        return "not loaded yet", "not built yet"
    model = OK if getattr(pipeline, "embed_model", None) is not None else "not loaded"
    intent = getattr(getattr(pipeline, "gate", None), "intent", None)
    gate = OK if intent is not None and intent.fitted else "intent classifier not fitted (rules only)"
    return model, gate


def _replica(replica) -> str:
    """The read replica answers as the application login (retrieval cannot run without it)."""
    try:
        with replica.app.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # noqa: BLE001
        return f"unreachable ({exc.__class__.__name__})"
    return OK


def readiness(db, pipeline, warmer=None) -> Readiness:
    """`warmer`: the start-up warm-up of Postgres's cache (cache_warmup.CacheWarmer), if one runs;
    traffic waits for it, and one that failed or was skipped is noted, not held against readiness."""
    database, migrations = _database(db)
    model, gate = _pipeline(pipeline)
    checks = {"database": database, "migrations": migrations}
    if database == OK and migrations == OK:
        checks["topic_terms"] = _topic_terms(db)
    if getattr(db, "replica", None) is not None:
        checks["replica"] = _replica(db.replica)
    checks |= {"embedding_model": model, "refusal_gate": gate}
    if warmer is None:
        return Readiness(checks)
    note = warmer.note
    return Readiness(checks | {"dense_cache": warmer.status}, {"dense_cache": note} if note else {})
