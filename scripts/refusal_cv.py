"""Out-of-fold figures for the refusal gate on the train split: k-fold cross-validation.

Usage: python scripts/refusal_cv.py [--folds 5] [--claim-threshold P ...] [--scope-threshold P ...]
                                    [--regularization C ...] [--database NAME] [--misses]

The train split fits the intent classifier, so scoring the gate on it says nothing. This splits
train into k folds, stratified by kind (random.Random(15)), fits the classifier on k-1 folds and
screens the held-out fold with the production gate otherwise unchanged (identifier detectors,
rules, the topic gate over the demo corpus in NAME, as in scripts/refusal_matrix.py). Every train
case is screened once by a classifier that never saw it. Identifier and topic-gated cases are
never fitted on, so theirs are the production verdicts.

Several values may be given: each (regularization, claim, scope) setting is scored on the same
folds, and on the validation split with the classifier fitted on all of train, to choose them
without the test splits. docs/refusal.md. Exit 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from refusal_matrix import DEFAULT_DATABASE, demo_gate  # noqa: E402


def _print_misses(report, show: bool) -> None:
    if show:
        for case, predicted in report.misses:
            print(f"MISS [{case['role']}] expected={case['expected']} predicted={predicted}: {case['question']}")
    print()


def main(argv: list[str]) -> int:
    from policydesk.evals.refusals import evaluate, format_report, load_cases, out_of_fold
    from policydesk.screening.intent import CLAIM_THRESHOLD, REGULARIZATION_C, SCOPE_THRESHOLD, IntentClassifier

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--claim-threshold", type=float, action="append")
    parser.add_argument("--scope-threshold", type=float, action="append")
    parser.add_argument("--regularization", type=float, action="append", help="logistic regression C")
    parser.add_argument("--database", default=DEFAULT_DATABASE)
    parser.add_argument("--misses", action="store_true", help="list every misclassified case")
    args = parser.parse_args(argv[1:])
    gate, db = demo_gate(args.database)
    embed = gate.intent._embed
    train, validation = load_cases("train"), load_cases("validation")
    try:
        settings = [(c, claim, scope) for c in args.regularization or [REGULARIZATION_C]
                    for claim in args.claim_threshold or [CLAIM_THRESHOLD]
                    for scope in args.scope_threshold or [SCOPE_THRESHOLD]]
        for c, claim, scope in settings:
            knobs = dict(claim_threshold=claim, scope_threshold=scope, regularization=c)
            title = f"C {c}, thresholds claim {claim} scope {scope}"
            oof = out_of_fold(gate, train, args.folds, **knobs)
            print(format_report(oof, f"== train, {args.folds}-fold out-of-fold, {title}"))
            _print_misses(oof, args.misses)
            gate.intent = IntentClassifier(embed, **knobs)
            report = evaluate(gate, validation)
            print(format_report(report, f"== validation, {title}"))
            _print_misses(report, args.misses)
    finally:
        db.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
