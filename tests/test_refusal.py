"""Early refusal screen: labelled cases, per-kind floors, the corpus-derived topic gate, no existence leak.

The frozen test splits (tests/data/refusal/test.yaml, and test_v2.yaml, held out after test.yaml
had been seen) are pinned by sha256 but not asserted against floors: their figures are reported by
scripts/refusal_matrix.py (docs/refusal.md). These tests hold the regression set and
the validation split to floors, and pin the behaviours.
"""

from __future__ import annotations

import shutil
from collections import Counter
from datetime import date

import pytest
import yaml

from policydesk.accounts.access import ACCESS_LEVELS, ROLES, UnknownRoleError, clearance_for
from policydesk.evals.refusals import SPLITS, evaluate, load_cases, out_of_fold, predict
from policydesk.providers.screening_models import screening_models
from policydesk.screening.refusal import RefusalGate, RefusalReason, gate_for, screen_question
from policydesk.screening.topics import CorpusTopicGate, question_hits
from tests.conftest import CORPUS

REGRESSION = load_cases("regression")
SIU_QUESTION = "What is the SIU referral threshold for case scoring?"


@pytest.fixture(scope="module")
def gate(demo_db, settings, embed_model):
    local = screening_models(settings)
    return gate_for(demo_db, settings, embed_model, intent=local.intent, local_model=local.model)


def test_labelled_splits_have_enough_cases_per_kind():
    cases = [c for split in ("train", "validation", "test") for c in load_cases(split)]
    counts = Counter(c["expected"] for c in cases)
    for kind in ("pass", "member_identifier", "claim_action", "out_of_scope"):
        assert counts[kind] >= 60, kind
    questions = Counter((c["question"], c["role"]) for c in cases)
    assert max(questions.values()) == 1  # no case in two splits
    # every clearance is represented (the admin reads as a rep does, so the rep's cases stand for it)
    def grant(role):
        return clearance_for(role).levels, clearance_for(role).sensitive
    assert {grant(c["role"]) for c in cases} == {grant(r) for r in ROLES}


def test_test_split_is_frozen():
    # The sha256 recorded in the commit that created the split (issue 15); never edit the file.
    import hashlib

    assert hashlib.sha256(SPLITS["test"].read_bytes()).hexdigest() == (
        "fea1ca054347b660f869df5250d76bd240f913f1cbd973c64572d9f745e4eba4")


def test_test_v2_split_is_frozen_and_held_out():
    # Held-out split written after `test` had been looked at (issue 15); sha256 recorded in the
    # commit that created it. Never edit the file; nothing in it may appear in another split.
    import hashlib

    assert hashlib.sha256(SPLITS["test_v2"].read_bytes()).hexdigest() == (
        "9ded3a586bf374a1c9d52dd465fa1a73e5a156293b47a7d97d2948602dfd692e")
    v2 = load_cases("test_v2")
    counts = Counter(c["expected"] for c in v2)
    assert counts["claim_action"] >= 40 and counts["pass"] >= 40
    assert counts["member_identifier"] >= 20 and counts["out_of_scope"] >= 20
    seen = {c["question"].strip().lower() for split in ("train", "validation", "test", "regression")
            for c in load_cases(split)}
    assert not [c["question"] for c in v2 if c["question"].strip().lower() in seen]


def test_test_v3_split_is_frozen_and_held_out():
    # Held-out split written without sight of the gate, its data or the earlier splits (issue 15);
    # sha256 recorded in the commit that created it. Never edit the file; nothing in it may appear
    # in another split (one train case that repeated it was removed from train, not from here).
    import hashlib

    assert hashlib.sha256(SPLITS["test_v3"].read_bytes()).hexdigest() == (
        "0ee49d72acd2756fd70182524c512453336f45413fb73cd130acd76731d1ea1b")
    v3 = load_cases("test_v3")
    counts = Counter(c["expected"] for c in v3)
    assert counts == {"pass": 60, "claim_action": 40, "member_identifier": 30, "out_of_scope": 30}
    questions = {c["question"].strip().lower() for c in v3}
    tuned_on = {c["question"].strip().lower() for split in ("train", "validation", "regression")
                for c in load_cases(split)}
    assert not questions & tuned_on
    # Two out-of-scope questions came out word for word as in test_v2, written independently;
    # found when this pin was added, after the one measurement (docs/refusal.md). No more.
    earlier = {c["question"].strip().lower() for split in ("test", "test_v2") for c in load_cases(split)}
    assert questions & earlier == {"what time does the cafeteria close today",
                                   "how many calls per rep does the quality team audit each month?"}


