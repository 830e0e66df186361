"""Security headers on every response (OWASP Secure Headers): pages run only PolicyDesk's own
scripts and styles, are never framed, are not MIME-sniffed, and send no full URL to another origin.

The pages are built for this policy: no inline script or style anywhere (the version timelines
place their bars with classes, web/views.py; htmx's own indicator style is switched off in
base.html's htmx-config and lives in app.css), and no eval (htmx's `allowEval` is off too).
"""

from __future__ import annotations

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])
HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)
_NAMES = {name for name, _ in HEADERS}


class SecurityHeaders:
    """Pure ASGI: adds `HEADERS` to every HTTP response, replacing any a route set itself."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _NAMES]
                message = {**message, "headers": [*kept, *HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
