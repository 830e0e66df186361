"""`policydesk sync`, `sync --every` and the change-notice endpoint on a small folder of wiki
pages: only what changed is written, one transaction per source, a source that fails its checks
is reported and leaves the others synced and itself exactly as it was indexed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session

from policydesk.ingest import ingest_directory
from policydesk.ingest.plan import file_sha256
from policydesk.ingest.sync import SyncReport, sync_directory, sync_every
from policydesk.storage.models import AuditEntry, Chunk, DocumentVersion
from policydesk.accounts.users import add_user
from tests.api_helpers import bearer, is_problem, make_token
from tests.cli_helpers import run_cli

PAGES = {
    "alpha.md": ("WIKI-ALPHA", "Alpha Desk Guide", "# Alpha Desk Guide\n\n## Hours\n\nThe alpha desk opens at seven.\n"),
    "beta.md": ("WIKI-BETA", "Beta Desk Guide", "# Beta Desk Guide\n\n## Hours\n\nThe beta desk opens at eight.\n"),
    "gamma.md": ("WIKI-GAMMA", "Gamma Desk Guide", "# Gamma Desk Guide\n\n## Hours\n\nThe gamma desk opens at nine.\n"),
}


def _folder(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for file, (_, _, body) in PAGES.items():
        (root / file).write_text(body)
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": [
        {"file": file, "id": doc_id, "title": title, "type": "wiki", "version": 1, "effective_from": "2025-01-01",
         "date_basis": "none", "access_level": "public", "sensitive": False, "owner": "Desk Training"}
        for file, (doc_id, title, _) in PAGES.items()]}, sort_keys=False))
    return root


@pytest.fixture
def folder(make_db, embed_model, settings, tmp_path):
    root = _folder(tmp_path / "docs")
    db = make_db()
    ingest_directory(db, root, embed_model, settings)
    return root, db


def _indexed(db, doc_id: str) -> tuple[str, list[str]]:
    """The indexed file hash and chunk texts of a source's version 1."""
    with Session(db.owner) as session:
        sha = session.scalar(select(DocumentVersion.source_sha256).where(
            DocumentVersion.doc_id == doc_id, DocumentVersion.version == 1))
        texts = list(session.scalars(select(Chunk.text).where(Chunk.doc_id == doc_id).order_by(Chunk.id)))
    return sha, texts


def _edit(root: Path, file: str, old: str, new: str) -> None:
    path = root / file
    path.write_text(path.read_text().replace(old, new))


def test_a_source_that_fails_its_checks_is_reported_and_the_rest_still_sync(folder, embed_model, settings):
    root, db = folder
    beta_before = _indexed(db, "WIKI-BETA")
    _edit(root, "alpha.md", "seven", "half past seven")
    (root / "beta.md").write_text("")  # an empty page: refused by ingest's checks
    report = sync_directory(db, root, embed_model, settings)
    assert report.written == ["WIKI-ALPHA v1"] and report.unchanged == 1
    assert len(report.failed) == 1 and report.failed[0] == "beta.md: file: empty file (0 bytes)"
    assert not report.ok
    assert any("half past seven" in t for t in _indexed(db, "WIKI-ALPHA")[1])
    assert _indexed(db, "WIKI-BETA") == beta_before  # nothing of the failed source was written
    with Session(db.owner) as session:  # recorded as changed-but-not-synced, so its answers warn
        disk = session.scalar(select(DocumentVersion.disk_sha256).where(DocumentVersion.doc_id == "WIKI-BETA"))
    assert disk == file_sha256(root / "beta.md") != beta_before[0]
    again = sync_directory(db, root, embed_model, settings)
    assert again.written == [] and len(again.failed) == 1 and again.unchanged == 2


