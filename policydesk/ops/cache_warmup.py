"""The start-up warm-up of Postgres's cache as `serve` runs it: in a background thread, so the
model loads meanwhile, with what /readyz reports of it (storage/prewarm.py does the reading)."""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone

from sqlalchemy.engine import Engine

from policydesk.ops import metrics
from policydesk.storage.prewarm import WarmUp, warm_dense_index

log = logging.getLogger(__name__)


class CacheWarmer:
    """A warm-up run in a background thread, and what readiness reports of it."""

    def __init__(self, owner: Engine, clock=lambda: datetime.now(timezone.utc)):
        self._owner = owner
        self._clock = clock
        self.started = clock()
        self.result: WarmUp | None = None
        self._thread = threading.Thread(target=self._run, name="policydesk-prewarm", daemon=True)

    def start(self) -> "CacheWarmer":
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> WarmUp | None:
        self._thread.join(timeout)
        return self.result

    def _run(self) -> None:
        try:
            result = warm_dense_index(self._owner)
        except Exception as exc:  # noqa: BLE001 - reported on /readyz, in the log and the metric
            log.error("warming the dense index failed; questions read it from disk until it is cached", exc_info=exc)
            result = WarmUp("failed", 0.0, exc.__class__.__name__)
        else:
            log.info("dense index warm-up: %s in %.1f s%s", result.outcome, result.seconds,
                     f" ({result.detail})" if result.detail else "")
        metrics.CACHE_WARMUPS.labels(outcome=result.outcome).inc()
        self.result = result

    @property
    def status(self) -> str:
        """"ok" once the warm-up has ended (a failed one too: serving slower beats not serving),
        else how long it has been reading."""
        if self.result is None:
            return f"warming the dense index into Postgres's cache ({(self._clock() - self.started).total_seconds():.0f} s so far)"
        return "ok"

    @property
    def note(self) -> str | None:
        if self.result is not None and self.result.outcome in ("failed", "skipped"):
            return f"{self.result.outcome}: {self.result.detail}"
        return None
