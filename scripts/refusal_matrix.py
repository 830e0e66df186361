"""Print the refusal gate's confusion matrix and per-kind precision/recall on labelled cases.

Usage: python scripts/refusal_matrix.py [--split test_v5|test_v4|test_v3|test_v2|test|validation|train|regression|PATH ...]
                                        [--database NAME] [--misses]

The gate is the production one (`policydesk.screening.refusal.gate_for`): identifier detectors with the
configured plan formats, the intent classifier fitted on the train split, and the topic gate
derived from the corpus in NAME (default `policydesk_refusal_eval`, created on the configured
server and loaded with the demo corpus on first use; re-ingest is a no-op when unchanged).
The held-out split is test_v5 (`--split test_v5`, frozen before the gate's last round of changes
and measured once); test_v4, test_v3, test_v2 and test have been seen (secondary figures), `train` is
fitted on (use scripts/refusal_cv.py for out-of-fold figures). docs/refusal.md. Exit 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATABASE = "policydesk_refusal_eval"


def demo_gate(database: str = DEFAULT_DATABASE):
    from policydesk.config import get_settings
    from policydesk.ingest import ingest_directory
    from policydesk.providers import embedding_for
    from policydesk.providers.screening_models import screening_models
    from policydesk.screening.refusal import gate_for
    from policydesk.ops.runtime import open_migrated
    from policydesk.storage.engine import create_database

    settings = get_settings()
    embed_model = embedding_for(settings)
    create_database(settings, database)
    db = open_migrated(settings, database)
    ingest_directory(db, REPO / "corpus", embed_model, settings)
    local = screening_models(settings)
    return gate_for(db, settings, embed_model, intent=local.intent, local_model=local.model), db


def main(argv: list[str]) -> int:
    from policydesk.evals.refusals import evaluate, format_report, load_cases

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", action="append", help="test_v5 (the held-out one), test_v4, test_v3, test_v2, test, validation, train, regression or a YAML path")
    parser.add_argument("--database", default=DEFAULT_DATABASE)
    parser.add_argument("--misses", action="store_true", help="list every misclassified case")
    args = parser.parse_args(argv[1:])
    gate, db = demo_gate(args.database)
    try:
        for split in args.split or ["test"]:
            report = evaluate(gate, load_cases(split))
            print(format_report(report, f"== {split}"))
            if args.misses:
                for case, predicted in report.misses:
                    print(f"MISS [{case['role']}] expected={case['expected']} predicted={predicted}: {case['question']}")
            print()
    finally:
        db.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
