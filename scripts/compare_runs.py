"""Two eval runs of the same split, item by item: which recorded fields differ, and for the full
system how many items gained or lost "correct and cited", "key fact" and "declined". Prints counts
only (item ids with --ids).

    .venv/bin/python scripts/compare_runs.py RUN_DIR_A RUN_DIR_B   # folders `policydesk eval` printed

Used to show that an engine change leaves every answer as it was (no field differs but the trace
ids), or what it moved.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

IGNORED = {"trace_id"}  # new on every run
OUTCOMES = ("correct_and_cited", "key_fact", "declined")


def _items(run: Path) -> dict[tuple[str, str], dict]:
    with open(run / "items.jsonl", encoding="utf-8") as fh:
        return {(d["item_id"], d["system"]): d for d in map(json.loads, fh)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_a", type=Path)
    ap.add_argument("run_b", type=Path)
    ap.add_argument("--ids", action="store_true", help="name the items that moved")
    args = ap.parse_args(argv)
    a, b = _items(args.run_a), _items(args.run_b)
    if a.keys() != b.keys():
        print(f"different items: {len(a.keys() - b.keys())} only in A, {len(b.keys() - a.keys())} only in B")
        return 2
    fields: dict[str, int] = {}
    for key in a:
        for name in a[key].keys() | b[key].keys():
            if name not in IGNORED and a[key].get(name) != b[key].get(name):
                fields[name] = fields.get(name, 0) + 1
    print(f"{len(a)} item x system rows; rows differing, per field: "
          + (", ".join(f"{k} {v}" for k, v in sorted(fields.items())) or "none"))
    for outcome in OUTCOMES:
        gained = sorted(k[0] for k in a if k[1] == "full" and not a[k].get(outcome) and b[k].get(outcome))
        lost = sorted(k[0] for k in a if k[1] == "full" and a[k].get(outcome) and not b[k].get(outcome))
        line = f"full system, {outcome}: {len(gained)} gained, {len(lost)} lost"
        if args.ids and (gained or lost):
            line += f" (gained {', '.join(gained) or '-'}; lost {', '.join(lost) or '-'})"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
