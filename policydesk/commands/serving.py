"""What `policydesk serve` sets up before uvicorn starts: the metrics directory its workers share.
Imports nothing that imports prometheus_client."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def prepare_metrics_dir(data_dir: Path) -> Path:
    """An empty DATA_DIR/metrics, named in the environment the workers inherit, so every worker
    writes its samples there and a scrape sums them (policydesk/ops/metrics.py). Emptied first:
    samples left by an earlier run would be summed in. Workers are new processes and read it at
    their first import; this process uses it only if it has not imported prometheus_client yet
    (`demo` has, and serves in-process, where its own registry is the whole truth)."""
    directory = Path(data_dir).expanduser().resolve() / "metrics"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    os.environ[MULTIPROC_ENV] = str(directory)
    return directory
