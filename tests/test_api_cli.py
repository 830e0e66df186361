"""Issue 19: `policydesk ask --server URL --token T` against a running server (uvicorn on a free
port, the demo database) prints the same JSON as the local, cold `policydesk ask --json`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import uvicorn

from policydesk.web.app import create_app
from tests.api_helpers import make_token
from tests.cli_helpers import run_cli

CLI = os.path.join(os.path.dirname(sys.executable), "policydesk")
TIMELY = "What is the timely filing limit?"


@pytest.fixture(scope="module")
def server(settings, demo_db, pipeline):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_app(settings, db=demo_db, pipeline=pipeline)
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


def _cli(*args: str, env: dict | None = None, process: bool = False) -> tuple[subprocess.CompletedProcess, float]:
    """`policydesk ask ARGS`: as a cold process (`process`: the start-up cost is what the first test
    compares), else in this process (tests/cli_helpers.py)."""
    start = time.perf_counter()
    if process:
        out = subprocess.run([CLI, "ask", *args], env=env or dict(os.environ), capture_output=True, text=True,
                             timeout=300)
    else:
        out = run_cli("ask", *args, env=env or dict(os.environ))
    return out, time.perf_counter() - start


def test_ask_server_prints_the_same_json_as_the_local_cli(server, demo_db, staff):
    token = make_token(demo_db, staff["rep"])
    remote, remote_s = _cli(TIMELY, "--server", server, "--token", token, "--json", process=True)
    assert remote.returncode == 0, remote.stderr
    local_env = dict(os.environ, DATABASE_URL=demo_db.owner_url.render_as_string(hide_password=False))
    local, local_s = _cli(TIMELY, "--as", staff["rep"], "--json", env=local_env, process=True)
    assert local.returncode == 0, local.stderr
    a, b = json.loads(remote.stdout), json.loads(local.stdout)
    assert set(a) == set(b)
    assert a["answer"] == b["answer"] and a["citations"] == b["citations"] and a["role"] == b["role"] == "rep"
    assert a["trace_id"] != b["trace_id"]  # each call is its own trace
    print(f"\nask --server: {remote_s:.2f} s; cold local ask: {local_s:.2f} s")
    assert remote_s < local_s


def test_ask_server_refusal_is_printed_as_an_answer(server, demo_db, staff):
    token = make_token(demo_db, staff["rep"])
    out, _ = _cli("Approve claim 4471 for payment", "--server", server, "--token", token, "--json")
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["refused"] is True and body["refusal_code"] == "claim_action" and "type" not in body
    text, _ = _cli("Approve claim 4471 for payment", "--server", server, env=dict(os.environ, POLICYDESK_API_TOKEN=token))
    assert text.returncode == 0 and text.stdout.startswith("REFUSED: ")


def test_ask_server_with_a_bad_token_or_date_says_why(server):
    out, _ = _cli(TIMELY, "--server", server, "--token", "pdk_nope")
    assert out.returncode == 2 and "A valid API token is required" in out.stderr and out.stdout == ""
    out, _ = _cli(TIMELY, "--server", server, "--token", "pdk_nope", "--date-of-service", "2025-13-01")
    assert out.returncode == 2 and "is not a date" in out.stderr
    out, _ = _cli(TIMELY, "--server", "http://127.0.0.1:9", "--token", "pdk_nope")
    assert out.returncode == 3 and "could not reach" in out.stderr
    out, _ = _cli(TIMELY)
    assert out.returncode == 2 and "--as USER is required" in out.stderr
