"""Time the refusal gate per question: p50 / p95, without and with the embedding call.

Usage: python benchmarks/refusal_bench.py [--database NAME] [--repeats N]

Runs every question of the labelled splits (train, validation, test, test_v2, regression) through the
production gate (`policydesk.screening.refusal.gate_for`, topic gate over the demo corpus in NAME, as in
scripts/refusal_matrix.py), after one warm-up pass that fits the classifier and loads the models:

- "without the embedding call": both embeddings (the local one for the intent classifier and
  the retrieval model's for the topic gate) are computed before the clock starts and served
  from a cache, so the figure is rules, redaction, logistic regression, phrase matching and the
  two nearest-section queries;
- "with it": the same gate with both embeddings computed inside the timed call, bypassing the
  process's text-vector cache (`policydesk.providers.local.VectorCache`): after the warm-up pass
  every question is cached, and a cached vector would time nothing. A question asked for the
  first time pays this.

Prints wall-clock p50 / p95 and, beside them, the same for the thread's CPU time: on a shared machine
a call preempted by another process shows a wall time of a scheduler slice (~4 ms) that its CPU time
does not, so the CPU figure says what the gate costs and the wall figure what a caller waited.
Asserts nothing (a timed assertion would fail on a busy machine).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # refusal_matrix builds the gate

from refusal_matrix import DEFAULT_DATABASE, demo_gate  # noqa: E402


class _Cached:
    """Serve precomputed vectors: times the gate without the embedding call."""

    def __init__(self, embed, texts_to_vectors: dict):
        self._embed, self._cache = embed, texts_to_vectors

    def __call__(self, texts):
        import numpy as np

        return np.stack([self._cache[t] for t in texts])


class _Uncached:
    """Embed every time with the local model: times the gate with the embedding call."""

    def __init__(self, model):
        self._model = model

    def __call__(self, texts):
        import numpy as np

        return np.asarray(self._model.get_text_embedding_batch(list(texts)), dtype=np.float32)


class _CachedQuery:
    def __init__(self, cache: dict):
        self._cache = cache

    def get_query_embedding(self, query: str):
        return self._cache[query]


def _percentiles(samples_ms: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(samples_ms, n=100, method="inclusive")
    return statistics.median(samples_ms), q[94]


def main(argv: list[str]) -> int:
    from policydesk.accounts.access import clearance_for
    from policydesk.evals.refusals import load_cases

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=DEFAULT_DATABASE)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv[1:])
    gate, db = demo_gate(args.database)
    cases = [c for split in ("train", "validation", "test", "test_v2", "regression")
             for c in load_cases(split)]
    work = [(c["question"], clearance_for(c["role"])) for c in cases]
    for q, clearance in work:  # warm-up: fit, load models, fill caches
        gate.screen(q, clearance)

    # what the gate embeds: the redacted question (both models)
    from policydesk.detectors.redact import redact

    texts = sorted({redact(q, gate.plan_patterns).text.strip() for q, _ in work})
    local = dict(zip(texts, gate.intent._embed(texts)))
    query = {t: gate.embed_model.get_query_embedding(t) for t in texts}

    results = {}
    for label, cached in (("without the embedding call", True), ("with the embedding call", False)):
        intent_embed, embed_model = gate.intent._embed, gate.embed_model
        if cached:
            gate.intent._embed, gate.embed_model = _Cached(intent_embed, local), _CachedQuery(query)
        else:
            from policydesk.screening.intent import local_model

            gate.intent._embed = _Uncached(local_model())
        samples, cpu = [], []
        try:
            for _ in range(args.repeats):
                for q, clearance in work:
                    t0, c0 = time.perf_counter(), time.thread_time()
                    gate.screen(q, clearance)
                    samples.append((time.perf_counter() - t0) * 1000)
                    cpu.append((time.thread_time() - c0) * 1000)
        finally:
            gate.intent._embed, gate.embed_model = intent_embed, embed_model
        results[label] = _percentiles(samples)
        p50, p95 = results[label]
        c50, c95 = _percentiles(cpu)
        print(f"gate {label}: n={len(samples)} p50={p50:.2f} ms p95={p95:.2f} ms "
              f"(thread CPU time p50={c50:.2f} ms p95={c95:.2f} ms)")
    db.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
