"""Helpers for tests that need a real HTTP server and its log lines, and for reading what was stored.

`served(app)` runs the app under uvicorn on a loopback port in this process (as tests/test_browser.py
does, so the session's pipeline and model are reused) with the log filters `policydesk serve`
installs (policydesk/ops/logs.py: the access line rewritten, request and trace ids added), and captures
every line as the JSON `serve` would write.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pythonjsonlogger.json import JsonFormatter
from sqlalchemy import text

from policydesk.ops.logs import AccessFilter, ContextFilter
from tests.web_helpers import free_port

_LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.access")
_CLIENT_LOGGERS = ("httpx", "httpcore")


@dataclass
class Served:
    url: str
    lines: list[str] = field(default_factory=list)  # every log line, formatted as serve writes it
    records: list[logging.LogRecord] = field(default_factory=list)

    def access_lines(self) -> list[logging.LogRecord]:
        return [r for r in self.records if r.name == "uvicorn.access"]


class _Capture(logging.Handler):
    def __init__(self, served: Served) -> None:
        super().__init__(logging.INFO)
        self.served = served
        self.addFilter(ContextFilter())
        self.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s",
                                        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"}))

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(_CLIENT_LOGGERS):
            return  # the test's own HTTP client, not the server
        self.served.records.append(record)
        self.served.lines.append(self.format(record))


@contextmanager
def served(app) -> Iterator[Served]:
    import uvicorn

    port = free_port()
    result = Served(f"http://127.0.0.1:{port}")
    handler = _Capture(result)
    access_filter = AccessFilter()
    saved = {name: (logging.getLogger(name).level, logging.getLogger(name).propagate) for name in _LOGGERS}
    logging.getLogger("").addHandler(handler)
    logging.getLogger("uvicorn.access").addFilter(access_filter)
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)  # serve's default POLICYDESK_LOG_LEVEL
        if name:
            logging.getLogger(name).propagate = True
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=True))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        yield result
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        logging.getLogger("").removeHandler(handler)
        logging.getLogger("uvicorn.access").removeFilter(access_filter)
        for name, (level, propagate) in saved.items():
            logging.getLogger(name).setLevel(level)
            logging.getLogger(name).propagate = propagate


# -- what the database holds --------------------------------------------------------------------

def marks(db) -> dict[str, int]:
    """Where each record table ends now, to read only what a test adds after it."""
    with db.owner.connect() as conn:
        return {table: conn.execute(text(f"SELECT coalesce(max({key}), 0) FROM {table}")).scalar_one()
                for table, key in (("traces", "seq"), ("audit_log", "seq"), ("feedback", "id"))}


def rows_since(db, since: dict[str, int], table: str) -> list[dict]:
    key = {"traces": "seq", "audit_log": "seq", "feedback": "id"}[table]
    with db.owner.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(
            text(f"SELECT * FROM {table} WHERE {key} > :k ORDER BY {key}"), {"k": since[table]})]


def stored_text_since(db, since: dict[str, int]) -> dict[str, list[str]]:
    """Every column of every row added since `since`, each row as one JSON text, per table."""
    out = {}
    with db.owner.connect() as conn:
        for table, key in (("traces", "seq"), ("audit_log", "seq"), ("feedback", "id")):
            out[table] = conn.execute(text(f"SELECT row_to_json(t)::text FROM {table} t WHERE {key} > :k"),
                                      {"k": since[table]}).scalars().all()
    return out
