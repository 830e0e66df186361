"""Measure a running `policydesk stack` (or `serve` behind PgBouncer): each serve worker's memory
after warm-up and after N asks over HTTP, and PgBouncer's peak client and server connections
while they ran. The figures in docs/deploy.md, "Sizing", come from this script.

    python deploy/sizing.py --url http://127.0.0.1:8000 --stack-dir DATA_DIR/stack \\
        --user NAME --password PW --asks 50 --clients 4 [--questions evals/golden_dev.yaml]

Workers are the children of the `serve --port PORT` process; RSS and USS (memory only that process holds) are read with psutil. Pool peaks come from
PgBouncer's console (SHOW POOLS), polled every 0.2 s by the stack's owner login.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import httpx
import psutil
import psycopg
import yaml


class _Csrf(HTMLParser):
    token = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and a.get("name") == "csrf_token":
            self.token = a.get("value", "")


def csrf(html: str) -> str:
    p = _Csrf()
    p.feed(html)
    return p.token


def workers_on(port: int) -> list[psutil.Process]:
    """The worker processes of the `serve` listening on `port` (its children, less the
    multiprocessing resource tracker); with one worker, `serve` itself."""
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if "serve" in cmd and "--port" in cmd and cmd[cmd.index("--port") + 1] == str(port):
            kids = [c for c in p.children() if "resource_tracker" not in " ".join(c.cmdline())]
            return sorted(kids, key=lambda c: c.pid) or [p]
    raise SystemExit(f"no `serve --port {port}` process found")


def memory(procs: list[psutil.Process]) -> list[dict]:
    out = []
    for p in procs:
        full = p.memory_full_info()
        out.append({"pid": p.pid, "rss_mb": round(full.rss / 2**20), "uss_mb": round(full.uss / 2**20)})
    return out


def pool_poller(admin_url: str, stop: threading.Event, peaks: dict) -> None:
    with psycopg.connect(admin_url, autocommit=True, cursor_factory=psycopg.ClientCursor) as conn:
        while not stop.is_set():
            cur = conn.execute("SHOW POOLS")
            cols = [d.name for d in cur.description]
            for row in cur.fetchall():
                r = dict(zip(cols, row))
                if r["database"] == "pgbouncer":
                    continue
                key = r["user"]
                peak = peaks.setdefault(key, {"cl_active": 0, "cl_waiting": 0, "sv_active": 0, "sv_total": 0,
                                              "maxwait_s": 0})
                peak["cl_active"] = max(peak["cl_active"], r["cl_active"])
                peak["cl_waiting"] = max(peak["cl_waiting"], r["cl_waiting"])
                peak["sv_active"] = max(peak["sv_active"], r["sv_active"])
                total = sum(r.get(k, 0) for k in ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login"))
                peak["sv_total"] = max(peak["sv_total"], total)
                peak["maxwait_s"] = max(peak["maxwait_s"], r.get("maxwait", 0))
            time.sleep(0.2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True)
    ap.add_argument("--stack-dir", type=Path, required=True, help="DATA_DIR/stack (its env file names the pooler)")
    ap.add_argument("--user", required=True)
    ap.add_argument("--password", required=True)
    ap.add_argument("--asks", type=int, default=50)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--questions", type=Path, default=Path("evals/golden_dev.yaml"))
    args = ap.parse_args()

    env = dict(line.split("=", 1) for line in (args.stack_dir / "env").read_text().splitlines() if "=" in line)
    admin_url = urlparse(env["DATABASE_URL"])._replace(path="/pgbouncer").geturl()
    questions = [q["question"] for q in yaml.safe_load(args.questions.read_text())["items"]]
    port = urlparse(args.url).port
    procs = workers_on(port)
    warm = memory(procs)

    peaks: dict = {}
    stop = threading.Event()
    poller = threading.Thread(target=pool_poller, args=(admin_url, stop, peaks), daemon=True)
    poller.start()
    latencies, codes, lock = [], [], threading.Lock()
    counter = iter(range(args.asks))

    def client() -> None:
        with httpx.Client(base_url=args.url, timeout=300) as c:
            r = c.post("/login", data={"name": args.user, "password": args.password,
                                       "csrf_token": csrf(c.get("/login").text)})
            assert r.status_code == 303, r.text[:300]
            token = csrf(c.get("/ask").text)
            for i in counter:
                t0 = time.monotonic()
                r = c.post("/ask", data={"question": questions[i % len(questions)], "csrf_token": token})
                with lock:
                    latencies.append(time.monotonic() - t0)
                    codes.append(r.status_code)

    t0 = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    stop.set()
    poller.join(5)
    after = workers_on(port)  # the same pids, unless the supervisor restarted a worker meanwhile
    print(json.dumps({
        "workers": len(procs), "after_warm_up": warm, f"after_{args.asks}_asks": memory(after),
        "workers_restarted": sorted({p.pid for p in procs} ^ {p.pid for p in after}),
        "asks": len(codes), "status_codes": sorted(set(codes)), "clients": args.clients,
        "wall_s": round(wall, 1), "median_ask_s": round(statistics.median(latencies), 2),
        "max_ask_s": round(max(latencies), 2), "pgbouncer_peaks_per_login": peaks,
    }, indent=2))


if __name__ == "__main__":
    main()
