"""Bounded loopback load test of the ask endpoint.

    .venv/bin/python benchmarks/load_ask.py --clients 8 --requests 200

Starts `policydesk serve` on its own embedded Postgres (a fresh data dir under /tmp), signs in
one rep per client, and has each client POST /ask `--requests` times (questions cycle through
a fixed list, some with dates). Stops by itself. Reports status counts, p50/p95 latency,
trace rows written vs requests served, and the server's RSS over the run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
QUESTIONS = [
    ("What is the timely filing limit?", {}),
    ("What is the timely filing limit?", {"date_of_service": "2025-11-03"}),
    ("How long does a member have to file an appeal?", {"denial_notice_date": "2025-03-01"}),
    ("How fast must an emergency admission be reported?", {}),
    ("Is audio-only telehealth covered?", {}),
    ("What is the SIU case scoring threshold?", {}),  # refused for a rep: no model call
    ("How do I get an interpreter on the line?", {}),
    ("What changed in the timely filing policy?", {}),
]
_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def _token(html: str) -> str:
    m = _TOKEN.search(html)
    if not m:
        raise RuntimeError("no CSRF token on the page")
    return m.group(1)


def _client(base: str, name: str, password: str, n: int, out: list, errors: list) -> None:
    with httpx.Client(base_url=base, timeout=60, follow_redirects=True) as c:
        token = _token(c.get("/login").text)
        c.post("/login", data={"name": name, "password": password, "csrf_token": token})
        token = _token(c.get("/ask").text)
        for i in range(n):
            q, dates = QUESTIONS[i % len(QUESTIONS)]
            t0 = time.perf_counter()
            try:
                r = c.post("/ask", data={"question": q, "csrf_token": token, **dates})
                out.append((r.status_code, (time.perf_counter() - t0) * 1000))
            except httpx.HTTPError as exc:
                errors.append(repr(exc))


def _pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=200, help="per client")
    ap.add_argument("--port", type=int, default=8123)
    args = ap.parse_args()

    data = Path(tempfile.mkdtemp(prefix="policydesk-load-"))
    env = dict(os.environ, POLICYDESK_DATA_DIR=str(data), HF_HUB_OFFLINE="1")
    env.pop("DATABASE_URL", None)
    cli = str(BIN / "policydesk")
    subprocess.run([cli, "demo", "--no-serve"], env=env, check=True, capture_output=True, cwd=ROOT)
    users = [(f"load{i}", f"load-password-{i}") for i in range(args.clients)]  # 12+ characters
    for name, pw in users:
        subprocess.run([cli, "users", "add", name, "--role", "rep", "--password", pw], env=env, check=True,
                       capture_output=True, cwd=ROOT)
    server = subprocess.Popen([cli, "serve", "--port", str(args.port)], env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{args.port}"
    try:
        for _ in range(120):
            try:
                if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(1)
        proc = psutil.Process(server.pid)
        # warm-up: one ask so model load is not counted in RSS growth or latency
        warm_out, warm_err = [], []
        _client(base, *users[0], 1, warm_out, warm_err)
        traces_before = _trace_count(env)
        rss = [proc.memory_info().rss]
        stop = threading.Event()

        def sample():
            while not stop.wait(1.0):
                rss.append(proc.memory_info().rss)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        out: list = []
        errors: list = []
        t0 = time.perf_counter()
        threads = [threading.Thread(target=_client, args=(base, name, pw, args.requests, out, errors))
                   for name, pw in users]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        stop.set()
        sampler.join()
        rss.append(proc.memory_info().rss)
        traces_after = _trace_count(env)
    finally:
        server.terminate()
        server.wait(30)

    statuses: dict[int, int] = {}
    for code, _ in out:
        statuses[code] = statuses.get(code, 0) + 1
    lat = [ms for code, ms in out if code == 200]
    third = max(1, len(rss) // 3)
    report = {
        "clients": args.clients, "requests_per_client": args.requests, "sent": len(out) + len(errors),
        "statuses": statuses, "transport_errors": len(errors), "five_xx": sum(v for k, v in statuses.items() if k >= 500),
        "wall_s": round(wall, 1), "throughput_rps": round(len(out) / wall, 2),
        "p50_ms": round(statistics.median(lat), 1) if lat else None, "p95_ms": round(_pct(lat, 95), 1) if lat else None,
        "served_200": statuses.get(200, 0), "trace_rows_written": traces_after - traces_before,
        "rss_mb_first_third_mean": round(statistics.mean(rss[:third]) / 2**20, 1),
        "rss_mb_last_third_mean": round(statistics.mean(rss[-third:]) / 2**20, 1),
        "rss_mb_max": round(max(rss) / 2**20, 1), "cpu_count": os.cpu_count(), "loadavg_end": os.getloadavg(),
    }
    print(json.dumps(report, indent=2))
    results = ROOT / "benchmarks" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / f"load_ask_{time.strftime('%Y%m%dT%H%M%S')}.json").write_text(json.dumps(report, indent=2))
    ok = report["five_xx"] == 0 and not errors and report["trace_rows_written"] == report["served_200"]
    sys.exit(0 if ok else 1)


def _trace_count(env: dict) -> int:
    code = ("from policydesk.config import Settings; from policydesk.storage.engine import open_database; "
            "from sqlalchemy import text; db = open_database(Settings()); "
            "c = db.owner.connect(); print(c.execute(text('SELECT count(*) FROM traces')).scalar_one())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    return int(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
