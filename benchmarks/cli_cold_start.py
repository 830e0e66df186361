"""Wall time of `policydesk ask` from a cold process, local and through `--server`.

    POLICYDESK_DATA_DIR=/tmp/pd-cli/data .venv/bin/python benchmarks/cli_cold_start.py \
        --as USER --token TOKEN --runs 5

Needs a data dir with the corpus ingested, USER (a rep) and an API token for USER
(`policydesk ingest corpus; policydesk users add USER --role rep; policydesk tokens create USER`).
Each run is a new process: `python -c pass` (the interpreter alone, the floor), `policydesk
--help`, `policydesk ask QUESTION --as USER --json` (local: opens Postgres, loads the embedding
model, answers) and `policydesk ask QUESTION --server URL --json` against a `policydesk serve`
this script starts on the same data dir (and stops). Prints one JSON object with every run and
the medians, plus each median as a multiple of the interpreter floor measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

BIN = Path(sys.executable).parent
QUESTION = "What is the timely filing limit?"


def _time(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    took = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} exited {out.returncode}: {out.stderr[-500:]}")
    return took


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--as", dest="user", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--port", type=int, default=8131)
    args = ap.parse_args(argv)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    pd = [str(BIN / "python"), "-m", "policydesk.cli"]
    url = f"http://127.0.0.1:{args.port}"
    commands = {
        "python_floor": [str(BIN / "python"), "-c", "pass"],
        "help": [*pd, "--help"],
        "ask_local": [*pd, "ask", QUESTION, "--as", args.user, "--json"],
        "ask_server": [*pd, "ask", QUESTION, "--server", url, "--token", args.token, "--json"],
    }
    server = subprocess.Popen([*pd, "serve", "--port", str(args.port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(240):
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        runs = {name: [] for name in commands}
        load_start = os.getloadavg()
        for _ in range(args.runs):  # interleaved, so load drifts hit every command alike
            for name, cmd in commands.items():
                runs[name].append(round(_time(cmd, env), 3))
    finally:
        server.terminate()
        server.wait(30)
    medians = {name: statistics.median(r) for name, r in runs.items()}
    print(json.dumps({"runs_s": runs, "median_s": medians,
                      "x_floor": {n: round(m / medians["python_floor"], 1) for n, m in medians.items()},
                      "loadavg_start": load_start, "loadavg_end": os.getloadavg()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
