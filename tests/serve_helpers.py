"""One real `policydesk serve --workers 2` for the session, shared by the modules that talk to it.

Each `serve` worker is a new process that imports everything and loads its own model, and each
module that started its own server also made its own data directory (initdb, migrations, ingest):
20-40 s per module on two shared cores. The server here is started once, the first time a test
asks for it, in a data directory of its own: pol-tf-v1 and pol-tf-v2 ingested, the API rate
limit raised (tests send bursts from one token), a metrics token set, no forwarded header trusted.
Modules add the users and tokens they need (unique names) and read the log from their own start
(`LogSince`). A test that stops the server (test_serve_workers.py's last) leaves it stopped; the
next module that asks for it gets a new one, with a new log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

from policydesk.config import Settings

CLI = str(Path(sys.executable).parent / "policydesk")
REPO = Path(__file__).resolve().parent.parent
METRICS_TOKEN = "metrics-" + uuid.uuid4().hex
# Leaked into a test run's environment, any of these would change what the server trusts or where it reads.
_NOT_INHERITED = ("DATABASE_URL", "FORWARDED_ALLOW_IPS", "POLICYDESK_FORWARDED_ALLOW_IPS")


def serve_env(data_dir: Path, **extra: str) -> dict:
    env = dict(os.environ, POLICYDESK_DATA_DIR=str(data_dir), HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    for leaked in _NOT_INHERITED:
        env.pop(leaked, None)
    env.update(extra)
    return env


def start_serve(env: dict, log: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """`policydesk serve ARGS` on a free port, its output appended to `log`; returns (process, url)."""
    from tests.web_helpers import free_port

    port = free_port()
    with log.open("ab") as sink:
        proc = subprocess.Popen([CLI, "serve", "--port", str(port), *args], env=env, cwd=REPO,
                                stdout=sink, stderr=subprocess.STDOUT)
    return proc, f"http://127.0.0.1:{port}"


def wait_started(proc: subprocess.Popen, log: Path, workers: int, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds  # each worker loads its own model, then accepts connections
    while log.read_text(errors="replace").count("Application startup complete") < workers:
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, "serve did not start"
        time.sleep(0.5)


def stop_serve(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


class LogSince:
    """A server log read from an offset on: the lines written since a module started."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0

    def read_text(self, errors: str = "strict") -> str:
        with self.path.open("rb") as f:
            f.seek(self.offset)
            return f.read().decode("utf-8", errors=errors)


class SharedServe:
    """The session's `serve --workers 2`, started on first use (and again after a test stopped it)."""

    WORKERS = 2

    def __init__(self, data_dir: Path, corpus_dir: Path, embed_model) -> None:
        self.data_dir = data_dir
        self.corpus_dir = corpus_dir
        self.embed_model = embed_model
        self.settings = Settings(DATA_DIR=data_dir, _env_file=None)
        self.db = None
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.log: Path | None = None
        self.starts = 0

    def get(self) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        return {"url": self.url, "db": self.db, "proc": self.proc, "log": self.log, "data_dir": self.data_dir,
                "role": self.settings.APP_DB_ROLE, "settings": self.settings}

    def _start(self) -> None:
        from policydesk.ingest import ingest_directory
        from policydesk.ops.runtime import open_migrated
        from tests.test_ingest import _corpus, _entries

        if self.db is not None:
            self.db.dispose()
        self.db = open_migrated(self.settings)  # starts the embedded server in this process, if stopped
        if self.starts == 0:
            corpus = _corpus(self.corpus_dir, _entries("policies/pol-tf-v1.pdf", "policies/pol-tf-v2.pdf"))
            ingest_directory(self.db, corpus, self.embed_model, self.settings)
        self.starts += 1
        self.log = self.data_dir / f"serve-{self.starts}.log"
        env = serve_env(self.data_dir, POLICYDESK_METRICS_TOKEN=METRICS_TOKEN, POLICYDESK_API_RATE_LIMIT="10000")
        self.proc, self.url = start_serve(env, self.log, "--workers", str(self.WORKERS))
        wait_started(self.proc, self.log, self.WORKERS)
        assert httpx.get(self.url + "/healthz", timeout=10).status_code == 200

    def close(self) -> None:
        from policydesk.storage.engine import stop_embedded_server

        if self.proc is not None:
            stop_serve(self.proc)
        if self.db is not None:
            self.db.dispose()
        stop_embedded_server(self.data_dir, force=True)
