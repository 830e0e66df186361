"""`policydesk serve --workers 2` as a platform team runs it: its log, read line by line, is JSON
with request and trace ids and never a question's text.

The session's shared server (tests/serve_helpers.py; each worker loads its own model); every
request goes over a fresh connection, so the kernel hands them to both workers.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy.orm import Session

from policydesk.storage.engine import embedded_server
from policydesk.accounts.users import add_user
from tests.api_helpers import bearer, make_token
from tests.serve_helpers import METRICS_TOKEN
from tests.web_helpers import PASSWORD

pytestmark = pytest.mark.slow

# A word no policy, prompt or log template holds: wherever it shows up, a question's text leaked.
MARKER = "Zigguratville"
ANSWERED = f"What is the timely filing limit for a claim from {MARKER} Clinic?"
REFUSED = f"Member CVM12345678 of {MARKER} Clinic wants to know the timely filing limit."


@pytest.fixture(scope="module")
def served(shared_serve):
    """The session's `serve --workers 2` (tests/serve_helpers.py: its own data directory, a metrics
    token, the API rate limit raised), a rep and a token of this module's."""
    s = shared_serve.get()
    with Session(s["db"].owner) as session, session.begin():
        add_user(session, name="ops-rep", role="rep", password=PASSWORD)
    yield {"url": s["url"], "db": s["db"], "proc": s["proc"], "log": s["log"], "data_dir": s["data_dir"],
           "token": make_token(s["db"], "ops-rep")}


def ask(served, question: str, headers: dict | None = None) -> httpx.Response:
    with httpx.Client(base_url=served["url"], timeout=120) as c:  # a fresh connection: either worker
        return c.post("/api/v1/ask", json={"question": question}, headers=bearer(served["token"]) | (headers or {}))


def log_records(log: Path) -> list[dict]:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            pytest.fail(f"a log line is not JSON: {line[:300]!r}")
    return records


def test_every_log_line_is_json_with_request_and_trace_ids_and_no_question_text(served):
    request_id = f"lb-{uuid.uuid4().hex[:16]}"
    answered = ask(served, ANSWERED, {"X-Request-ID": request_id})
    assert answered.status_code == 200, answered.text[:300]
    assert answered.headers["X-Request-ID"] == request_id  # echoed as given
    refused = ask(served, REFUSED)
    assert refused.status_code == 422 and refused.json()["type"] == "refused", refused.text[:300]
    generated = refused.headers["X-Request-ID"]
    assert len(generated) == 32 and generated != request_id  # none given: a new one
    odd = ask(served, ANSWERED, {"X-Request-ID": "x" * 129})  # too long to log as given
    assert odd.headers["X-Request-ID"] != "x" * 129
    time.sleep(0.5)  # the access line of the last response

    records = log_records(served["log"])
    assert records and all({"time", "level", "logger", "message"} <= r.keys() for r in records)
    assert sum("Application startup complete" in r["message"] for r in records) == 2  # uvicorn's own lines
    access = [r for r in records if r["logger"] == "uvicorn.access" and r.get("request_id") == request_id]
    assert [(a["method"], a["path"], a["status"]) for a in access] == [("POST", "/api/v1/ask", 200)]
    assert access[0]["trace_id"] == answered.json()["trace_id"]  # the access line names the answer's trace
    ask_lines = [r for r in records if r["logger"] == "policydesk.pipeline" and r.get("request_id") == request_id]
    assert ask_lines and all(r["trace_id"] == answered.json()["trace_id"] for r in ask_lines)
    refusal = [r for r in records if r.get("event") == "refused" and r.get("request_id") == generated]
    assert len(refusal) == 1 and refusal[0]["trace_id"] == refused.json()["trace_id"]
    assert refusal[0]["reason"] == "member_identifier" and refusal[0]["level"] == "INFO"
    text = served["log"].read_text(errors="replace")
    assert MARKER not in text and "CVM12345678" not in text


def scrape(served, token: str | None = METRICS_TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=served["url"], timeout=30) as c:  # a fresh connection: either worker
        return c.get("/metrics", headers=headers)


