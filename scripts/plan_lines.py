"""Ingest screening on the labelled plan lines: precision and recall of refusing member identifiers.

Usage: python scripts/plan_lines.py [--split dev|test|PATH ...] [--misses]
       python scripts/plan_lines.py --write-split DRAFT.yaml

`--split` (default dev) prints, per split, how many member-identifier lines ingest screening
refuses (recall), how many refused lines were member identifiers (precision) and the share of the
plan's own lines that pass, by shape. `--write-split` writes tests/data/plan_lines/dev.yaml and
test.yaml from a draft by the hash rule in `policydesk.evals.plan_lines.split_of` (done once,
before tuning; test.yaml is frozen). docs/ingest.md. Exit 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from policydesk.evals.plan_lines import (  # noqa: E402
    DATA_DIR, evaluate_lines, format_lines_report, load_lines, split_of,
)


def write_split(draft: Path) -> None:
    lines = load_lines(draft)
    for split in ("dev", "test"):
        chosen = [line.model_dump() for line in lines if split_of(line.text) == split]
        header = (f"# Labelled plan lines, {split} split (scripts/plan_lines.py; rule in policydesk/evals/plan_lines.py).\n"
                  + ("# Frozen: its sha256 is pinned in tests/test_plan_lines.py.\n" if split == "test" else ""))
        body = yaml.safe_dump({"lines": chosen}, sort_keys=False, allow_unicode=True, width=200)
        (DATA_DIR / f"{split}.yaml").write_text(header + body, encoding="utf-8")
        print(f"{split}: {len(chosen)} lines")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", action="append", help="dev (tuned on), test (frozen) or a YAML path")
    parser.add_argument("--misses", action="store_true", help="list every line screened wrongly")
    parser.add_argument("--write-split", type=Path, metavar="DRAFT")
    args = parser.parse_args(argv[1:])
    if args.write_split:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        write_split(args.write_split)
        return 0
    for split in args.split or ["dev"]:
        report = evaluate_lines(load_lines(split))
        print(format_lines_report(report, f"== {split}"))
        if args.misses:
            for line in report.misses:
                verdict = "passed" if line.label == "member" else "refused"
                print(f"MISS [{line.source}] {line.label}/{line.shape} {verdict}: {line.text}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
