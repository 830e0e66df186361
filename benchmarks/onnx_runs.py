"""How the fp32 ONNX engine should cut a batch of texts into runs (one ONNX Runtime call each).

Two measurements, CPU seconds of this process (steadier than wall time on a shared machine):
1. What a call costs beyond its tokens: runs of 1, 2, 4 and 8 copies of one demo text cut to
   40, 80 and 130 tokens, one ONNX Runtime thread; CPU per token of each run size, and the extra
   cost of a call in token rows: (per-token CPU alone / per-token CPU in a run of 4) - 1, the
   figure `RUN_OVERHEAD` in providers/onnx_local.py stands for.
2. The demo corpus's chunk texts as a first load hands them to the model (ingest/embedcache.py:
   batches of EMBED_BATCH_SIZE in reading order, two at the model at once, two worker threads),
   cut into fixed runs of 4 texts (the engine before) and into runs cut by cost (now), interleaved
   per repeat: median CPU and wall seconds, padded tokens, and the largest difference between the
   two ways' vectors (fp32 summation order: a run's width changes the sums a little).

    POLICYDESK_DATA_DIR=/tmp/pd-runs .venv/bin/python benchmarks/onnx_runs.py --repeats 7

Prints one JSON object and saves it under --out (default DATA_DIR/results/benchmarks).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from saved import results_path  # noqa: E402  (benchmarks/saved.py, beside this script)

REPO = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=REPO / "corpus")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path, default=None, help="directory for the JSON (default: DATA_DIR/results/benchmarks)")
    args = ap.parse_args(argv)

    from policydesk.config import get_settings
    from policydesk.ingest.chunking import embed_text
    from policydesk.ingest.ingest import plan_directory
    from policydesk.providers import onnx_local
    from policydesk.providers.local import local_embedding

    settings = get_settings()
    model = local_embedding(settings.model_copy(update={"EMBED_ENGINE": "onnx", "EMBED_BATCH_THREADS": 2}))
    runner = model._runner
    _, planned = plan_directory(args.corpus, settings)
    texts = list(dict.fromkeys(embed_text(p.source.title, c.text) for p in planned for c in p.chunks))
    loads = [os.getloadavg()]

    # 1. The cost of a call.
    longest = max(runner.token_ids(texts), key=len)
    per_token = {}
    for width in (40, 80, 130):
        row = longest[: width - 1] + longest[-1:]  # [CLS] ... [SEP]
        for size in (1, 2, 4, 8):
            calls = max(8, 160 // size)
            runner.run([row] * size)
            times = []
            for _ in range(args.repeats):
                c0 = time.process_time()
                for _ in range(calls):
                    runner.run([row] * size)
                times.append((time.process_time() - c0) / calls / (size * width))
            per_token[(width, size)] = min(times)  # the least disturbed of the repeats
    call_cost = {w: per_token[(w, 1)] / per_token[(w, 4)] - 1 for w in (40, 80, 130)}
    loads.append(os.getloadavg())

    # 2. The demo texts in the ingest's batches, fixed runs of 4 against runs cut by cost.
    batch = settings.EMBED_BATCH_SIZE
    batches = [texts[i:i + batch] for i in range(0, len(texts), batch)]
    ids = [runner.token_ids(b) for b in batches]
    ways = {"fixed runs of 4": lambda lengths: _fixed(lengths, 4),
            "runs cut by cost": lambda lengths: onnx_local.runs_by_cost(lengths, onnx_local.RUN_BATCH["fp32"])}
    pool = model._worker_pool()
    feeders = ThreadPoolExecutor(2)

    def embed(how, batch_ids):
        runs = how([len(x) for x in batch_ids])
        results = list(pool.map(lambda r: runner.run([batch_ids[i] for i in r]), runs[::-1]))[::-1]
        out = np.empty((len(batch_ids), results[0].shape[1]), dtype=np.float32)
        for r, v in zip(runs, results):
            out[r] = v
        return out

    cpu = {k: [] for k in ways}
    wall = {k: [] for k in ways}
    vectors = {}
    for _ in range(args.repeats):
        for name, how in ways.items():
            t0, c0 = time.perf_counter(), time.process_time()
            vectors[name] = np.concatenate(list(feeders.map(lambda b, how=how: embed(how, b), ids)))
            cpu[name].append(time.process_time() - c0)
            wall[name].append(time.perf_counter() - t0)
    loads.append(os.getloadavg())

    def padded(how):
        return sum(len(r) * max(len(b[i]) for i in r) for b in ids for r in how([len(x) for x in b]))

    out = {
        "call_cost_in_token_rows": {str(w): round(c, 3) for w, c in call_cost.items()},
        "cpu_us_per_token": {f"{w} tokens x {s}": round(t * 1e6, 1) for (w, s), t in per_token.items()},
        "texts": len(texts), "tokens": sum(len(x) for b in ids for x in b), "batch": batch, "repeats": args.repeats,
        "ways": {name: {"median_cpu_s": round(statistics.median(cpu[name]), 3),
                        "median_wall_s": round(statistics.median(wall[name]), 3),
                        "padded_tokens": padded(how),
                        "runs": sum(len(how([len(x) for x in b])) for b in ids)} for name, how in ways.items()},
        "max_abs_diff_between_ways": float(np.abs(vectors["fixed runs of 4"] - vectors["runs cut by cost"]).max()),
        "loadavg": loads,
    }
    print(json.dumps(out))
    path = results_path("onnx_runs", out=args.out)
    path.write_text(json.dumps(out, indent=2))
    print(f"saved {path}")
    return 0


def _fixed(lengths: list[int], size: int) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + size] for i in range(0, len(order), size)]


if __name__ == "__main__":
    raise SystemExit(main())
