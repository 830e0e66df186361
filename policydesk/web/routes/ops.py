"""Operator endpoints: health and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from policydesk import metrics
from policydesk.web.deps import DbDep

router = APIRouter(tags=["ops"])


@router.get("/healthz")
def read_health(db: DbDep):
    with db.app.connect() as conn:  # a database error becomes the 503 page
        conn.execute(text("SELECT 1"))
    return PlainTextResponse("ok")


@router.get("/metrics")
def read_metrics():
    return Response(generate_latest(metrics.REGISTRY), media_type=CONTENT_TYPE_LATEST)
