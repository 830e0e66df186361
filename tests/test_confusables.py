"""Identifiers in other scripts and spellings (issue 49, point 3): fullwidth letters and digits, Cyrillic
and Greek look-alike letters, soft hyphens and zero-width characters inside a number, SSNs with en
dashes or minus signs, other scripts' digits. Text is normalised once (policydesk/detectors/normalize.py)
before every detector, wherever text is screened.

The labelled set (evals/confusables/) was written and split into dev and test before any normalisation
code existed; test.yaml was frozen in its own commit. Every identifier on it is refused by the production
gate, every control passes, and none of them is stored anywhere a request can leave text: traces,
feedback, the audit log, the server's log lines, the metrics.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import httpx
import pytest
import yaml

from policydesk.ops import metrics
from policydesk.detectors import find_member_identifiers
from policydesk.detectors.normalize import normalize
from policydesk.detectors.redact import redact
from policydesk.evals.refusals import predict
from tests.api_helpers import bearer, make_token
from tests.served_app import marks, served, stored_text_since
from tests.web_helpers import PASSWORD, csrf_from

SPLITS = Path(__file__).resolve().parent.parent / "evals" / "confusables"
TEST_SHA256 = "673becd43b87eeeb39309fe50196e73724a25d6edf579517ef016ed3345f93d0"


def _cases(split: str) -> list[dict]:
    return yaml.safe_load((SPLITS / f"{split}.yaml").read_text(encoding="utf-8"))["cases"]


def test_the_held_out_split_is_the_one_frozen_before_the_normalisation():
    assert hashlib.sha256((SPLITS / "test.yaml").read_bytes()).hexdigest() == TEST_SHA256
    cases = _cases("test")
    assert sum(c["expected"] == "member_identifier" for c in cases) == 45
    assert all(c["identifier"] in c["question"] for c in cases if c["expected"] == "member_identifier")


def test_every_confusable_identifier_on_the_held_out_split_is_refused(pipeline):
    """The production gate (identifier detectors, classifier, topic gate), as refusal_matrix.py runs it."""
    misses = [(c["transform"], c["question"], got) for c in _cases("test")
              if (got := predict(pipeline.gate, c)) != c["expected"]]
    assert misses == []


@pytest.mark.parametrize("split", ["dev", "test"])
def test_redaction_and_the_other_screens_find_each_identifier(split):
    """Redaction (what reaches the trace, the prompt, the embedding), and the screens that reuse the
    detectors without the gate (feedback notes, echoed fields), each on the identifier alone too."""
    for c in _cases(split):
        if c["expected"] != "member_identifier":
            assert not find_member_identifiers(c["question"]), c["question"]
            continue
        assert find_member_identifiers(c["question"]), c["question"]
        redacted = redact(c["question"]).text
        for needle in _needles(c["identifier"]):
            assert needle not in redacted.lower(), (c["question"], redacted)


def test_the_normal_form():
    plain = "What is the timely filing limit for CPT 99213? Call 1-800-555-0143."
    assert normalize(plain) is plain
    assert normalize("\uff23\uff36\uff2d\uff14\uff10\uff10\uff11") == "CVM4001"
    assert normalize("CVM1234\u00ad5678 \u200b") == "CVM12345678 "
    assert normalize("512\u201344\u20149087") == "512-44-9087"
    assert normalize("\u0421V\u041c\u0665\u0661\u0662") == "CVM512"  # Cyrillic С, М and Arabic-Indic digits
    assert normalize("40\u041e\u041e12") == "400012"  # Cyrillic О among digits is a zero
    assert normalize("\u0395\u03a1\u0391") == "EPA"  # a word of Greek look-alikes only
    assert normalize("caf\u00e9 nai\u0308ve") == "caf\u00e9 na\u00efve"  # a real accent stays (NFKC composes it)
    assert normalize("1\u03322\u03363") == "123"  # marks on digits go
    russian = "\u041a\u0430\u043a\u043e\u0439 \u0441\u0440\u043e\u043a \u043f\u043e\u0434\u0430\u0447\u0438?"
    assert normalize(russian).split()[0] == russian.split()[0]  # a Russian word with letters Latin has not stays
    for c in _cases("dev") + _cases("test"):
        once = normalize(c["question"])
        assert normalize(once) == once, c["question"]


# -- nothing of them is stored -----------------------------------------------------------------

def _needles(identifier: str) -> list[str]:
    """The identifier as written, in its normal form, and its digits when there are 7 or more."""
    normal = normalize(identifier)
    out = {identifier.lower(), normal.lower()}
    digits = "".join(ch for ch in normal if ch.isdigit())
    if len(digits) >= 7:
        out.add(digits)
    return [n for n in out if n.strip()]


def _sign_in(url: str, name: str) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=url, timeout=120)
    token = csrf_from(client.get("/login").text)
    r = client.post("/login", data={"name": name, "password": PASSWORD, "csrf_token": token, "next": "/ask"})
    assert r.status_code == 303, r.text[:300]
    return client, csrf_from(client.get("/ask").text)


def test_no_confusable_identifier_is_stored_or_logged_anywhere(settings, pipeline, demo_db, staff):
    from policydesk.web.app import create_app

    # Five API calls per case: above the per-token rate limit, which is not under test here.
    web_app = create_app(settings.model_copy(update={"API_RATE_LIMIT": 100_000}), db=demo_db, pipeline=pipeline)
    identifiers = [c for c in _cases("test") if c["expected"] == "member_identifier"]
    rep_token, reviewer_token = make_token(demo_db, staff["rep"]), make_token(demo_db, staff["compliance"])
    since = marks(demo_db)
    with served(web_app) as server:
        rep, rep_csrf = _sign_in(server.url, staff["rep"])
        reviewer, _ = _sign_in(server.url, staff["compliance"])
        api = httpx.Client(base_url=server.url, timeout=120)
        answered = api.post("/api/v1/ask", json={"question": "What is the timely filing limit?"},
                            headers=bearer(rep_token)).json()["trace_id"]
        for c in identifiers:
            question, identifier = c["question"], c["identifier"]
            request_id = {"X-Request-ID": normal} if re.fullmatch(r"[A-Za-z0-9-]{1,64}", normal := normalize(identifier)) else {}
            r = rep.post("/ask", data={"question": question, "csrf_token": rep_csrf}, headers=request_id)
            assert r.status_code == 200 and "member identifier" in r.text, (question, r.status_code)
            r = api.post("/api/v1/ask", json={"question": question}, headers={**bearer(rep_token), **request_id})
            assert r.status_code == 422 and r.json()["refused"] and "member identifier" in r.json()["refusal_reason"], question
            r = rep.post(f"/feedback/{answered}", data={"verdict": "wrong", "reason": "other", "note": question,
                                                         "csrf_token": rep_csrf})
            assert r.status_code == 422, question
            r = api.post("/api/v1/feedback", json={"trace_id": answered, "verdict": "wrong", "note": question},
                         headers=bearer(rep_token))
            assert r.status_code == 422, question
            reviewer.get("/disputes", params={"words": question, "staff": identifier})
            api.get("/api/v1/traces", params={"words": question, "staff": identifier}, headers=bearer(reviewer_token))
            reviewer.get("/disputes/export", params={"asked_from": "2026-01-01", "asked_to": "2026-12-31",
                                                     "staff": identifier})
        for client in (rep, reviewer, api):
            client.close()
    stored = stored_text_since(demo_db, since)
    assert len(stored["traces"]) == 1 + 2 * len(identifiers) and stored["feedback"] == []
    assert len(stored["audit_log"]) >= 4 * len(identifiers)  # searches, exports, refused API feedback
    places = {**{table: "\n".join(rows).lower() for table, rows in stored.items()},
              "log lines": "\n".join(server.lines).lower(), "metrics": metrics.exposition().decode().lower()}
    found = [(c["transform"], needle, where) for c in identifiers for needle in _needles(c["identifier"])
             for where, text in places.items() if needle in text]
    assert found == [], "\n".join(map(str, found)) + "\n" + "\n".join(
        line for line in server.lines if any(n in line.lower() for _, n, _ in found))
