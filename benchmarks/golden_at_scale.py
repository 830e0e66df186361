"""The golden set's answers on a database that also holds 10^4-10^5 filler chunks, per full-text
candidate cap (settings.TEXT_CANDIDATES, migration 0016): what the cap costs in answers, not only
in recall against the uncapped ranking (benchmarks/text_candidates.py).

On a database kept by `policydesk bench --scale N --filler realistic --keep` (the demo corpus is
ingested there, then N filler chunks), every item of the split runs through the full pipeline
once per cap, the uncapped ranking (cap 2^31-1) first as the reference. Per cap: correct and
cited, recall@k and right version in context over the split, and the items whose outcome differs
from the uncapped run. No leak matrix and no calibration (the eval command does those on the demo
corpus alone); the similarity threshold is the stored one, as in `policydesk eval`.

    POLICYDESK_DATA_DIR=/tmp/pdbench/data .venv/bin/python benchmarks/golden_at_scale.py DBNAME \
        --caps 8000,4000,2000 --split dev
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from policydesk.config import get_settings
from policydesk.evals.golden import load_split
from policydesk.evals.harness import run_eval
from policydesk.providers import embedding_for, llm_for
from policydesk.ops.runtime import open_migrated

from saved import results_path  # noqa: E402  (benchmarks/saved.py, beside this script)

UNCAPPED = 2**31 - 1


def _outcomes(run) -> dict[str, dict]:
    return {r.item_id: {"correct_and_cited": bool(r.correct_and_cited), "recall": r.recall,
                        "right_version": r.right_version, "context": r.context_ids}
            for r in run.records if r.system == "full"}


def _mean(values) -> float | None:
    values = [float(v) for v in values if v is not None]
    return round(sum(values) / len(values), 4) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database")
    parser.add_argument("--caps", default="8000,4000,2000")
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--out", type=Path, default=None, help="directory for the JSON (default: DATA_DIR/results/benchmarks)")
    args = parser.parse_args()
    settings = get_settings()
    if settings.GEMINI_API_KEY:
        settings = settings.model_copy(update={"GEMINI_API_KEY": None})  # offline figures only
    db = open_migrated(settings, args.database)
    embed_model, llm = embedding_for(settings), llm_for(settings)
    gold = load_split(args.split)
    out = {"database": args.database, "split": args.split, "items": len(gold.items), "loadavg_start": os.getloadavg(),
           "caps": {}}
    reference = None
    try:
        for cap in [UNCAPPED] + [int(c) for c in args.caps.split(",")]:
            run = run_eval(db, settings.model_copy(update={"TEXT_CANDIDATES": cap}), gold, embed_model=embed_model,
                           llm=llm, progress=False, leak_matrix=False, do_calibrate=False)
            got = _outcomes(run)
            reference = reference or got
            label = "uncapped" if cap == UNCAPPED else str(cap)
            row = {
                "correct_and_cited": _mean(o["correct_and_cited"] for o in got.values()),
                "recall_at_k": _mean(o["recall"] for o in got.values()),
                "right_version": _mean(o["right_version"] for o in got.values()),
                "filler_in_context": _mean(any(c.startswith("SYN-") for c in o["context"]) for o in got.values()),
                "lost_vs_uncapped": sorted(i for i, o in got.items()
                                           if reference[i]["correct_and_cited"] and not o["correct_and_cited"]),
                "gained_vs_uncapped": sorted(i for i, o in got.items()
                                             if o["correct_and_cited"] and not reference[i]["correct_and_cited"]),
                "context_changed_vs_uncapped": sum(o["context"] != reference[i]["context"] for i, o in got.items()),
            }
            out["caps"][label] = row
            print(label, json.dumps({k: v for k, v in row.items()}), flush=True)
    finally:
        db.dispose()
    out["loadavg_end"] = os.getloadavg()
    path = results_path("golden_at_scale", suffix=args.split, out=args.out)
    path.write_text(json.dumps(out, indent=2))
    print(f"saved {path}")


if __name__ == "__main__":
    main()
