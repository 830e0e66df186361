"""The web app's operational endpoints: health, metrics, static files, a database outage."""

from __future__ import annotations

import re
from types import SimpleNamespace

from fastapi.testclient import TestClient
from sqlalchemy import create_engine

from tests.web_helpers import csrf_from


def test_healthz_and_metrics(web_app):
    client = TestClient(web_app)
    assert client.get("/healthz").text == "ok"
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"status": "ready", "failing": [], "checks": {
        "database": "ok", "migrations": "ok", "topic_terms": "ok", "embedding_model": "ok", "refusal_gate": "ok"}, "notes": {}}
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert "policydesk_refusals" in r.text


def test_static_htmx_is_served_locally(web_app):
    r = TestClient(web_app).get("/static/htmx.min.js")
    assert r.status_code == 200 and "htmx" in r.text[:200]


def test_database_down_is_a_clear_503(settings, pipeline):
    from policydesk.web.app import create_app

    dead = create_engine("postgresql+psycopg://nobody:x@127.0.0.1:1/none?connect_timeout=1")
    app = create_app(settings, db=SimpleNamespace(app=dead, owner=dead), pipeline=pipeline)
    client = TestClient(app, follow_redirects=False)
    assert client.get("/healthz").text == "ok"  # the process is up: liveness asks nothing of the database
    r = client.get("/readyz")
    assert r.status_code == 503 and r.json()["failing"] == ["database", "migrations"]
    assert r.json()["checks"]["database"] == "unreachable (OperationalError)"
    token = csrf_from(client.get("/login").text)
    r = client.post("/login", data={"name": "x", "password": "y", "csrf_token": token})
    assert r.status_code == 503
    assert re.search(r"unavailable", r.text, re.I)


def test_readyz_names_a_pipeline_still_loading_and_a_gate_not_fitted(settings, demo_db, pipeline):
    from policydesk.web.app import create_app

    loading = create_app(settings, db=demo_db, pipeline=None)  # no lifespan run: nothing built yet
    r = TestClient(loading).get("/readyz")
    assert r.status_code == 503 and r.json()["failing"] == ["embedding_model", "refusal_gate"]
    unfitted = SimpleNamespace(embed_model=pipeline.embed_model, gate=SimpleNamespace(intent=None))
    r = TestClient(create_app(settings, db=demo_db, pipeline=unfitted)).get("/readyz")
    assert r.status_code == 503 and r.json()["failing"] == ["refusal_gate"]


def test_metrics_token_is_required_when_set(settings, demo_db, pipeline):
    from pydantic import SecretStr

    from policydesk.web.app import create_app

    guarded = settings.model_copy(update={"METRICS_TOKEN": SecretStr("scrape-" + "k" * 32)})
    client = TestClient(create_app(guarded, db=demo_db, pipeline=pipeline))
    missing = client.get("/metrics")
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert "policydesk_refusals" not in missing.text
    assert client.get("/metrics", headers={"Authorization": "Bearer scrape-wrong"}).status_code == 403
    assert client.get("/metrics", headers={"Authorization": "Basic " + "k" * 32}).status_code == 401
    ok = client.get("/metrics", headers={"Authorization": "Bearer scrape-" + "k" * 32})
    assert ok.status_code == 200 and "policydesk_refusals" in ok.text
