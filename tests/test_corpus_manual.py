"""The second corpus (corpus_manual/, written like a payer's provider manual) and its golden set:
the corpus rebuilds from its source, plans in a dry-run ingest, the golden labels name chunks
that ingest produces, the split is the documented one, and the test split is frozen."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from collections import Counter


from policydesk.evals.golden import EVALS_DIR, evals_dir_for, load_split
from policydesk.evals.splits import assign_splits
from policydesk.ingest.chunks import chunk_id
from policydesk.ingest.manifest import load_manifest
from policydesk.ingest.outline import slug
from policydesk.ingest.plan import plan_source
from policydesk.ingest.tokens import budget_for
from tests.conftest import REPO

CORPUS_MANUAL = REPO / "corpus_manual"
GOLDEN_DIR = EVALS_DIR / "corpus_manual"
# Recorded in the commit that created evals/corpus_manual/golden_test.yaml. The test split is
# frozen: new questions go to dev, or to a new test file in its own commit with its own hash.
FROZEN_TEST_SHA256 = "33cbd4a46e883f6fdc35df6f568e0800c65088784e58d41365384c556ba9303d"
SPLIT_SALT = "policydesk/issue-29/corpus-manual-split"
CHUNK_ID = re.compile(r"^[A-Z][A-Z0-9-]*:v\d+:[a-z0-9]+(?:-[a-z0-9]+)*(?::\d+)?$")
# The directory page ingest screening refuses today (its prior-authorization and appeals fax lines
# and its ZIP+4 codes are read as member identifiers); its chunk ids are checked from its headings.
CONTACTS = "WIKI-CONTACTS"


def _both_splits():
    folder = evals_dir_for(CORPUS_MANUAL)
    return load_split("dev", folder), load_split("test", folder)


def _planned(settings):
    budget = budget_for(settings)
    return [plan_source(s, settings, budget) for s in load_manifest(CORPUS_MANUAL)]


def test_the_frozen_corpus_manual_test_split_has_not_changed():
    data = (GOLDEN_DIR / "golden_test.yaml").read_bytes()
    assert hashlib.sha256(data).hexdigest() == FROZEN_TEST_SHA256


def test_eval_reads_a_corpus_golden_folder_by_the_corpus_directory_name(tmp_path):
    assert evals_dir_for(CORPUS_MANUAL) == GOLDEN_DIR
    assert evals_dir_for(REPO / "corpus") == EVALS_DIR
    assert evals_dir_for(None) == EVALS_DIR
    assert evals_dir_for(tmp_path / "some_copy") == EVALS_DIR  # no golden folder of its own: the demo's
    dev, test = _both_splits()
    assert dev.reference_date == test.reference_date
    assert {i.split for i in dev.items} == {"dev"} and {i.split for i in test.items} == {"test"}


def test_the_split_is_the_documented_one_and_the_set_is_big_enough():
    dev, test = _both_splits()
    items = dev.items + test.items
    assert not {i.id for i in dev.items} & {i.id for i in test.items}
    assert {i.id: i.split for i in items} == assign_splits(((i.id, i.bucket) for i in items), salt=SPLIT_SALT)
    answerable = [i for i in items if not i.expect_refusal]
    refused = [i for i in items if i.expect_refusal]
    assert len(answerable) >= 60 and len(refused) >= 12
    per_bucket = Counter(i.bucket for i in items)
    assert Counter(i.bucket for i in test.items) == {b: n // 2 for b, n in per_bucket.items()}
    asked = lambda g: {(" ".join(i.question.lower().split()), tuple(sorted(i.date_inputs().items()))) for i in g.items}  # noqa: E731
    assert not asked(dev) & asked(test)
    # Both date bases are entered for bulletin-changed policies, and not-in-force sources are named.
    assert any(i.dates["date_of_service"] for i in answerable) and any(i.dates["denial_notice_date"] for i in answerable)
    assert any("HCP-BUL-2619" in i.excluded_sources for i in answerable)


def test_golden_ids_are_well_formed_and_name_sources_of_the_corpus():
    dev, test = _both_splits()
    manifest = {(s.doc_id, s.version) for s in load_manifest(CORPUS_MANUAL)}
    docs = {d for d, _ in manifest}
    for item in dev.items + test.items:
        for cid in item.expected_sections:
            assert CHUNK_ID.match(cid), (item.id, cid)
            doc, version = cid.split(":")[0], int(cid.split(":")[1][1:])
            assert (doc, version) in manifest, (item.id, cid)
        for doc, versions in item.expected_version.items():
            assert all((doc, v) in manifest for v in versions), (item.id, doc, versions)
        assert set(item.excluded_sources) <= docs, item.id
        if not item.expect_refusal:
            cited_docs = {cid.split(":")[0] for cid in item.expected_sections}
            assert set(item.expected_version) <= cited_docs, item.id


def test_the_corpus_plans_in_a_dry_run_ingest_and_produces_every_golden_chunk(settings):
    planned = _planned(settings)
    assert len(planned) == len(load_manifest(CORPUS_MANUAL)) >= 15
    refused = [p.source.doc_id for p in planned if p.refused]
    assert set(refused) <= {CONTACTS}
    assert all(not p.warnings for p in planned if not p.refused)
    ids = {chunk_id(p.source.doc_id, p.source.version, c.key) for p in planned for c in p.chunks}
    contacts = (CORPUS_MANUAL / "wiki" / "provider-contacts.md").read_text(encoding="utf-8")
    ids |= {f"{CONTACTS}:v1:{slug(h)}" for h in re.findall(r"(?m)^## (.+)$", contacts)}
    dev, test = _both_splits()
    missing = [(i.id, c) for i in dev.items + test.items for c in i.expected_sections if c not in ids]
    assert missing == []
    # Long lettered sections are cut into parts, and golden answers sit in later parts.
    assert any(c.parts > 1 for p in planned for c in p.chunks)
    assert any(re.search(r":\d+$", c) for i in test.items for c in i.expected_sections)


def test_the_contacts_page_ingests(settings):
    # Pins the refusal of the whole corpus over a contacts page's fax lines and ZIP+4 codes.
    planned = {p.source.doc_id: p for p in _planned(settings)}
    assert not planned[CONTACTS].refused, planned[CONTACTS].problem


def test_build_corpus_rebuilds_corpus_manual_byte_for_byte(tmp_path):
    out = tmp_path / "corpus_manual"
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_corpus.py"), "--source",
         str(REPO / "scripts" / "corpus_manual_source"), "--out", str(out)],
        capture_output=True, text=True, cwd=REPO,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "corpus check passed" in run.stdout

    def digest(folder):
        return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(folder.rglob("*")) if p.is_file()}

    assert digest(out) == digest(CORPUS_MANUAL)
