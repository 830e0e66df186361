"""What every HTTP request leaves for operators: a request id (the caller's X-Request-ID when it is
well-formed, else a new one), bound to the request's log lines and echoed in the response, and its
latency by method and route template in Prometheus.

Nothing a caller chooses becomes a metric label or reaches the access line as sent: the method is
one of the standard ones or "other", the route is the matched route's template or "unmatched",
so the set of label values is closed whatever is requested (a made-up method or path adds no series),
and the access line names the route template, never the path with its ids.

When the app's telemetry exports (`app.state.telemetry`, ops/telemetry.py), each request is also an
OpenTelemetry server span named by method and route template, a child of the caller's W3C
`traceparent` when one is sent; the pipeline's request span is its child, and the response's
`traceresponse` header names the trace. The span carries the method, route template and status,
never the path, query, headers or body."""

from __future__ import annotations

import time

from policydesk.ops.logs import REQUEST_ID_HEADER, request_context, request_id_from
from policydesk.ops.telemetry import Telemetry

_HEADER = REQUEST_ID_HEADER.lower().encode()
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"


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
        http = _telemetry(scope).http_request(scope["headers"], method_label(scope))

        async def send_with_id(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []), (_HEADER, request_id.encode()),
                                                  *http.response_headers()]}
                context.route = route_template(scope)  # uvicorn writes its access line inside this send
                context.method = method_label(scope)
            await send(message)

        with request_context(request_id) as context, http:
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                http.responded(route_template(scope), status)
                _observe(scope, status, time.perf_counter() - started)


_DISABLED = Telemetry.disabled()


def _telemetry(scope) -> Telemetry:
    """The app's own telemetry (create_app sets it); an app without one exports nothing."""
    return getattr(getattr(scope.get("app"), "state", None), "telemetry", None) or _DISABLED


def route_template(scope) -> str:
    """The matched route's template with its router's prefix ("/api/v1/citations/{trace_id}/{chunk_id}"):
    one series per route, never one per path. The route in scope is the router's own (no prefix), so
    the prefix is the part of the path before where the route's pattern first matches: the router
    passed the request on because the path starts with its literal prefix, so that part is always
    (a prefix of) a prefix declared in code, never caller text."""
    route, path = scope.get("route"), scope.get("path", "")
    template, pattern = getattr(route, "path", None), getattr(route, "path_regex", None)
    if template is None or pattern is None:
        return "unmatched"  # a 404: one series for every unknown path
    for i, char in enumerate(path):
        if char == "/" and pattern.match(path[i:]):
            return path[:i] + template
    return template


def method_label(scope) -> str:
    """The request's method when it is a standard one, else "other": a closed set of label values."""
    method = scope.get("method", "")
    return method if method in METHODS else OTHER_METHOD


def _observe(scope, status: int, seconds: float) -> None:
    from policydesk.ops import metrics

    metrics.HTTP_REQUEST_SECONDS.labels(method=method_label(scope), route=route_template(scope),
                                        status=str(status)).observe(seconds)
