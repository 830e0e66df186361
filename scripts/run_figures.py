"""Aggregate figures of one eval run, over a subset of its items, and what other abstain thresholds
would do with its similarities. Prints counts and rates only, never an item.

    .venv/bin/python scripts/run_figures.py RUN_DIR --golden evals/golden_test.yaml --threshold 0.35

RUN_DIR is the folder `policydesk eval` printed ("results: ..."; by default under DATA_DIR/results/evals/).

--golden FILE (repeatable): only the items whose ids are in these files (default: every item of the
run), e.g. the 107 frozen test questions without golden_products.yaml's. --threshold T (repeatable):
how many answerable and out-of-scope / not-in-corpus items T would abstain on, from the run's
calibration (run.json), next to the stored value the run used. The "what to decline" outcomes come
from the run's split (run.json "split"): refused by the gate, abstained, or answered, per kind.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from policydesk.evals.calibrate import UNANSWERABLE_KINDS  # noqa: E402
from policydesk.evals.golden import load_golden, load_split  # noqa: E402
from policydesk.evals.metrics import RefusalCounts, mean  # noqa: E402


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a run folder, as `policydesk eval` printed it")
    ap.add_argument("--golden", type=Path, action="append", default=[], help="only items of these golden files")
    ap.add_argument("--threshold", type=float, action="append", default=[], help="abstain threshold to compare")
    args = ap.parse_args(argv)

    run = json.loads((args.run / "run.json").read_text(encoding="utf-8"))
    records = [json.loads(line) for line in (args.run / "items.jsonl").read_text(encoding="utf-8").splitlines() if line]
    wanted = {i.id for i in load_golden(args.golden).items} if args.golden else None
    kinds = {i.id: i.refusal_kind for i in load_split(run["split"]).items} if run.get("split") else {}

    def base(item_id: str) -> str:
        return item_id.split("#")[0]  # repeats are stored as id#n

    print(f"run {args.run.name}: split {run.get('split')}, stored threshold {run.get('abstain_threshold')}"
          + (f", items of {', '.join(map(str, args.golden))}" if args.golden else ""))
    for system in ("full", "baseline"):
        recs = [r for r in records if r["system"] == system and (wanted is None or base(r["item_id"]) in wanted)]
        if not recs:
            continue
        answerable = [r for r in recs if not r["expect_refusal"]]
        counts = RefusalCounts()
        for r in recs:
            counts.add(r["expect_refusal"], r["declined"])
        print(f"  {system}: {len(recs)} items; correct and cited {pct(mean(r['correct_and_cited'] for r in answerable))}, "
              f"key fact only {pct(mean(r['key_fact'] for r in answerable))}, refusal recall {pct(counts.recall)} "
              f"(precision {pct(counts.precision)}), over-refusal {pct(counts.over_refusal)}")
        outcomes = Counter()
        for r in recs:
            kind = kinds.get(base(r["item_id"]))
            if kind in UNANSWERABLE_KINDS:
                outcomes[kind, "refused" if r["refused"] else "abstained" if r["abstained"] else "answered"] += 1
        if outcomes:
            print("    to decline: " + ", ".join(f"{k} {how} {n}" for (k, how), n in sorted(outcomes.items())))

    cal = run.get("calibration") or {}
    answerable, unanswerable = cal.get("answerable") or {}, cal.get("out_of_scope") or {}
    if wanted is not None:
        answerable = {k: v for k, v in answerable.items() if k in wanted}
        unanswerable = {k: v for k, v in unanswerable.items() if k in wanted}
    for t in [v for v in [cal.get("current")] if v is not None] + args.threshold:
        print(f"  threshold {t}: abstains on {sum(v < t for v in answerable.values())} of {len(answerable)} answerable, "
              f"{sum(v < t for v in unanswerable.values())} of {len(unanswerable)} out-of-scope / not-in-corpus")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
