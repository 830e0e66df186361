"""Bounded loopback load test of the ask endpoint.

    .venv/bin/python benchmarks/load_ask.py --clients 8 --requests 200 [--workers 2] [--tree DIR]

Starts `policydesk serve` on its own embedded Postgres (a fresh data dir under /tmp), signs in
one rep per client, and has each client POST /ask `--requests` times (questions cycle through
a fixed list, some with dates). Stops by itself. Reports status counts, p50/p95 latency,
trace rows written vs requests served, whether the trace hash chain verifies, the server's RSS
over the run, and CPU seconds per request of the server (every worker), of Postgres (every
process of the cluster) and of this client process, with the load average before and after.

`--tree DIR` runs the server (and its setup) from another checkout, e.g. a `git archive` of
main, so a before/after pair uses the same client; `--workers N` passes `serve --workers N`
(leave it out for a checkout whose `serve` has no such option).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil

from saved import results_path  # noqa: E402  (benchmarks/saved.py, beside this script)

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
    ap.add_argument("--workers", type=int, default=None, help="serve --workers N (default: not passed)")
    ap.add_argument("--tree", type=Path, default=ROOT, help="checkout the server runs from (PYTHONPATH)")
    ap.add_argument("--out", type=Path, default=None, help="directory for the JSON (default: DATA_DIR/results/benchmarks)")
    ap.add_argument("--keep-data", action="store_true", help="keep the run's data dir (deleted by default)")
    ap.add_argument("--label", default="", help="a name stored in the JSON (e.g. main, branch)")
    args = ap.parse_args()

    tree = args.tree.resolve()
    data = Path(tempfile.mkdtemp(prefix="policydesk-load-"))
    env = dict(os.environ, POLICYDESK_DATA_DIR=str(data), HF_HUB_OFFLINE="1", PYTHONPATH=str(tree))
    env.pop("DATABASE_URL", None)
    cli = str(BIN / "policydesk")
    subprocess.run([cli, "demo", "--no-serve"], env=env, check=True, capture_output=True, cwd=tree)
    users = [(f"load{i}", f"load-password-{i}") for i in range(args.clients)]  # 12+ characters
    for name, pw in users:
        subprocess.run([cli, "users", "add", name, "--role", "rep", "--password", pw], env=env, check=True,
                       capture_output=True, cwd=tree)
    serve = [cli, "serve", "--port", str(args.port)] + (["--workers", str(args.workers)] if args.workers else [])
    server = subprocess.Popen(serve, env=env, cwd=tree,
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
        # warm-up: one pass over the questions per client, so every worker has loaded its model
        # and answered each kind of question before anything is counted
        warm_out, warm_err = [], []
        warm = [threading.Thread(target=_client, args=(base, name, pw, len(QUESTIONS), warm_out, warm_err))
                for name, pw in users]
        for t in warm:
            t.start()
        for t in warm:
            t.join()
        traces_before = _trace_count(env)
        sessions_before = _sessions(env)
        rss = [_rss(proc)]
        stop = threading.Event()

        def sample():
            while not stop.wait(1.0):
                rss.append(_rss(proc))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        out: list = []
        errors: list = []
        pgdata = data / "pg"
        load_before = os.getloadavg()
        cpu0 = (_tree_cpu(proc), _postgres_cpu(pgdata), time.process_time())
        t0 = time.perf_counter()
        threads = [threading.Thread(target=_client, args=(base, name, pw, args.requests, out, errors))
                   for name, pw in users]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        cpu1 = (_tree_cpu(proc), _postgres_cpu(pgdata), time.process_time())
        load_after = os.getloadavg()
        stop.set()
        sampler.join()
        rss.append(_rss(proc))
        traces_after = _trace_count(env)
        sessions_after = _sessions(env)
        chain = _chain_ok(env)
    finally:
        server.terminate()
        server.wait(30)
        if not args.keep_data:
            _stop_cluster(data / "pg")  # normally already stopped with its last user, the server
            shutil.rmtree(data, ignore_errors=True)

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
        "rss_mb_max": round(max(rss) / 2**20, 1), "cpu_count": os.cpu_count(),
        # backends Postgres started during the run (pg_stat_database.sessions): connections a pool
        # opened and closed again, each a fork plus authentication
        "postgres_sessions_per_request": round((sessions_after - sessions_before - 1) / max(1, len(out)), 3),
        "label": args.label, "tree": str(tree), "workers": args.workers or 1, "trace_chain_ok": chain,
        "loadavg_before": load_before, "loadavg_end": load_after,
        # CPU seconds per request sent: the server (all its processes), Postgres, this client
        "cpu_ms_per_request": {k: round((b - a) / max(1, len(out)) * 1000, 1) for k, a, b in
                               zip(("server", "postgres", "client"), cpu0, cpu1)},
    }
    print(json.dumps(report, indent=2))
    path = results_path("load_ask", suffix=args.label, out=args.out)
    path.write_text(json.dumps(report, indent=2))
    print(f"saved {path}")
    ok = (report["five_xx"] == 0 and not errors and report["trace_rows_written"] == report["served_200"]
          and chain)
    sys.exit(0 if ok else 1)


def _rss(proc: psutil.Process) -> int:
    """Resident memory of the server and its worker processes."""
    return sum(p.memory_info().rss for p in _tree(proc))


def _tree(proc: psutil.Process) -> list[psutil.Process]:
    try:
        return [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return [proc]


def _tree_cpu(proc: psutil.Process) -> float:
    """CPU seconds of `proc`, its live descendants, and the children it has reaped (a postmaster
    reaps every backend that exits: a pool's overflow connections come and go)."""
    try:
        t = proc.cpu_times()
        total = t.children_user + t.children_system
    except psutil.NoSuchProcess:
        return float("nan")
    for p in _tree(proc):
        try:
            total += sum(p.cpu_times()[:2])
        except psutil.NoSuchProcess:
            continue
    return total


def _postgres_cpu(pgdata: Path) -> float:
    """CPU seconds of the embedded cluster: its postmaster (from postmaster.pid) and children."""
    try:
        return _tree_cpu(psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0])))
    except (OSError, ValueError, psutil.NoSuchProcess):
        return float("nan")


