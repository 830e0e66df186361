"""What every HTTP request leaves for operators: a request id (the caller's X-Request-ID when it is
plain, else a new one), bound to the request's log lines and echoed in the response, and its latency
by route template in Prometheus."""

from __future__ import annotations

import time

from policydesk.logs import REQUEST_ID_HEADER, request_context, request_id_from

_HEADER = REQUEST_ID_HEADER.lower().encode()


class RequestObservation:
    """Pure ASGI (no extra task), outermost, so the id is bound before any other middleware runs and
    uvicorn's access line, written from inside `send`, sees it."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope["headers"] if k == _HEADER), None)
        request_id = request_id_from(given.decode("latin-1") if given is not None else None)
        started = time.perf_counter()
        status = 500  # what the latency is filed under if the app never answers

        async def send_with_id(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []), (_HEADER, request_id.encode())]}
            await send(message)

        with request_context(request_id):
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                _observe(scope, status, time.perf_counter() - started)


def _observe(scope, status: int, seconds: float) -> None:
    from policydesk import metrics

    route = scope.get("route")
    template = getattr(route, "path", None) or "unmatched"
    metrics.HTTP_REQUEST_SECONDS.labels(method=scope["method"], route=template, status=str(status)).observe(seconds)
