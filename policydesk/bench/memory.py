"""Resident memory of the database server and of this process, for the bench's scale figures.

The server's is the postmaster and its children (backends, parallel workers), found from a
backend's process id, so it is known only where the server runs on this machine (the embedded
one, or a local DATABASE_URL); elsewhere it is None. Each process's private pages are summed and
the shared ones (shared_buffers, mapped by all of them) counted once.
"""

from __future__ import annotations

import resource
import threading

import psutil
from sqlalchemy import text


def process_peak_rss_bytes() -> int:
    """This process's peak resident set (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _server(db) -> psutil.Process | None:
    with db.owner.connect() as conn:
        pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    try:
        return psutil.Process(pid).parent()
    except psutil.Error:
        return None


def server_rss_bytes(server: psutil.Process) -> int:
    private, shared = 0, 0
    for p in [server, *server.children(recursive=True)]:
        try:
            info = p.memory_info()
        except psutil.Error:
            continue
        private += info.rss - info.shared
        shared = max(shared, info.shared)
    return private + shared


class PeakRSS:
    """The server's peak resident memory while the block runs, sampled every `interval` seconds."""

    def __init__(self, db, interval: float = 1.0) -> None:
        self._server = _server(db)
        self._interval = interval
        self._stop = threading.Event()
        self.peak: int | None = None

    def _sample(self) -> None:
        while True:
            try:
                self.peak = max(self.peak or 0, server_rss_bytes(self._server))
            except psutil.Error:
                pass
            if self._stop.wait(self._interval):
                return

    def __enter__(self) -> "PeakRSS":
        if self._server is not None:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._server is not None:
            self._thread.join()
