"""A sync queue in the web process: change notices are synced one at a time on a background
thread, so the requests that sent them (and every other request) are answered at once.

Notices queued while a sync runs are synced after it, in order; each sync is `sync_directory`
with the named sources, so it has the same one-transaction-per-source guarantee as the command.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from pathlib import Path

from policydesk.ingest.sync import SyncReport, sync_directory

log = logging.getLogger("policydesk.sync")


@dataclass(frozen=True)
class Notice:
    paths: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()


class SyncWorker:
    def __init__(self, db, directory: Path, embed_model, settings) -> None:
        self._args = (db, Path(directory), embed_model, settings)
        self._queue: queue.Queue[Notice] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.results: list[SyncReport | Exception] = []  # newest last, for status and tests

    def submit(self, notice: Notice) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._drain, name="policydesk-sync", daemon=True)
                self._thread.start()
            self._queue.put(notice)

    def wait_idle(self, timeout: float) -> bool:
        """True once every queued notice has been synced (or failed), False after `timeout` seconds."""
        done = threading.Event()

        def _join() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=_join, daemon=True).start()
        return done.wait(timeout)

    def _drain(self) -> None:
        db, directory, embed_model, settings = self._args
        while True:
            notice = self._queue.get()
            try:
                result: SyncReport | Exception = sync_directory(db, directory, embed_model, settings,
                                                                paths=notice.paths, ids=notice.ids)
                log.info("change notice synced: %s", result.summary())
            except Exception as exc:  # noqa: BLE001 - reported, and the next notice still syncs
                log.error("change notice sync failed: %s", exc)
                result = exc
            finally:
                self._queue.task_done()
            self.results = [*self.results[-19:], result]
