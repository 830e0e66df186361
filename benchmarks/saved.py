"""Where a benchmark saves its JSON: the directory given with `--out`, else the data directory's
results/benchmarks/ (`Settings.results_dir`, POLICYDESK_DATA_DIR), never the checkout, so a run
leaves `git status` clean. Each script prints the path it saved."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path


def results_path(kind: str, *, suffix: str = "", out: Path | None = None) -> Path:
    """A new file `<kind>_<UTC stamp>[_<suffix>].json` in `out` (default: DATA_DIR/results/benchmarks)."""
    from policydesk.config import get_settings

    folder = Path(out) if out is not None else get_settings().results_dir / "benchmarks"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return folder / f"{kind}_{stamp}{'_' + suffix if suffix else ''}.json"