def _stop_cluster(pgdata: Path) -> None:
    """Fast-stop the run's embedded Postgres if it outlived the server (seen once in 11 runs:
    the data dir was deleted under a running postmaster)."""
    try:
        master = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
    except (OSError, ValueError, psutil.NoSuchProcess):
        return
    master.send_signal(signal.SIGINT)
    try:
        master.wait(30)
    except psutil.TimeoutExpired:
        master.kill()


_OPEN = ("from policydesk.config import Settings; from policydesk.storage.engine import open_database; "
         "from sqlalchemy import text; db = open_database(Settings()); ")


def _in_tree(env: dict, code: str) -> str:
    """The last line `code` prints, run after _OPEN by the server's tree against its database."""
    out = subprocess.run([sys.executable, "-c", _OPEN + code], env=env, capture_output=True, text=True, check=True,
                         cwd=env["PYTHONPATH"])
    return out.stdout.strip().splitlines()[-1]


def _chain_ok(env: dict) -> bool:
    """`policydesk traces verify`-style check of the trace hash chain after the run."""
    return _in_tree(env, "from policydesk.storage.chain import verify_chain; "
                         "r = verify_chain(db.owner); print(r.ok, r.rows)").startswith("True")


def _sessions(env: dict) -> int:
    """Sessions ever established on the server's database (Postgres 14+), this check's own included."""
    return int(_in_tree(env, "c = db.owner.connect(); print(c.execute(text("
                             "'SELECT sessions FROM pg_stat_database WHERE datname = current_database()')).scalar_one())"))


def _trace_count(env: dict) -> int:
    return int(_in_tree(env, "c = db.owner.connect(); print(c.execute(text('SELECT count(*) FROM traces')).scalar_one())"))


if __name__ == "__main__":
    main()
