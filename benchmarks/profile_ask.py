"""Where one web ask's CPU goes: the POST /ask route in-process, profiled.

    POLICYDESK_DATA_DIR=/tmp/pd-prof .venv/bin/python benchmarks/profile_ask.py --asks 80 [--top 40]

The data dir must hold the demo corpus and a rep `load0` (password `load-password-0`), as
`benchmarks/load_ask.py` sets up (`policydesk demo --no-serve`, `policydesk users add`). Builds
the app as `serve` does, signs in, warms up with one pass over the load questions, then runs
`--asks` POSTs of the same questions one after another under cProfile. Prints the process CPU
per ask, Postgres CPU per ask (every process of the embedded cluster), SQL statements and
transactions per ask on each engine, the trace's stage timings (mean), and the cumulative
profile by function. Figures only; no thresholds.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load_ask import QUESTIONS, _token  # noqa: E402  (the same questions as the load test)


def postgres_cpu(pgdata: Path) -> float:
    """CPU seconds of the embedded cluster under `pgdata`: its postmaster and every child
    (backends, checkpointer, ...), read from postmaster.pid. Backends that exited in between are
    not counted (the pools keep theirs open through a run)."""
    try:
        master = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
        procs = [master, *master.children(recursive=True)]
    except (OSError, ValueError, psutil.NoSuchProcess):
        return float("nan")
    total = 0.0
    for p in procs:
        try:
            total += sum(p.cpu_times()[:2])
        except psutil.NoSuchProcess:
            continue
    return total


class _Profiler:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        if kind == "yappi":
            import yappi

            yappi.set_clock_type("cpu")
            self._yappi = yappi
        elif kind == "cprofile":
            self._prof = cProfile.Profile()

    def __enter__(self):
        if self.kind == "yappi":
            self._yappi.start(builtins=False, profile_threads=True)
        elif self.kind == "cprofile":
            self._prof.enable()

    def __exit__(self, *exc) -> None:
        if self.kind == "yappi":
            self._yappi.stop()
        elif self.kind == "cprofile":
            self._prof.disable()

    def report(self, sort: str, top: int) -> str:
        out = io.StringIO()
        if self.kind == "yappi":
            stats = self._yappi.get_func_stats()
            stats.sort("ttot" if sort == "cumulative" else "tsub", "desc")
            for f in list(stats)[:top]:
                out.write(f"{f.ncall:>7} {f.tsub:8.3f} {f.ttot:8.3f}  {f.module.split('site-packages/')[-1]}:"
                          f"{f.lineno}({f.name})\n")
            out.write("(ncall, own CPU s, cumulative CPU s, function; all threads)\n")
        elif self.kind == "cprofile":
            pstats.Stats(self._prof, stream=out).sort_stats(sort).print_stats(top)
        return out.getvalue()


# (module, attribute path) of the pieces of one web ask, timed in thread CPU by --profiler spans.
# A name imported into a route module is patched there too (the route calls its own binding).
SPANS = [
    ("policydesk.web.routes.ask", "date_fields"),
    ("policydesk.web.routes.ask", "product_field"),
    ("policydesk.web.routes.ask", "remember_product"),
    ("policydesk.web.routes.ask", "timelines"),
    ("policydesk.web.routes.ask", "answer_view"),
    ("policydesk.web.routes.ask", "render"),
    ("policydesk.pipeline", "AskPipeline.ask"),
    ("policydesk.pipeline", "AskPipeline._resolve_role"),
    ("policydesk.screening.refusal", "RefusalGate.screen"),
    ("policydesk.extensions.stack", "RequestStack.retrieve"),
    ("policydesk.providers.onnx_local", "OnnxEmbedding._get_query_embedding"),
    ("policydesk.postprocessors.versions", "VersionResolver._postprocess_nodes"),
    ("policydesk.postprocessors.conflicts", "ConflictFlagger._postprocess_nodes"),
    ("policydesk.extensions.stack", "RequestStack.finish"),
    ("policydesk.synthesis.synthesizer", "CitedAnswerSynthesizer.synthesize_outcome"),
    ("policydesk.pipeline", "check_draft"),
    ("policydesk.pipeline", "stale_source_warnings"),
    ("policydesk.pipeline", "AskPipeline._answer_what_changed"),
    ("policydesk.pipeline", "trace_row"),
    ("policydesk.pipeline", "write_trace"),
]


class _Spans:
    """Thread CPU time (time.thread_time) spent inside each function of SPANS, nested included."""

    def __init__(self) -> None:
        import importlib

        self.cpu: Counter = Counter()
        self.calls: Counter = Counter()
        for module_name, path in SPANS:
            owner = importlib.import_module(module_name)
            *parents, attr = path.split(".")
            for p in parents:
                owner = getattr(owner, p)
            setattr(owner, attr, self._wrap(path, getattr(owner, attr)))

    def _wrap(self, name, fn):
        import functools

        @functools.wraps(fn)
        def timed(*a, **k):
            t0 = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                self.cpu[name] += time.thread_time() - t0
                self.calls[name] += 1
        return timed

    def __enter__(self):
        self.cpu.clear()
        self.calls.clear()

    def __exit__(self, *exc) -> None:
        pass

    def report(self, n: int) -> str:
        return "thread CPU per ask (ms), nested spans included in their parents:\n" + "\n".join(
            f"  {name:<48} {self.cpu[name] / n * 1000:7.2f}  ({self.calls[name]} calls)"
            for _, name in SPANS if self.calls[name])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--asks", type=int, default=80)
    ap.add_argument("--top", type=int, default=45)
    ap.add_argument("--sort", default="cumulative", help="cumulative or tottime")
    ap.add_argument("--profiler", choices=["yappi", "cprofile", "spans", "none"], default="spans",
                    help="yappi sees the worker threads the route runs on (CPU clock); cProfile only the "
                         "client thread (install yappi outside the venv: pip install --target DIR yappi)")
    ap.add_argument("--sql", action="store_true", help="print each statement of one pass over the questions")
    ap.add_argument("--user", default="load0")
    ap.add_argument("--password", default="load-password-0")
    args = ap.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sqlalchemy import event
    from starlette.testclient import TestClient

    from policydesk.config import get_settings
    from policydesk.web.app import create_app

    settings = get_settings()
    spans = _Spans() if args.profiler == "spans" else None  # patched before the app imports its routes
    counts: Counter = Counter()
    with TestClient(create_app(settings)) as client:
        db = client.app.state.db
        for label, engine in (("app", db.app), ("owner", db.owner)):
            event.listen(engine, "before_cursor_execute",
                         lambda *a, label=label, **k: counts.update([f"{label} statements"]))
            event.listen(engine, "begin", lambda *a, label=label, **k: counts.update([f"{label} transactions"]))
            event.listen(engine, "checkout", lambda *a, label=label, **k: counts.update([f"{label} checkouts"]))
        token = _token(client.get("/login").text)
        client.post("/login", data={"name": args.user, "password": args.password, "csrf_token": token})
        token = _token(client.get("/ask").text)

        def ask(i: int) -> int:
            q, dates = QUESTIONS[i % len(QUESTIONS)]
            return client.post("/ask", data={"question": q, "csrf_token": token, **dates}).status_code

        statuses = Counter(ask(i) for i in range(len(QUESTIONS)))  # warm-up
        if args.sql:
            def show(conn, cursor, statement, params, context, executemany, label):
                print(f"  [{label} conn {id(conn.connection.dbapi_connection) % 10000}] "
                      + " ".join(statement.split())[:160])
            for label, engine in (("app", db.app), ("owner", db.owner)):
                event.listen(engine, "before_cursor_execute", lambda *a, label=label: show(*a, label=label))
            for i, (q, dates) in enumerate(QUESTIONS):
                print(f"-- {q} {dates}")
                ask(i)
            for label, engine in (("app", db.app), ("owner", db.owner)):
                event.remove(engine, "before_cursor_execute", show)
            return
        counts.clear()
        pgdata = Path(settings.DATA_DIR) / "pg"
        pg0, cpu0, t0 = postgres_cpu(pgdata), time.process_time(), time.perf_counter()
        prof = spans or _Profiler(args.profiler)
        with prof:
            for i in range(args.asks):
                statuses[ask(i)] += 1
        wall, cpu, pg = time.perf_counter() - t0, time.process_time() - cpu0, postgres_cpu(pgdata) - pg0
        # Stage timings from the traces just written (the owner reads them).
        from sqlalchemy import text
        with db.owner.connect() as conn:
            rows = conn.execute(text("SELECT stage_ms, latency_ms FROM traces ORDER BY seq DESC LIMIT :n"),
                                {"n": args.asks}).all()
    stages: dict[str, list[float]] = {}
    for r in rows:
        for k, v in (r.stage_ms or {}).items():
            stages.setdefault(k, []).append(v)
    n = args.asks
    print(f"asks {n}, statuses {dict(statuses)}, load average {os.getloadavg()}")
    print(f"wall per ask {wall / n * 1000:.1f} ms (under cProfile); this process CPU per ask {cpu / n * 1000:.1f} ms; "
          f"Postgres CPU per ask {pg / n * 1000:.1f} ms")
    print("per ask: " + ", ".join(f"{k} {v / n:.2f}" for k, v in sorted(counts.items())))
    print("pipeline latency_ms mean %.1f; stage_ms means: %s" % (
        statistics.mean(r.latency_ms for r in rows),
        ", ".join(f"{k} {statistics.mean(v):.1f}" for k, v in sorted(stages.items()))))
    print(prof.report(n) if spans else prof.report(args.sort, args.top))


if __name__ == "__main__":
    main()
