"""Structured logs: one JSON object per line, each with time, level, logger and message, plus the
request id and trace id of the request it was written in.

`serve` hands `log_config()` to uvicorn, which applies it in every worker process, so the app's own
lines and uvicorn's error and access lines share one format. A request's ids live in a context
variable the web middleware sets; the pipeline binds the trace id once its trace exists, and the
access line (written when the response starts, after the answer) carries both.

Never the question or answer text: those live in the trace, under its retention. Uvicorn's access
line is rewritten to the path without its query string (a search's words travel there).
"""

from __future__ import annotations

import logging
import logging.config
import re
import uuid
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Iterator

REQUEST_ID_HEADER = "X-Request-ID"
# A caller's request id is kept only if it is short and plain (it is echoed and logged as given).
_PLAIN_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# Libraries whose INFO lines are per-call chatter (an outgoing URL each): warnings only.
_QUIET_LOGGERS = ("httpx", "httpcore", "sentence_transformers", "urllib3", "alembic.runtime.plugins")


@dataclass
class LogContext:
    request_id: str | None = None
    trace_id: str | None = None


_context: ContextVar[LogContext | None] = ContextVar("policydesk_log_context", default=None)


def request_id_from(header: str | None) -> str:
    """The caller's X-Request-ID when it is plain, else a new one."""
    if header and _PLAIN_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


@contextmanager
def request_context(request_id: str) -> Iterator[LogContext]:
    context = LogContext(request_id=request_id)
    token = _context.set(context)
    try:
        yield context
    finally:
        _context.reset(token)


def bind_trace_id(trace_id: Any) -> None:
    """Tie the lines written from here on (and the request's access line) to this trace.

    The request's context object is shared with the threads its work runs on (they copy the
    context, not the object), so a trace bound there is seen by the access line too."""
    context = _context.get()
    if context is None:  # a CLI ask: no request around it
        _context.set(LogContext(trace_id=str(trace_id)))
    else:
        context.trace_id = str(trace_id)


def current_context() -> LogContext | None:
    return _context.get()


class ContextFilter(logging.Filter):
    """Adds the request id and trace id, when known, to every record a handler writes."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.__dict__.pop("color_message", None)  # uvicorn's copy of the message with terminal colours
        context = _context.get()
        if context is not None:
            if context.request_id and not hasattr(record, "request_id"):
                record.request_id = context.request_id
            if context.trace_id and not hasattr(record, "trace_id"):
                record.trace_id = context.trace_id
        return True


class AccessFilter(logging.Filter):
    """Uvicorn's access line as fields, its path without the query string."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5:
            client, method, path, version, status = args
            path = str(path).split("?", 1)[0]
            record.args = (client, method, path, version, status)
            record.event, record.method, record.path, record.status, record.client = (
                "request", method, path, status, client)
        return True


def log_config(level: str = "INFO") -> dict[str, Any]:
    """A logging.config.dictConfig for the app and uvicorn: JSON lines on stderr."""
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": ContextFilter}, "access": {"()": AccessFilter}},
        "formatters": {"json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
            "datefmt": "%Y-%m-%dT%H:%M:%S%z",
        }},
        "handlers": {"json": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr",
                              "formatter": "json", "filters": ["context"]}},
        "root": {"handlers": ["json"], "level": level},
        "loggers": {
            "uvicorn": {"handlers": ["json"], "level": level, "propagate": False},
            "uvicorn.error": {"level": level},
            "uvicorn.access": {"handlers": ["json"], "level": level, "propagate": False, "filters": ["access"]},
            **{name: {"level": "WARNING"} for name in _QUIET_LOGGERS},
        },
    }


def configure_logging(level: str = "INFO") -> None:
    logging.config.dictConfig(log_config(level))
    logging.captureWarnings(True)  # a library's warnings become JSON lines too
