"""Evaluation: golden set, naive baseline, retrieval and generation metrics, leak matrix, report.

`run_eval` in `policydesk.evals.harness` is the entry point; `policydesk.evals.cli.eval_command`
is the `policydesk eval` command. Nothing here imports `policydesk.web`.
"""

from policydesk.evals.golden import BUCKETS, Golden, GoldenItem, load_golden

__all__ = ["BUCKETS", "Golden", "GoldenItem", "load_golden"]
