"""The web app's operational endpoints: health, metrics, static files, a database outage."""

from __future__ import annotations

import re
from types import SimpleNamespace

from fastapi.testclient import TestClient
from sqlalchemy import create_engine

from tests.web_helpers import csrf_from, text_of


def test_healthz_and_metrics(web_app):
    client = TestClient(web_app)
    assert client.get("/healthz").text == "ok"
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
    r = client.get("/healthz")
    assert r.status_code == 503 and "not reachable" in text_of(r.text, "notice-error")
    r = client.get("/healthz", headers={"Accept": "application/json"})
    assert r.status_code == 503 and r.json()["status"] == "database_unavailable"
    token = csrf_from(client.get("/login").text)
    r = client.post("/login", data={"name": "x", "password": "y", "csrf_token": token})
    assert r.status_code == 503
    assert re.search(r"unavailable", r.text, re.I)