def sample(body: str, name: str, **labels: str) -> float:
    """One sample's value in a scrape (0 when absent); labels match as a subset, in any order."""
    total = None
    for line in body.splitlines():
        m = re.fullmatch(rf"{name}(?:\{{(.*)\}})? (\S+)", line)
        if not m:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            if total is not None:
                pytest.fail(f"{name} {labels} matches more than one series")
            total = float(m.group(2))
    return total or 0.0


def test_every_scrape_sums_all_workers_and_needs_the_token(served):
    assert scrape(served, token=None).status_code == 401
    assert scrape(served, token="not-the-token").status_code == 403
    before = {sample(scrape(served).text, "policydesk_refusals_total", reason="member_identifier") for _ in range(4)}
    assert len(before) == 1, before  # every worker's scrape agrees before, too
    n = 12
    for _ in range(n):
        assert ask(served, REFUSED).status_code == 422
    scrapes = [scrape(served) for _ in range(8)]
    assert all(r.status_code == 200 for r in scrapes)
    start = before.pop()
    refused = [sample(r.text, "policydesk_refusals_total", reason="member_identifier") for r in scrapes]
    assert refused == [start + n] * len(scrapes)
    body = scrapes[-1].text
    # The HTTP latency histogram by route template counts the same requests, whichever worker served them.
    asks = sample(body, "policydesk_http_request_seconds_count", method="POST", route="/api/v1/ask", status="422")
    assert asks >= n
    assert sample(body, "policydesk_http_request_seconds_bucket", route="/api/v1/ask", status="422", le="+Inf") == asks
    for stage in ("resolve_role", "refusal_gate", "trace_write"):  # a refused ask's stages
        assert sample(body, "policydesk_stage_seconds_count", stage=stage) >= n, stage
        assert 'policydesk_stage_seconds_bucket{le="0.01",stage="%s"}' % stage in body
    assert sample(body, "policydesk_stage_seconds_count", stage="retrieval") >= 1  # the answered ask
    # The metrics files live under the data dir, one set per worker process.
    assert len({p.name.rsplit("_", 1)[-1] for p in (served["data_dir"] / "metrics").glob("*.db")}) >= 2


def test_each_worker_warms_the_cache_at_start_and_only_one_reads_it(served):
    deadline = time.monotonic() + 60
    while True:  # the warm-up runs beside the first requests; readiness waits for it
        with httpx.Client(base_url=served["url"], timeout=30) as c:
            ready = c.get("/readyz")
        if ready.status_code == 200 or time.monotonic() > deadline:
            break
        assert ready.json()["failing"] == ["dense_cache"], ready.text
        time.sleep(0.5)
    for _ in range(4):  # whichever worker answers
        with httpx.Client(base_url=served["url"], timeout=30) as c:
            ready = c.get("/readyz").json()
        assert ready["checks"]["dense_cache"] == "ok" and ready["notes"] == {}, ready
    body = scrape(served).text
    read, waited = (sample(body, "policydesk_cache_warmups_total", outcome=o) for o in ("read", "waited"))
    assert read >= 1 and read + waited == 2, body  # a worker that found the lock taken waited instead
    for outcome in ("skipped", "failed"):
        assert sample(body, "policydesk_cache_warmups_total", outcome=outcome) == 0
    lines = [r for r in log_records(served["log"]) if r["message"].startswith("dense index warm-up")]
    assert len(lines) == 2, lines


def test_healthz_and_readyz_and_a_stopped_database_named(served):
    """Last in the module: it stops the database under the running server."""
    with httpx.Client(base_url=served["url"], timeout=30) as c:
        assert c.get("/healthz").text == "ok"
        ready = c.get("/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
        server = embedded_server(served["data_dir"])
        served["db"].dispose()
        server.stop()  # pg_ctl stop, as the server's system user
        try:
            for _ in range(4):  # whichever worker answers
                with httpx.Client(base_url=served["url"], timeout=30) as fresh:
                    down = fresh.get("/readyz")
                    assert down.status_code == 503 and down.json()["failing"][0] == "database", down.text
                    assert down.json()["checks"]["database"].startswith("unreachable")
                    assert fresh.get("/healthz").text == "ok"  # the process itself is fine: no restart
        finally:
            with server._lock:
                server.ensure_postgres_running()
        with httpx.Client(base_url=served["url"], timeout=30) as fresh:
            assert fresh.get("/readyz").status_code == 200  # ready again, without a restart