def test_a_bad_new_version_rolls_back_alone(folder, embed_model, settings):
    """A new version whose window would run before the indexed version 1 (no longer listed, so
    only the index knows it) is refused inside its own transaction."""
    root, db = folder
    manifest = yaml.safe_load((root / "manifest.yaml").read_text())
    (root / "alpha-v2.md").write_text(PAGES["alpha.md"][2].replace("seven", "six"))
    manifest["sources"][0] = {**manifest["sources"][0], "file": "alpha-v2.md", "version": 2,
                              "effective_from": "2024-06-01"}
    (root / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    _edit(root, "gamma.md", "nine", "ten")
    report = sync_directory(db, root, embed_model, settings)
    assert report.written == ["WIKI-GAMMA v1"]
    assert len(report.failed) == 1 and "alpha-v2.md" in report.failed[0] and "effective_from" in report.failed[0]
    with Session(db.owner) as session:
        versions = list(session.scalars(select(DocumentVersion.version).where(DocumentVersion.doc_id == "WIKI-ALPHA")))
    assert versions == [1]


class _FailsOn:
    """The real embedding model, except that a batch holding `word` fails as a model outage would."""

    def __init__(self, model, word: str):
        self._model, self._word = model, word

    def get_text_embedding_batch(self, texts, **kwargs):
        if any(self._word in t for t in texts):
            raise RuntimeError("embedding service unavailable")
        return self._model.get_text_embedding_batch(texts, **kwargs)

    def __getattr__(self, name):
        return getattr(self._model, name)


def test_a_source_whose_write_fails_midway_is_left_exactly_as_indexed(folder, embed_model, settings):
    """Beta's version row is written while its vectors are computed; the model failing then
    leaves neither a new hash nor a version without chunks: the earlier source stays synced."""
    root, db = folder
    beta_before = _indexed(db, "WIKI-BETA")
    _edit(root, "alpha.md", "seven", "a quarter to seven")
    _edit(root, "beta.md", "eight", "a quarter to eight")
    with pytest.raises(RuntimeError, match="embedding service unavailable"):
        sync_directory(db, root, _FailsOn(embed_model, "quarter to eight"), settings)
    assert any("a quarter to seven" in t for t in _indexed(db, "WIKI-ALPHA")[1])
    assert _indexed(db, "WIKI-BETA") == beta_before
    report = sync_directory(db, root, embed_model, settings)
    assert report.written == ["WIKI-BETA v1"] and report.ok
    assert any("a quarter to eight" in t for t in _indexed(db, "WIKI-BETA")[1])


def test_sync_every_syncs_on_its_period_and_survives_a_failed_run(folder, embed_model, settings):
    root, db = folder
    slept: list[float] = []
    reports: list = []
    good_manifest = (root / "manifest.yaml").read_text()

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 1:
            _edit(root, "beta.md", "eight", "noon")  # the folder changes while the loop waits
        elif len(slept) == 2:
            (root / "manifest.yaml").write_text("sources: [")  # a broken manifest for one run
        else:
            (root / "manifest.yaml").write_text(good_manifest)

    runs = sync_every(lambda: sync_directory(db, root, embed_model, settings), 5, sleep=sleep, max_runs=4,
                      on_report=reports.append)
    assert runs == 4 and len(slept) == 3 and all(290 < s <= 300 for s in slept)
    assert [r.written for r in reports if isinstance(r, SyncReport)] == [[], ["WIKI-BETA v1"], []]
    assert isinstance(reports[2], Exception) and "manifest.yaml" in str(reports[2])
    with pytest.raises(ValueError):
        sync_every(lambda: SyncReport(), 0, sleep=sleep, max_runs=1)


def test_the_sync_command_every_and_max_runs(folder):
    root, db = folder
    _edit(root, "gamma.md", "nine", "eleven")
    env = dict(os.environ, DATABASE_URL=db.owner_url.render_as_string(hide_password=False))
    out = run_cli("sync", str(root), "--every", "0.001", "--max-runs", "2", env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("3 sources:") == 2 and out.stdout.count("synced: WIKI-GAMMA v1") == 1, out.stdout
    (root / "alpha.md").write_text("")
    failed = run_cli("sync", str(root), env=env)
    assert failed.returncode == 1 and "not synced: alpha.md" in failed.stderr, (failed.stdout, failed.stderr)


# -- the change notice ---------------------------------------------------------------------------

@pytest.fixture
def notices(folder, settings, embed_model):
    from fastapi.testclient import TestClient

    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app

    root, db = folder
    local = settings.model_copy(update={"SYNC_DIR": root})
    app = create_app(local, db=db, pipeline=build_pipeline(db, local, embed_model=embed_model))
    tokens = {}
    with Session(db.owner) as session, session.begin():
        for role in ("rep", "supervisor", "compliance"):
            add_user(session, name=f"notice-{role}", role=role, password="notice-password-long")
    for role in ("rep", "supervisor", "compliance"):
        tokens[role] = make_token(db, f"notice-{role}")
    return root, db, app, TestClient(app), tokens


def _post(client, token, body):
    return client.post("/api/v1/sources/changed", headers=bearer(token), json=body)


def test_a_notice_for_one_file_syncs_only_that_file(notices):
    root, db, app, client, tokens = notices
    _edit(root, "alpha.md", "seven", "five")
    _edit(root, "beta.md", "eight", "four")
    beta_before = _indexed(db, "WIKI-BETA")
    r = _post(client, tokens["compliance"], {"paths": ["alpha.md"]})
    assert r.status_code == 202 and r.json() == {"queued": ["alpha.md"]}
    assert app.state.sync_worker.wait_idle(120)
    assert [x.written for x in app.state.sync_worker.results] == [["WIKI-ALPHA v1"]]
    with Session(db.owner) as session:
        audited = list(session.scalars(select(AuditEntry).where(AuditEntry.action == "sources_changed")))
    assert [(a.actor, a.details["queued"]) for a in audited] == [("notice-compliance", ["alpha.md"])]
    assert any("opens at five" in t for t in _indexed(db, "WIKI-ALPHA")[1])
    assert _indexed(db, "WIKI-BETA") == beta_before
    r = _post(client, tokens["compliance"], {"ids": ["WIKI-BETA"]})
    assert r.status_code == 202 and r.json() == {"queued": ["beta.md"]}
    assert app.state.sync_worker.wait_idle(120)
    assert any("opens at four" in t for t in _indexed(db, "WIKI-BETA")[1])


def test_a_notice_for_a_failing_file_writes_nothing_of_it(notices):
    root, db, app, client, tokens = notices
    before = _indexed(db, "WIKI-GAMMA")
    (root / "gamma.md").write_text("")
    assert _post(client, tokens["compliance"], {"paths": ["gamma.md"]}).status_code == 202
    assert app.state.sync_worker.wait_idle(120)
    [result] = app.state.sync_worker.results
    assert result.written == [] and "gamma.md" in result.failed[0]
    assert _indexed(db, "WIKI-GAMMA") == before


@pytest.mark.parametrize("body, field", [
    ({"paths": ["nowhere.md"]}, "paths"),
    ({"ids": ["WIKI-NOWHERE"]}, "ids"),
    ({"paths": ["../manifest.yaml"]}, "paths"),
    ({}, "body"),
    ({"paths": []}, "body"),
    ({"paths": ["alpha.md"], "text": "injected"}, "text"),
    ({"paths": "alpha.md"}, "paths"),
])
def test_a_bad_notice_is_a_problem_and_queues_nothing(notices, body, field):
    root, db, app, client, tokens = notices
    problem = is_problem(_post(client, tokens["compliance"], body), 422, "invalid_request")
    assert any(e["field"].split(".")[0] == field for e in problem["errors"]), problem
    assert getattr(app.state, "sync_worker", None) is None


def test_not_json_is_a_problem(notices):
    root, db, app, client, tokens = notices
    r = client.post("/api/v1/sources/changed", headers={**bearer(tokens["compliance"]),
                                                        "content-type": "application/json"}, content=b"{paths")
    is_problem(r, 422, "invalid_request")


def test_only_a_compliance_token_may_send_a_notice(notices):
    root, db, app, client, tokens = notices
    for role in ("rep", "supervisor"):
        is_problem(_post(client, tokens[role], {"paths": ["alpha.md"]}), 403, "forbidden")
    is_problem(client.post("/api/v1/sources/changed", json={"paths": ["alpha.md"]}), 401, "unauthorized")
    assert getattr(app.state, "sync_worker", None) is None


def test_without_a_folder_configured_notices_are_refused(folder, settings, embed_model):
    from fastapi.testclient import TestClient

    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app

    root, db = folder
    app = create_app(settings, db=db, pipeline=build_pipeline(db, settings, embed_model=embed_model))
    with Session(db.owner) as session, session.begin():
        add_user(session, name="notice-nofolder", role="compliance", password="notice-password-long")
    r = _post(TestClient(app), make_token(db, "notice-nofolder"), {"paths": ["alpha.md"]})
    assert "SYNC_DIR" in is_problem(r, 404, "not_found")["detail"]


class _HeldModel:
    """The real embedding model, held at its first batch until the test lets it go."""

    def __init__(self, model, release):
        self._model, self._release = model, release
        self.started = __import__("threading").Event()

    def get_text_embedding_batch(self, texts, **kwargs):
        self.started.set()
        assert self._release.wait(60), "the test never released the sync"
        return self._model.get_text_embedding_batch(texts, **kwargs)

    def __getattr__(self, name):
        return getattr(self._model, name)


def test_the_web_keeps_answering_while_a_notice_syncs(notices, embed_model):
    import threading

    from policydesk.ingest.worker import SyncWorker

    root, db, app, client, tokens = notices
    release = threading.Event()
    held = _HeldModel(embed_model, release)
    app.state.sync_worker = SyncWorker(db, root, held, app.state.settings)
    _edit(root, "alpha.md", "seven", "three")
    try:
        assert _post(client, tokens["compliance"], {"paths": ["alpha.md"]}).status_code == 202
        assert held.started.wait(60)  # the sync is now inside its transaction, embedding
        r = client.get("/api/v1/versions/WIKI-ALPHA", headers=bearer(tokens["rep"]))
        assert r.status_code == 200, r.text
        assert not any("opens at three" in t for t in _indexed(db, "WIKI-ALPHA")[1])  # not committed yet
    finally:
        release.set()
    assert app.state.sync_worker.wait_idle(120)
    assert any("opens at three" in t for t in _indexed(db, "WIKI-ALPHA")[1])