# Held-out splits written without sight of the gate, its data or the earlier splits (issue 15), each
# frozen in its own commit (sha256 in the message) before the gate changes it measures: test_v4 in
# 01a0a79, test_v5 in 59e071e (after test_v4 had been measured and read). Never edit the files;
# nothing in them may appear in any other split.
FROZEN_HELD_OUT = {
    "test_v4": ("1b5f7d10a0c003f82ff748fdbbec9de79d48cfa9a3af91fb306e1a2d5a549c1d",
                {"pass": 84, "claim_action": 60, "member_identifier": 51, "out_of_scope": 40}),
    "test_v5": ("9da8b8e8581a51e51e453e5b24b6ca063088fd01282d1d7478a1d389b11d0d02",
                {"pass": 79, "claim_action": 42, "member_identifier": 47, "out_of_scope": 52}),
}


@pytest.mark.parametrize("split", sorted(FROZEN_HELD_OUT))
def test_held_out_split_is_frozen_and_shares_nothing(split):
    import hashlib

    sha256, counts = FROZEN_HELD_OUT[split]
    assert hashlib.sha256(SPLITS[split].read_bytes()).hexdigest() == sha256
    cases = load_cases(split)
    assert Counter(c["expected"] for c in cases) == counts
    questions = {c["question"].strip().lower() for c in cases}
    others = {c["question"].strip().lower() for other in SPLITS if other != split for c in load_cases(other)}
    assert not questions & others


@pytest.mark.parametrize("case", REGRESSION, ids=[f"{i:03d}-{c['role']}-{c['expected']}" for i, c in enumerate(REGRESSION)])
def test_regression_case(case, gate):
    assert predict(gate, case) == case["expected"], case["question"]


def test_validation_split_floors(gate):
    # docs/refusal.md, "Every split, the current gate": the floors leave a case or two of room for an
    # embedding-engine change.
    report = evaluate(gate, load_cases("validation"))
    assert report.recall("member_identifier") >= 0.98
    assert report.recall("claim_action") >= 0.98
    assert report.recall("out_of_scope") >= 0.95
    assert report.false_refusal_rate <= 0.01


def test_train_out_of_fold_floors(gate):
    # Each train case screened by a classifier fitted without it (5 folds, scripts/refusal_cv.py): how
    # the gate does on questions the model has not seen, which the in-sample train figure cannot say.
    fitted = gate.intent
    report = out_of_fold(gate, load_cases("train"))
    assert gate.intent is fitted  # the production classifier is put back
    # ref15b: 1.000 / 1.000 / 0.961, 3-4 of 275 false refusals (1.1-1.5%) depending on the ONNX engine
    assert report.recall("member_identifier") >= 0.98
    assert report.recall("claim_action") >= 0.98
    assert report.recall("out_of_scope") >= 0.93
    assert report.false_refusal_rate <= 0.02


def _gated(gate, question: str, role: str) -> bool:
    screening = gate.screen(question, clearance_for(role))
    assert screening.refusal is None, screening.refusal  # gated subjects are withheld later, never refused here
    return screening.topic_gated


def test_topic_gate_marks_the_question_and_refuses_nothing_early(gate):
    # The answer is withheld later as "not answered", after the same steps as any question, so
    # nothing early (no refusal, no reason, no shorter path) tells a restricted subject apart.
    screening = gate.screen(SIU_QUESTION, clearance_for("rep"))
    assert screening.topic_gated and screening.refusal is None and "topic" in screening.signals
    unrelated = gate.screen("What's the weather forecast for tomorrow?", clearance_for("rep")).refusal
    assert unrelated is not None and unrelated.reason is RefusalReason.out_of_scope


def test_topic_gate_siu_by_role(gate):
    assert _gated(gate, SIU_QUESTION, "rep")
    assert not _gated(gate, SIU_QUESTION, "supervisor")
    assert not _gated(gate, SIU_QUESTION, "compliance")


