"""Structured logs: one JSON object per line, each with time, level, logger and message, plus the
request id and trace id of the request it was written in.

`serve` hands `log_config()` to uvicorn, which applies it in every worker process, so the app's own
lines and uvicorn's error and access lines share one format. A request's ids live in a context
variable the web middleware sets; the pipeline binds the trace id once its trace exists, and the
access line (written when the response starts, after the answer) carries both.

Never the question or answer text: those live in the trace, under its retention. Uvicorn's access
line is rewritten to the matched route's template (`/api/v1/versions/{doc_id}`), never the path
as sent: ids and a search's words travel in the path and its query string.
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
# A caller's request id is kept only if it is well-formed (letters, digits and hyphens, at most 64:
# a UUID, a proxy's or a load balancer's id) and holds no identifier shape (a plan ID, SSN, phone
# number, MBI, 9+ digits); it is echoed and written on every log line of the request.
_PLAIN_ID = re.compile(r"[A-Za-z0-9-]{1,64}")
# Libraries whose INFO lines are per-call chatter (an outgoing URL each): warnings only.
_QUIET_LOGGERS = ("httpx", "httpcore", "sentence_transformers", "urllib3", "alembic.runtime.plugins")


@dataclass
class LogContext:
    request_id: str | None = None
    trace_id: str | None = None
    route: str | None = None  # the matched route's template, for the access line (web/observe.py)
    method: str | None = None  # the request's method from a closed set, for the access line


_context: ContextVar[LogContext | None] = ContextVar("policydesk_log_context", default=None)


def request_id_from(header: str | None) -> str:
    """The caller's X-Request-ID when it is well-formed and holds no identifier shape, else a new one."""
    if header and _PLAIN_ID.fullmatch(header):
        from policydesk.detectors.identifiers import token_holds_identifier

        if not token_holds_identifier(header):
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
    """Uvicorn's access line as fields, with the matched route's template in place of the path (so
    no id, search word or query string a caller put in the URL is logged) and the method from a
    closed set; a line written outside a request the middleware saw says "unmatched"."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5:
            client, method, _path, version, status = args
            context = _context.get()
            path = (context.route if context is not None else None) or "unmatched"
            method = (context.method if context is not None else None) or "other"
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
