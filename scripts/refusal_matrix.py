"""Print the confusion matrix of the early refusal screen on the labelled cases.

Usage: python scripts/refusal_matrix.py [CASES_YAML]
Rows are the expected label, columns the predicted one. Also prints precision
and recall of "refuse" (any refusal kind counts as refuse) and lists misses.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from policydesk.access import clearance_for
from policydesk.refusal import screen_question

DEFAULT_CASES = Path(__file__).resolve().parents[1] / "tests" / "data" / "refusal_cases.yaml"
LABELS = ("pass", "member_identifier", "claim_action", "out_of_scope")


def load_cases(path: Path = DEFAULT_CASES) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)["cases"]


def predict(question: str, role: str) -> str:
    refusal = screen_question(question, clearance_for(role))
    return "pass" if refusal is None else refusal.reason.value


def confusion_matrix(cases: list[dict]) -> dict[str, dict[str, int]]:
    """matrix[expected][predicted] -> count; labels outside LABELS get their own row/column."""
    labels = list(LABELS)
    rows = [(c["expected"], predict(c["question"], c["role"])) for c in cases]
    for expected, predicted in rows:
        for label in (expected, predicted):
            if label not in labels:
                labels.append(label)
    matrix = {e: {p: 0 for p in labels} for e in labels}
    for expected, predicted in rows:
        matrix[expected][predicted] += 1
    return matrix


def refuse_precision_recall(matrix: dict[str, dict[str, int]]) -> tuple[float, float]:
    """Binary refuse-vs-pass: a refusal of the wrong kind still counts as refuse."""
    tp = sum(n for e, row in matrix.items() if e != "pass" for p, n in row.items() if p != "pass")
    fp = sum(n for p, n in matrix["pass"].items() if p != "pass")
    fn = sum(row["pass"] for e, row in matrix.items() if e != "pass")
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall


def format_matrix(matrix: dict[str, dict[str, int]]) -> str:
    labels = list(matrix)
    width = max(len(label) for label in labels) + 2
    head = "expected \\ predicted".ljust(width + 4) + "".join(l.rjust(width) for l in labels)
    lines = [head]
    for e in labels:
        lines.append(e.ljust(width + 4) + "".join(str(matrix[e][p]).rjust(width) for p in labels))
    precision, recall = refuse_precision_recall(matrix)
    total = sum(sum(row.values()) for row in matrix.values())
    correct = sum(matrix[l][l] for l in labels)
    lines.append("")
    lines.append(f"cases: {total}  exact: {correct}/{total}")
    lines.append(f"refuse precision: {precision:.3f}  refuse recall: {recall:.3f}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    path = Path(argv[1]) if len(argv) > 1 else DEFAULT_CASES
    cases = load_cases(path)
    print(format_matrix(confusion_matrix(cases)))
    misses = [
        (c, predict(c["question"], c["role"]))
        for c in cases
        if predict(c["question"], c["role"]) != c["expected"]
    ]
    for case, predicted in misses:
        print(f"MISS [{case['role']}] expected={case['expected']} predicted={predicted}: {case['question']}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
