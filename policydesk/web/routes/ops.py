"""Operator endpoints: liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from policydesk.ops import metrics
from policydesk.ops.readiness import readiness

router = APIRouter(tags=["ops"])


@router.get("/healthz")
def read_health():
    """The process is up and serving: nothing else is asked (a database outage is /readyz's)."""
    return PlainTextResponse("ok")


@router.get("/readyz")
async def read_readiness(request: Request):
    state = await run_in_threadpool(readiness, request.app.state.db, request.app.state.pipeline,
                                    request.app.state.warmer)
    return JSONResponse(state.to_json(), status_code=200 if state.ready else 503)


def _metrics_refusal(request: Request) -> Response | None:
    """None when the caller may scrape: no token is configured, or it sent it as a bearer token."""
    token = request.app.state.settings.METRICS_TOKEN
    if token is None:
        return None
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given:
        return PlainTextResponse("/metrics needs Authorization: Bearer <POLICYDESK_METRICS_TOKEN>\n", status_code=401,
                                 headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
    if not hmac.compare_digest(given.strip().encode(), token.get_secret_value().encode()):
        return PlainTextResponse("that is not the metrics token\n", status_code=403)
    return None


@router.get("/metrics")
def read_metrics(request: Request):
    refusal = _metrics_refusal(request)
    if refusal is not None:
        return refusal
    return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
