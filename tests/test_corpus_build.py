"""The corpus generator rebuilds the committed corpus/ byte for byte.

Pins issue 13 item 7: the corpus text moved from Python into scripts/corpus_source/, and the
committed corpus/ (which ingest, the tests and the eval labels rely on) must not change with it.
A drift in the source data or in scripts/build_corpus.py fails here.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from tests.conftest import CORPUS, REPO


def _sha256_by_file(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_build_corpus_matches_committed_corpus(tmp_path):
    out = tmp_path / "corpus"
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_corpus.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "corpus check passed" in run.stdout

    built, committed = _sha256_by_file(out), _sha256_by_file(CORPUS)
    assert sorted(built) == sorted(committed)
    differing = [f for f in committed if built[f] != committed[f]]
    assert differing == []
