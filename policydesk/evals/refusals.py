"""The refusal gate measured on labelled cases: confusion matrix, precision and recall per kind.

The labelled cases were split into train / validation / test before any detector was tuned, so a
test split says how the gate does on wording it was not tuned on. Figures are reported from the
frozen test split only; train and validation are for fitting and tuning, and the 101-case
`refusal_cases.yaml` is kept as a regression set. `scripts/refusal_matrix.py` prints this report,
`scripts/refusal_cv.py` the out-of-fold one on train; `benchmarks/refusal_bench.py` times the gate.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import yaml

from policydesk.accounts.access import clearance_for

REPO = Path(__file__).resolve().parents[2]
SPLITS: dict[str, Path] = {
    "train": REPO / "policydesk" / "detectors" / "labelled" / "train.yaml",
    "validation": REPO / "tests" / "data" / "refusal" / "validation.yaml",
    "test": REPO / "tests" / "data" / "refusal" / "test.yaml",
    # Held-out v2: written after `test` had been looked at, before the changes it measures.
    "test_v2": REPO / "tests" / "data" / "refusal" / "test_v2.yaml",
    # Held-out v3: written by someone who had seen neither the gate nor the other splits, frozen
    # before the changes it measures (sha256 in its commit); seen since.
    "test_v3": REPO / "tests" / "data" / "refusal" / "test_v3.yaml",
    # Held-out v4: written without sight of the gate, its data or the earlier splits, frozen before
    # the changes it measures (sha256 in its commit); seen since.
    "test_v4": REPO / "tests" / "data" / "refusal" / "test_v4.yaml",
    # Held-out v5, the current figures (docs/refusal.md): written the same way, frozen before the
    # changes it measures (sha256 pinned by tests/test_refusal.py).
    "test_v5": REPO / "tests" / "data" / "refusal" / "test_v5.yaml",
    "regression": REPO / "tests" / "data" / "refusal_cases.yaml",
}
LABELS = ("pass", "member_identifier", "claim_action", "out_of_scope")
REFUSE_KINDS = LABELS[1:]


def load_cases(path: Path | str) -> list[dict]:
    path = SPLITS.get(str(path), Path(path))
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)["cases"]


def predict(gate, case: dict) -> str:
    """The gate's verdict; a topic-gated question counts as out of scope: the pipeline withholds
    its answer (as `not_answered`) whatever retrieval finds."""
    screening = gate.screen(case["question"], clearance_for(case["role"]))
    if screening.topic_gated:
        return "out_of_scope"
    return "pass" if screening.refusal is None else screening.refusal.reason.value


@dataclass
class Report:
    matrix: dict[str, dict[str, int]]
    misses: list[tuple[dict, str]]

    def count(self, expected: str, predicted: str) -> int:
        return self.matrix.get(expected, {}).get(predicted, 0)

    def precision(self, kind: str) -> float:
        predicted = sum(row.get(kind, 0) for row in self.matrix.values())
        return self.count(kind, kind) / predicted if predicted else 1.0

    def recall(self, kind: str) -> float:
        expected = sum(self.matrix.get(kind, {}).values())
        return self.count(kind, kind) / expected if expected else 1.0

    def refuse_recall(self, kind: str) -> float:
        """Refused at all (any reason), as a share of the cases of this kind."""
        expected = sum(self.matrix.get(kind, {}).values())
        return (expected - self.count(kind, "pass")) / expected if expected else 1.0

    @property
    def false_refusal_rate(self) -> float:
        legit = sum(self.matrix.get("pass", {}).values())
        return (legit - self.count("pass", "pass")) / legit if legit else 0.0


def evaluate(gate, cases: list[dict]) -> Report:
    labels = list(LABELS)
    rows = [(c, predict(gate, c)) for c in cases]
    for c, predicted in rows:
        for label in (c["expected"], predicted):
            if label not in labels:
                labels.append(label)
    matrix = {e: {p: 0 for p in labels} for e in labels}
    for c, predicted in rows:
        matrix[c["expected"]][predicted] += 1
    return Report(matrix, [(c, p) for c, p in rows if p != c["expected"]])


def folds(cases: list[dict], k: int, seed: int = 15) -> list[list[dict]]:
    """k folds stratified by kind (shuffled with random.Random(seed)), every case in exactly one."""
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for case in cases:
        by_kind[case["expected"]].append(case)
    rng = random.Random(seed)
    out: list[list[dict]] = [[] for _ in range(k)]
    i = 0
    for kind in sorted(by_kind):
        group = by_kind[kind][:]
        rng.shuffle(group)
        for case in group:
            out[i % k].append(case)
            i += 1
    return out


def out_of_fold(gate, cases: list[dict], k: int = 5, **classifier_options) -> Report:
    """The gate on every case, with the intent classifier fitted on the other k-1 folds only.

    The classifier is fitted on the train split, so the gate's figure on train says nothing; this
    one does. Everything else in `gate` (identifier detectors, rules, topic gate) is used as is.
    The gate's classifier is put back afterwards.
    """
    from policydesk.screening.intent import IntentClassifier, training_pairs

    fitted = gate.intent
    embed = fitted._embed if fitted is not None else None
    matrix: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    misses: list[tuple[dict, str]] = []
    parts = folds(cases, k)
    try:
        for i, held_out in enumerate(parts):
            rest = training_pairs(c for j, part in enumerate(parts) if j != i for c in part)
            gate.intent = IntentClassifier(embed, cases=rest, **classifier_options)
            report = evaluate(gate, held_out)
            for expected, row in report.matrix.items():
                for predicted, n in row.items():
                    matrix[expected][predicted] += n
            misses += report.misses
    finally:
        gate.intent = fitted
    return Report({e: dict(row) for e, row in matrix.items()}, misses)


def format_report(report: Report, title: str = "") -> str:
    labels = [label for label in report.matrix if any(report.matrix[label].values())
              or any(row.get(label) for row in report.matrix.values())]
    width = max(len(label) for label in labels) + 2
    lines = [title] if title else []
    lines.append("expected \\ predicted".ljust(width + 4) + "".join(label.rjust(width) for label in labels))
    for e in labels:
        lines.append(e.ljust(width + 4) + "".join(str(report.matrix[e][p]).rjust(width) for p in labels))
    total = sum(sum(row.values()) for row in report.matrix.values())
    exact = sum(report.matrix[label][label] for label in labels)
    lines += ["", f"cases: {total}  exact: {exact}/{total}", "",
              "kind                 precision  recall  refused-at-all"]
    for kind in REFUSE_KINDS:
        lines.append(f"{kind:<20} {report.precision(kind):>9.3f}  {report.recall(kind):>6.3f}  "
                     f"{report.refuse_recall(kind):>14.3f}")
    legit = sum(report.matrix["pass"].values())
    lines.append(f"false refusals: {legit - report.count('pass', 'pass')}/{legit} legitimate questions "
                 f"({report.false_refusal_rate:.1%})")
    return "\n".join(lines)
