"""Precision and recall of the what-changed detector (policydesk/screening/whatchanged.py) on labelled phrasings.

Usage: python scripts/what_changed_matrix.py [--split test|dev|PATH] [--misses]

  --split test  (default) the frozen held-out file tests/data/what_changed/test.yaml, with the
                detector fitted on the dev file: the figure to report (docs/what_changed.md).
  --split dev   leave-one-out on the dev file (each phrasing scored by a detector fitted on the
                others): what tuning may look at. The old pattern list is scored alongside.
Offline: the local MiniLM model only. Exit 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TEST_FILE = REPO / "tests" / "data" / "what_changed" / "test.yaml"


def _scores(pairs: list[tuple[bool, bool]]) -> tuple[float, float, int, int, int, int]:
    tp = sum(1 for truth, said in pairs if truth and said)
    fp = sum(1 for truth, said in pairs if not truth and said)
    fn = sum(1 for truth, said in pairs if truth and not said)
    tn = sum(1 for truth, said in pairs if not truth and not said)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall, tp, fp, fn, tn


def _line(name: str, pairs) -> str:
    p, r, tp, fp, fn, tn = _scores(pairs)
    return f"{name:<22} precision {p:.3f}  recall {r:.3f}  (tp {tp}, fp {fp}, fn {fn}, tn {tn}; n={len(pairs)})"


def main(argv: list[str]) -> int:
    from policydesk.versions.compare import is_what_changed_question
    from policydesk.config import get_settings
    from policydesk.providers.screening_models import screening_models
    from policydesk.screening.whatchanged import DEV_FILE, WhatChangedDetector, load_cases

    parser = argparse.ArgumentParser()
    parser.add_argument("--split", default="test")
    parser.add_argument("--misses", action="store_true")
    args = parser.parse_args(argv)
    dev = load_cases(DEV_FILE)
    local = screening_models(get_settings())
    if args.split == "dev":
        said = []
        for i, (q, _truth) in enumerate(dev):
            det = WhatChangedDetector(local.embed, train_cases=dev[:i] + dev[i + 1:])
            said.append(det.is_what_changed(q))
        cases = dev
        title = f"dev, leave-one-out ({DEV_FILE.relative_to(REPO)})"
    else:
        path = TEST_FILE if args.split == "test" else Path(args.split)
        cases = load_cases(path)
        said = [p >= local.what_changed.threshold for p in local.what_changed.probabilities([q for q, _ in cases])]
        title = str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
    print(f"what-changed detector on {title}")
    print(_line("detector", [(t, s) for (_q, t), s in zip(cases, said)]))
    print(_line("old pattern list", [(t, is_what_changed_question(q)) for q, t in cases]))
    if args.misses:
        for (q, truth), s in zip(cases, said):
            if truth != s:
                print(f"  {'missed' if truth else 'false'}: {q}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
