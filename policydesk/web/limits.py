"""Bounded input for the HTML pages: a form body past its limit is never read.

The limit follows the question cap (`POLICYDESK_MAX_QUESTION_CHARS`): room for a question of that
many characters, each URL-encoded as up to 12 bytes (a 4-byte UTF-8 character as `%XX` x 4), plus
16 KiB for the other fields. A larger body is not parsed: the app sees an empty form and a mark
(`body_too_large`), so the ask route refuses and traces it like any rejected question, and every
other route refuses it with 413 (web/deps.py). The JSON API reads and caps its own body after the
token check (web/api/deps.py:read_body).
"""

from __future__ import annotations

from starlette.requests import Request

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_MARK = "policydesk_body_too_large"
TOO_LARGE_MESSAGE = ("The form is larger than PolicyDesk accepts: a question may have up to {max_chars} characters. "
                     "Nothing in it was read.")


def form_body_limit(max_question_chars: int) -> int:
    return 16 * 1024 + 12 * max_question_chars


def body_too_large(request: Request) -> bool:
    return bool(request.scope.get("state", {}).get(_MARK))


class BoundedBody:
    """Pure ASGI: reads a page request's body up to `limit` bytes before the app does; past it, the
    app gets an empty body and the mark instead (nothing of it is parsed, screened or stored)."""

    def __init__(self, app, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS or scope["path"].startswith("/api/"):
            await self.app(scope, receive, send)
            return
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), b"")
        messages, size, too_large = [], 0, declared.isdigit() and int(declared) > self.limit
        while not too_large:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            too_large = size > self.limit
            if not message.get("more_body", False):
                break
        if too_large:
            scope.setdefault("state", {})[_MARK] = True
            messages = [{"type": "http.request", "body": b"", "more_body": False}]

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)
