"""`policydesk serve --workers 2`: two real worker processes answer at the same time on one
embedded Postgres, and the trace hash chain stays one unbroken chain (issue 17, point 4).

Each trace's hash links to the row before it; the insert trigger takes a transaction-scoped
advisory lock before it reads the chain's head, so two processes appending at once must queue,
never both link to the same head (a fork). Run as users would: the CLI starts the server, eight
clients sign in and ask over fresh connections, so the kernel hands requests to both workers.
"""

from __future__ import annotations

import signal
import threading
import time

import httpx
import psutil
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.storage.chain import verify_chain
from policydesk.storage.engine import stop_embedded_server
from policydesk.accounts.users import add_user
from tests.serve_helpers import serve_env, start_serve, wait_started
from tests.web_helpers import PASSWORD, csrf_from, text_of

pytestmark = pytest.mark.slow

# Both answered from the one policy this test ingests (an appeals question would rightly go unanswered).
QUESTIONS = ("What is the timely filing limit?", "How long does a provider have to submit a claim?")
CLIENTS, ASKS = 8, 6


@pytest.fixture(scope="module")
def served(shared_serve):
    """The session's `serve --workers 2` (tests/serve_helpers.py: started by the CLI, pol-tf-v1 and
    v2 ingested) and this module's eight reps. The module's last test stops it."""
    s = shared_serve.get()
    names = [f"worker-rep-{i}" for i in range(CLIENTS)]
    with Session(s["db"].owner) as session, session.begin():
        for name in names:
            add_user(session, name=name, role="rep", password=PASSWORD)
    yield {"url": s["url"], "db": s["db"], "proc": s["proc"], "names": names, "role": s["role"],
           "data_dir": s["data_dir"]}


def _sign_in(url: str, name: str) -> tuple[dict, str]:
    """Cookies and CSRF token of a signed-in session."""
    with httpx.Client(base_url=url, timeout=120) as c:
        token = csrf_from(c.get("/login").text)
        r = c.post("/login", data={"name": name, "password": PASSWORD, "csrf_token": token})
        assert r.status_code == 303, r.text[:300]
        return dict(c.cookies), csrf_from(c.get("/ask").text)


def _asker(url: str, name: str, out: list) -> None:
    cookies, token = _sign_in(url, name)
    for i in range(ASKS):  # a new connection per ask: no keep-alive pins a client to one worker
        with httpx.Client(base_url=url, cookies=cookies, timeout=120) as c:
            r = c.post("/ask", data={"question": QUESTIONS[i % len(QUESTIONS)], "csrf_token": token})
            out.append((r.status_code, text_of(r.text, "answer-text") if r.status_code == 200 else r.text[:300]))


def _serving(db, role: str) -> set[str]:
    with db.owner.connect() as conn:
        return set(conn.execute(text(
            "SELECT application_name FROM pg_stat_activity WHERE usename = :role"), {"role": role}).scalars())


def _burst(url: str, names: list[str]) -> list:
    out: list = []
    threads = [threading.Thread(target=_asker, args=(url, name, out)) for name in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_two_workers_answer_concurrently_and_the_trace_chain_does_not_fork(served):
    db = served["db"]
    workers = [p for p in psutil.Process(served["proc"].pid).children(recursive=True)
               if "multiprocessing.resource_tracker" not in " ".join(p.cmdline())]
    assert len(workers) == 2, [p.cmdline() for p in workers]
    names = {f"policydesk-{p.pid}" for p in workers}
    with db.owner.connect() as conn:
        before = conn.execute(text("SELECT count(*) FROM traces")).scalar_one()

    out = _burst(served["url"], served["names"])

    assert len(out) == CLIENTS * ASKS
    assert all(code == 200 for code, _ in out), [o for o in out if o[0] != 200][:3]
    assert all(answer for _, answer in out)
    assert names <= _serving(db, served["role"])  # both workers hold application connections
    with db.owner.connect() as conn:
        rows = conn.execute(text(
            "SELECT count(*) AS n, count(DISTINCT prev_hash) AS heads, max(seq) - min(seq) + 1 AS span "
            "FROM traces")).one()
    assert rows.n == before + CLIENTS * ASKS  # one trace per answer, none lost
    assert rows.heads == rows.n and rows.span == rows.n  # no two rows link to the same head, no gaps
    report = verify_chain(db.owner)
    assert report.ok, str(report.broken)
    assert report.rows == rows.n


def test_stopping_serve_leaves_no_embedded_postgres_running(served):
    """Each worker gives back its handle on the embedded Postgres when it stops: once `serve`
    and this test's own connection are gone, nothing keeps the cluster running."""
    proc, data_dir = served["proc"], served["data_dir"]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    served["db"].dispose()
    stop_embedded_server(data_dir)  # this test process's own handle (it ingested the corpus)
    pid_file = data_dir / "pg" / "postmaster.pid"
    deadline = time.monotonic() + 60
    while pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not pid_file.exists(), "the embedded Postgres was left running after serve stopped"


def test_a_one_process_serve_stopped_by_sigterm_leaves_no_embedded_postgres_running(served):
    """Without --workers (as `make demo` runs it), uvicorn re-raises SIGTERM after shutting down;
    `serve` must still give back its handle, so the cluster stops with it. Runs after the test
    above stopped the shared server, in the same (migrated) data directory."""
    data_dir = served["data_dir"]
    pid_file = data_dir / "pg" / "postmaster.pid"
    assert not pid_file.exists()
    log = data_dir / "one-process.log"
    proc, url = start_serve(serve_env(data_dir), log)
    wait_started(proc, log, 1)
    assert httpx.get(url + "/healthz", timeout=10).status_code == 200 and pid_file.exists()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    deadline = time.monotonic() + 60
    while pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not pid_file.exists(), "the embedded Postgres was left running after a one-process serve stopped"