def test_topic_gate_compliance_subjects_block_supervisor(gate):
    question = "What is the dispute review procedure?"
    assert _gated(gate, question, "supervisor")
    assert not _gated(gate, question, "compliance")


def test_topic_gate_reads_a_restricted_subject_in_any_inflection(gate):
    # The compliance-only reporting subject, worded with other inflections and function words
    # than its title and headings ("reported" / "reporting", "complaints ... report").
    for question in ("how soon do complaints need to be reported to the state?",
                     "Which complaints must the plan report to regulators?"):
        for role in ("rep", "supervisor"):
            assert _gated(gate, question, role), (role, question)
        assert not _gated(gate, question, "compliance")


def test_question_hits_fold_inflections_and_skip_function_words():
    phrases = frozenset({("complaint", "report")})
    assert question_hits("a complaint must be reported", phrases)
    assert question_hits("complaints the plan reports", phrases)
    assert not question_hits("the complaint was about the provider's monthly report", phrases)


def test_topic_phrases_come_from_the_corpus_not_code(demo_db):
    topics = CorpusTopicGate(demo_db)
    asked = {("fraud", "referral"), ("contract", "rate"), ("purpose", "scope")}
    rep = topics.gated(clearance_for("rep"), asked)
    assert ("fraud", "referral") in rep and ("contract", "rate") in rep
    # Everyone's documents share "purpose and scope": never a gated subject.
    assert ("purpose", "scope") not in rep
    assert topics.gated(clearance_for("compliance"), asked) == frozenset()
    assert topics.gated(clearance_for("rep"), set()) == frozenset()


def test_new_restricted_document_is_gated_without_code_change(make_db, embed_model, settings, tmp_path):
    # A restricted page on a subject no permitted source mentions: gated for reps once ingested.
    from policydesk.ingest import ingest_directory

    root = tmp_path / "c"
    (root / "wiki").mkdir(parents=True)
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text())
    keep = [dict(e) for e in manifest["sources"] if e["id"] in ("POL-TF", "WIKI-APPEALS")]
    for e in keep:
        (root / e["file"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CORPUS / e["file"], root / e["file"])
    db = make_db()
    ingest_directory(db, _with_manifest(root, keep), embed_model, settings)
    gate = RefusalGate(topics=CorpusTopicGate(db, max_age_seconds=0))
    question = "What is the quarterly broker commission clawback schedule?"
    assert not _gated(gate, question, "rep")
    (root / "wiki" / "broker-commissions.md").write_text(
        "# Broker Commission Clawback\n\n## Clawback Schedule\n\nBroker commission clawback applies when a "
        "policy lapses within 90 days; the broker commission clawback schedule is quarterly.\n")
    new = {"file": "wiki/broker-commissions.md", "id": "WIKI-BRK", "title": "Broker Commission Clawback",
           "type": "wiki", "version": 1, "effective_from": date(2026, 1, 1), "date_basis": "none",
           "access_level": "restricted", "sensitive": False, "owner": "Sales", "related_policies": []}
    ingest_directory(db, _with_manifest(root, keep + [new]), embed_model, settings)
    assert _gated(gate, question, "rep")
    assert not _gated(gate, question, "supervisor")


def _with_manifest(root, entries):
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))
    return root


def test_gate_without_database_is_rules_only():
    # The pure function: identifiers, claim-action and out-of-scope rules, no topic gate.
    assert screen_question("Member ID is 4471-2290-13, what's their appeal window?", clearance_for("rep")).reason is \
        RefusalReason.member_identifier
    assert screen_question("Approve this claim.", clearance_for("rep")).reason is RefusalReason.claim_action
    assert screen_question(SIU_QUESTION, clearance_for("rep")) is None


def test_screening_redacts_what_it_passes_and_names_the_detectors():
    screening = RefusalGate().screen("what's the appeal window for 7QX-4410-882B?", clearance_for("rep"))
    assert screening.refusal is None
    assert screening.question == "what's the appeal window for [ID]?"
    assert screening.redaction.kinds == ("id_shaped",)


def test_screen_question_unknown_role_raises():
    # The clearance is resolved before screening: an unknown role fails there, loudly.
    with pytest.raises(UnknownRoleError, match="Unknown role 'member'"):
        screen_question("What is the timely filing limit?", clearance_for("member"))


def test_clearance_for_unknown_role_raises_value_error():
    with pytest.raises(ValueError, match="expected one of: rep, supervisor, compliance"):
        clearance_for("member")


