"""`policydesk stack`: Postgres, PgBouncer (transaction mode) and `serve` from one command, as an
operator runs it (docs/deploy.md): the CLI starts it on free ports, /readyz turns ready, a rep
signs in over HTTP and asks, the answer is traced, `policydesk traces verify` passes through the
pooler, and SIGTERM stops all of it with nothing left running or listening."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time

import httpx
import psutil
import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session
from pydantic import SecretStr

from policydesk.accounts.users import add_user
from policydesk.commands.stack import pgbouncer_binary
from policydesk.config import Settings
from policydesk.ingest import ingest_directory
from policydesk.ops.runtime import open_migrated
from tests.serve_helpers import CLI, REPO, serve_env
from tests.test_ingest import _corpus, _entries
from tests.web_helpers import PASSWORD, csrf_from, free_port, text_of

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(pgbouncer_binary() is None,
                       reason="Debian's pgbouncer is not installed (apt-get install pgbouncer); the stack runs it"),
]


def _wait_ready(proc: subprocess.Popen, url: str, log, seconds: float = 300) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        try:
            r = httpx.get(url + "/readyz", timeout=5)
            if r.status_code == 200:
                return r.json()
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the stack did not turn ready: " + log.read_text(errors="replace")[-3000:]
        time.sleep(1)


def _env_file(path) -> dict:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_one_command_serves_through_pgbouncer_and_stops_clean(tmp_path, embed_model):
    data = tmp_path / "data"
    port, pooler_port = free_port(), free_port()
    log = tmp_path / "stack.log"
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as sink:
        proc = subprocess.Popen([CLI, "stack", "--port", str(port), "--pooler-port", str(pooler_port)],
                                env=serve_env(data), cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
    try:
        ready = _wait_ready(proc, url, log)
        assert ready["status"] == "ready" and ready["checks"]["database"] == "ok"

        env = _env_file(data / "stack" / "env")
        assert f"@127.0.0.1:{pooler_port}/" in env["DATABASE_URL"]  # the admin login goes through the pooler
        assert (data / "stack" / "env").stat().st_mode & 0o077 == 0  # it holds a password: owner-only
        pooled = Settings(DATA_DIR=data, _env_file=None, DATABASE_URL=SecretStr(env["DATABASE_URL"]),
                          DB_PREPARED_STATEMENTS=False)
        db = open_migrated(pooled)  # at head already: the stack ran them once
        try:
            corpus = _corpus(tmp_path, _entries("policies/pol-tf-v1.pdf", "policies/pol-tf-v2.pdf"))
            ingest_directory(db, corpus, embed_model, pooled)
            with Session(db.owner) as s, s.begin():
                add_user(s, name="stack-rep", role="rep", password=PASSWORD)

            with httpx.Client(base_url=url, timeout=120) as c:
                r = c.post("/login", data={"name": "stack-rep", "password": PASSWORD,
                                           "csrf_token": csrf_from(c.get("/login").text)})
                assert r.status_code == 303, r.text[:300]
                r = c.post("/ask", data={"question": "What is the timely filing limit?",
                                         "csrf_token": csrf_from(c.get("/ask").text)})
                assert r.status_code == 200, r.text[:300]
                answer = text_of(r.text, "answer-text")
            assert re.search(r"\d+ days", answer), answer  # answered from the policy, not an abstention
            with db.owner.connect() as conn:
                traced = conn.execute(text("SELECT count(*) FROM traces WHERE user_name = 'stack-rep'")).scalar_one()
            assert traced == 1
        finally:
            db.dispose()

        # The app's own login reached Postgres through PgBouncer (its log names each login).
        assert "user=policydesk_app" in (data / "stack" / "pgbouncer.log").read_text(errors="replace")
        verify = subprocess.run([CLI, "traces", "verify"], env=serve_env(data, **env), cwd=REPO,
                                capture_output=True, text=True, timeout=180)
        assert verify.returncode == 0, verify.stdout + verify.stderr
        assert re.search(r"^traces: [1-9]\d* rows verify", verify.stdout, re.M), verify.stdout

        children = psutil.Process(proc.pid).children(recursive=True)
        postmaster = int((data / "pg" / "postmaster.pid").read_text().split()[0])
        assert any("pgbouncer" in p.name() for p in children) and children
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(120)
    assert code == 0, log.read_text(errors="replace")[-3000:]
    gone = [p for p in (*children, ) if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not gone, [p.cmdline() for p in gone]
    assert not psutil.pid_exists(postmaster) or psutil.Process(postmaster).status() == psutil.STATUS_ZOMBIE
    assert not (data / "pg" / "postmaster.pid").exists()
    assert not _listening(port) and not _listening(pooler_port)
