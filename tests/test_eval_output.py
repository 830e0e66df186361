"""Where `policydesk eval` writes its run: by default under the data directory, never into the
checkout, and it prints the folder it wrote. Real command, real embedded Postgres, one golden item.
(`--out DIR` / `--results DIR` puts it in DIR instead.)"""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]


def _run_eval(monkeypatch, settings, *extra: str) -> Path:
    import policydesk.config
    from policydesk.cli import app

    monkeypatch.setattr(policydesk.config, "get_settings", lambda: settings)
    args = ["eval", "--corpus", str(REPO / "corpus"), "--split", "dev", "--slice", "1", "--no-leak-matrix",
            "--no-progress", *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    [printed] = re.findall(r"^results: (.+)$", result.output, flags=re.MULTILINE)
    return Path(printed)


def test_an_eval_run_writes_under_the_data_directory_and_prints_the_folder(monkeypatch, settings, demo_db):
    before = sorted(p.name for p in (REPO / "evals").iterdir())
    out = _run_eval(monkeypatch, settings)
    assert out.parent == Path(settings.DATA_DIR).resolve() / "results" / "evals"
    assert {"items.jsonl", "run.json", "summary.md", "report.html"} <= {p.name for p in out.iterdir()}
    assert sorted(p.name for p in (REPO / "evals").iterdir()) == before  # nothing new in the checkout