def test_clearance_permits_by_role():
    rep, supervisor, compliance, admin = (clearance_for(r) for r in ROLES)
    # Administering accounts is no reason to read restricted text: the admin reads as a rep.
    assert (admin.levels, admin.sensitive) == (rep.levels, rep.sensitive)
    assert rep.permits("internal", sensitive=False)
    assert not rep.permits("internal", sensitive=True)
    assert not rep.permits("restricted", sensitive=False)
    assert supervisor.permits("restricted", sensitive=True)
    assert not supervisor.permits("compliance", sensitive=False)
    assert compliance.permits("compliance", sensitive=True)
    assert compliance.levels == ACCESS_LEVELS


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_screen_question_empty(question):
    assert screen_question(question, clearance_for("rep")).reason is RefusalReason.empty_question


def test_screen_question_too_long():
    question = "What is the timely filing limit? " * 40
    refusal = screen_question(question, clearance_for("rep"))
    assert refusal.reason is RefusalReason.question_too_long
    assert "1000 characters" in refusal.message
    assert screen_question(question, clearance_for("rep"), max_chars=5000) is None


def test_too_long_checked_before_identifiers():
    question = "Member CVM12345678 " + "x" * 1000
    assert screen_question(question, clearance_for("rep")).reason is RefusalReason.question_too_long


def test_nearest_section_in_memory_matches_postgres(demo_db, embed_model, monkeypatch):
    import policydesk.screening.topics as topics

    vector = embed_model.get_query_embedding("What case score opens a full fraud investigation?")
    in_memory = CorpusTopicGate(demo_db)
    in_memory.refresh()
    monkeypatch.setattr(topics, "IN_MEMORY_MAX_CHUNKS", 0)
    in_sql = CorpusTopicGate(demo_db)
    for role in ROLES:
        a, b = in_memory.nearest(clearance_for(role), vector), in_sql.nearest(clearance_for(role), vector)
        assert in_sql._vectors is None and in_memory._vectors is not None
        assert a == pytest.approx(b, abs=1e-4), role
    hidden, permitted = in_memory.nearest(clearance_for("rep"), vector)
    assert hidden > permitted + 0.08  # the fraud-scoring section is above a rep's clearance


@pytest.mark.parametrize("role", ["rep", "supervisor"])
def test_nearest_in_postgres_never_counts_a_section_above_the_caller_as_permitted(demo_db, monkeypatch, role):
    """Asked with the very vector of a section above the caller (a higher level, or sensitive for a
    role not cleared), the SQL path never finds it among the permitted sections, and finds it among
    the hidden ones unless it is a call note (never a subject of its own)."""
    from sqlalchemy import text

    from policydesk.screening import topics

    clearance = clearance_for(role)
    with demo_db.owner.connect() as conn:
        rows = conn.execute(text(
            "SELECT c.node_id, c.access_level, c.sensitive, d.source_type, c.embedding::text AS v FROM data_chunks c "
            "JOIN document_versions d ON d.doc_id = c.doc_id AND d.version = c.version ORDER BY c.node_id")).all()
    above = {}
    for r in rows:
        if not clearance.permits(r.access_level, r.sensitive):
            why = "sensitive" if r.access_level in clearance.levels else "level"
            above.setdefault((why, r.source_type == "call_note"), r)
    expected = {"rep": {("level", False), ("level", True), ("sensitive", True)},
                "supervisor": {("level", False)}}[role]
    assert expected <= set(above), f"the demo corpus lacks a section above {role}: {expected - set(above)}"
    monkeypatch.setattr(topics, "IN_MEMORY_MAX_CHUNKS", 0)
    gate = CorpusTopicGate(demo_db)
    for (why, call_note), row in above.items():
        vector = [float(x) for x in row.v.strip("[]").split(",")]
        hidden, permitted = gate.nearest(clearance, vector)
        assert gate._vectors is None  # the Postgres statement answered, not the in-memory index
        assert permitted < 0.999, (why, row.node_id, permitted)
        assert call_note or hidden == pytest.approx(1.0, abs=1e-4), (why, row.node_id, hidden)
        everything = gate.nearest(clearance_for("compliance"), vector)
        assert everything == (0.0, pytest.approx(1.0, abs=1e-4))
