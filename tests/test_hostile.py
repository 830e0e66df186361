"""Issue 9, hostile input: each case is answered with a clear message or treated as data, never a
500, and nothing is disclosed. Cases already pinned elsewhere are listed in docs/faults.md."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import date

import pytest
import yaml
from fastapi.testclient import TestClient
from itsdangerous import TimestampSigner
from sqlalchemy import select
from sqlalchemy.orm import Session

from policydesk.ingest import IngestError, ingest_directory
from policydesk.pipeline import build_pipeline
from policydesk.storage.models import Trace
from policydesk.accounts.users import add_user
from policydesk.web.app import create_app
from tests.conftest import table_counts
from tests.test_ingest import _corpus, _entries
from tests.test_synthesis import ScriptedLLM
from tests.web_helpers import PASSWORD, by_class, find, sign_in, text_of, token_of

TODAY = date(2026, 11, 29)
SQL_META = ["'; DROP TABLE traces; --", "%", "_", "\\", "$$", "' OR '1'='1", "%' OR user_name LIKE '%"]


@pytest.fixture(scope="module")
def names(demo_db) -> dict[str, str]:
    tag = uuid.uuid4().hex[:6]
    out = {"rep": f"hostile-rep-{tag}", "rep2": f"hostile-rep2-{tag}", "compliance": f"hostile-comp-{tag}"}
    with Session(demo_db.owner) as s, s.begin():
        for key, name in out.items():
            add_user(s, name=name, role="rep" if key.startswith("rep") else key, password=PASSWORD)
    return out


@pytest.fixture(scope="module")
def app(settings, demo_db, embed_model):
    return create_app(settings, db=demo_db,
                      pipeline=build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY))


@pytest.fixture(scope="module")
def clients(app, names) -> dict[str, TestClient]:
    return {key: sign_in(app, name) for key, name in names.items()}


@pytest.fixture(scope="module")
def rep_trace(clients, names, demo_db) -> uuid.UUID:
    r = clients["rep"].post("/ask", data={"question": "What is the timely filing limit?",
                                          "csrf_token": token_of(clients["rep"])})
    assert r.status_code == 200
    with Session(demo_db.owner) as s:
        return s.scalar(select(Trace.id).where(Trace.user_name == names["rep"]).order_by(Trace.created_at.desc()))


def _no_live_script(html: str) -> None:
    assert all("alert(1)" not in e["text"] for e in find(html, "script"))
    assert all(e["attrs"].get("src") == "/static/htmx.min.js" for e in find(html, "script"))


# -- script in a document ------------------------------------------------------------------------

def test_script_in_a_document_is_escaped_on_ask_and_disputes_pages(make_db, embed_model, settings, tmp_path):
    # test_web.py pins a script in the *question*; this pins one in the indexed *source text*.
    db = make_db()
    entry = dict(_entries("wiki/claims-desk-quick-reference.md")[0], file="wiki/hostile.md", id="WIKI-HOSTILE")
    root = _corpus(tmp_path, [entry])
    (root / "wiki").mkdir(exist_ok=True)
    (root / "wiki/hostile.md").write_text(
        "# Filing tips\n\n## Filing Window\n\nProviders have 180 days to file a claim. "
        "<script>alert(1)</script> Keep the clearinghouse acceptance report as proof.\n")
    ingest_directory(db, root, embed_model, settings)
    with Session(db.owner) as s, s.begin():
        add_user(s, name="h-rep", role="rep", password=PASSWORD)
        add_user(s, name="h-comp", role="compliance", password=PASSWORD)
    web = create_app(settings, db=db, pipeline=build_pipeline(db, settings, embed_model=embed_model, today=TODAY))
    rep, reviewer = sign_in(web, "h-rep"), sign_in(web, "h-comp")

    r = rep.post("/ask", data={"question": "How many days do providers have to file a claim?",
                               "csrf_token": token_of(rep)})
    assert r.status_code == 200 and by_class(r.text, "citations"), r.text
    _no_live_script(r.text)
    cite_url = find(r.text, "a", **{"class": "show-text"})[0]["attrs"]["href"]
    for page in (rep.get(cite_url), rep.get(cite_url, headers={"HX-Request": "true"})):
        assert page.status_code == 200
        assert "<script>alert(1)</script>" in text_of(page.text, "cited-text")  # shown as text...
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text  # ...because it is escaped
        _no_live_script(page.text)

    with Session(db.owner) as s:
        trace_id = s.scalar(select(Trace.id).where(Trace.user_name == "h-rep"))
    page = reviewer.get(f"/disputes/{trace_id}")
    assert page.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    _no_live_script(page.text)


# -- SQL metacharacters in every search and form field ----------------------------------------------

@pytest.mark.parametrize("payload", SQL_META)
def test_sql_metacharacters_in_every_field_are_data(clients, names, rep_trace, demo_db, payload):
    before = table_counts(demo_db)
    rep, reviewer = clients["rep"], clients["compliance"]
    responses = [
        rep.post("/ask", data={"question": payload, "csrf_token": token_of(rep)}),
        rep.post("/ask", data={"question": "What is the timely filing limit?", "date_of_service": payload,
                               "denial_notice_date": payload, "csrf_token": token_of(rep)}),
        reviewer.get("/disputes", params={"words": payload}),
        reviewer.get("/disputes", params={"staff": payload}),
        reviewer.get("/disputes", params={"words": "timely", "asked_from": payload, "asked_to": payload}),
        reviewer.post(f"/disputes/{rep_trace}/check", data={"member_date": payload, "csrf_token": token_of(reviewer)}),
        reviewer.post(f"/disputes/{rep_trace}/replay", data={"member_date": payload, "csrf_token": token_of(reviewer)}),
        reviewer.get(f"/disputes/{payload}"),
        rep.get(f"/citations/{rep_trace}/{payload}"),
        TestClient(rep.app).post("/login", data={"name": payload, "password": payload,
                                                 "csrf_token": token_of(TestClient(rep.app), "/login")}),
    ]
    assert [r.status_code for r in responses if r.status_code >= 500] == []
    after = table_counts(demo_db)  # every table still there, nothing deleted
    assert all(after[t] >= before[t] for t in before)
    # A staff name is matched exactly: '%' and '_' are not wildcards.
    if payload in ("%", "_"):
        assert not find(responses[3].text, "table")


# -- limits and dates ------------------------------------------------------------------------------

@pytest.mark.parametrize("length", [1001, 200_000])
def test_over_long_question_gets_the_limit_message_and_no_model_call(settings, demo_db, embed_model, names, length):
    llm = ScriptedLLM(replies=[])
    web = create_app(settings, db=demo_db, pipeline=build_pipeline(demo_db, settings, embed_model=embed_model,
                                                                   llm=llm, today=TODAY))
    client = sign_in(web, names["rep"])
    r = client.post("/ask", data={"question": "timely filing " * (length // 14 + 1), "csrf_token": token_of(client)})
    # Refused before any work (tests/test_bounded_inputs.py): a question just over the cap as rejected
    # input, traced; a form body past its limit is not even read.
    if length == 1001:
        assert r.status_code == 422 and "longer than 1000 characters" in text_of(r.text, "notice-error")
    else:
        assert r.status_code == 413 and "up to 1000 characters" in text_of(r.text, "page-notice")
    assert llm.prompts == []


@pytest.mark.parametrize("value,message", [
    ("1850-01-01", "outside 1900-2100"), ("0001-01-01", "outside 1900-2100"), ("9999-12-31", "outside 1900-2100"),
    ("2101-01-01", "outside 1900-2100"), ("2025-02-30", "not a date"), ("+10000-01-01", "not a date"),
    ("2025-11-03T00:00", "not a date"), ("03/11/2025", "not a date"),
])
def test_malformed_and_far_dates_get_a_clear_message_over_http(clients, rep_trace, value, message):
    rep, reviewer = clients["rep"], clients["compliance"]
    r = rep.post("/ask", data={"question": "What is the timely filing limit?", "date_of_service": value,
                               "csrf_token": token_of(rep)})
    assert r.status_code == 422 and message in text_of(r.text, "answer-reason")
    r = reviewer.get("/disputes", params={"words": "timely", "asked_from": value})
    assert r.status_code == 422 and message in text_of(r.text, "notice-error")
    r = reviewer.post(f"/disputes/{rep_trace}/check", data={"member_date": value, "csrf_token": token_of(reviewer)})
    assert r.status_code == 422 and message in text_of(r.text, "notice-error")


# -- sessions, CSRF, other people's records ----------------------------------------------------------

def _tampered(cookie: str) -> str:
    payload, stamp, sig = cookie.rsplit(".", 2)
    return f"{payload}.{stamp}.{sig[:-2]}{'AA' if not sig.endswith('AA') else 'BB'}"


def _forged(name: str, secret: str) -> str:
    data = base64.b64encode(json.dumps({"user": name, "csrf": "x"}).encode())
    return TimestampSigner(secret).sign(data).decode()


@pytest.mark.parametrize("kind", ["tampered", "other secret", "unsigned", "garbage"])
def test_forged_or_tampered_session_cookie_is_signed_out(app, clients, names, settings, demo_db, kind):
    good = clients["compliance"].cookies.get("policydesk_session")
    raw = base64.b64encode(json.dumps({"user": names["compliance"], "csrf": "x"}).encode()).decode()
    cookie = {"tampered": _tampered(good), "other secret": _forged(names["compliance"], "not-the-secret"),
              "unsigned": raw, "garbage": "%00'; DROP TABLE users; --"}[kind]
    client = TestClient(app, follow_redirects=False, cookies={"policydesk_session": cookie})
    for path in ("/ask", "/disputes", "/disputes/audit"):
        r = client.get(path)
        assert r.status_code == 303 and r.headers["location"].startswith("/login"), (path, r.status_code)
    before = table_counts(demo_db)["traces"]
    r = client.post("/ask", data={"question": "What is the timely filing limit?", "csrf_token": "x"},
                    headers={"X-CSRF-Token": "x"})
    assert r.status_code in (303, 403) and table_counts(demo_db)["traces"] == before


def test_disputes_posts_without_csrf_token_are_rejected(clients, rep_trace, demo_db):
    # test_web.py pins /ask, /login and /logout; these are the reviewer's POSTs.
    before = table_counts(demo_db)
    for action in ("check", "replay"):
        r = clients["compliance"].post(f"/disputes/{rep_trace}/{action}", data={"member_date": "2025-11-03"})
        assert r.status_code == 403 and "did not come from this site" in r.text
    assert table_counts(demo_db) == before


def test_rep_cannot_read_another_users_trace_by_id(clients, names, demo_db):
    # A letters-only marker: a hex one is identifier-shaped and is redacted before the trace (issue 15).
    marker = "".join(chr(ord("a") + int(c, 16)) for c in uuid.uuid4().hex[:8])
    secret_question = f"What is the appeal window after a denial? marker-{marker}"
    other = clients["rep2"]
    other.post("/ask", data={"question": secret_question, "csrf_token": token_of(other)})
    with Session(demo_db.owner) as s:
        trace = s.scalars(select(Trace).where(Trace.user_name == names["rep2"], Trace.question == secret_question)).one()
        chunk = (trace.citations or [{"chunk_id": "POL-APL:v2:x"}])[0]["chunk_id"]
    rep = clients["rep"]
    for path, status in ((f"/disputes/{trace.id}", 403), (f"/citations/{trace.id}/{chunk}", 404),
                         (f"/disputes?staff={names['rep2']}", 403), (f"/disputes?words={secret_question[-15:]}", 403)):
        for headers in ({}, {"Accept": "application/json"}, {"HX-Request": "true"}):
            r = rep.get(path, headers=headers)
            assert r.status_code == status, (path, headers)
            assert secret_question[-15:] not in r.text and names["rep2"] not in r.text
    r = rep.post(f"/disputes/{trace.id}/replay", data={"member_date": "2025-11-03", "csrf_token": token_of(rep)})
    assert r.status_code == 403 and secret_question[-15:] not in r.text


# -- ingest file names -------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["absolute", "symlink out", "dot-dot inside name"])
def test_ingest_file_names_cannot_escape_the_corpus(case, demo_db, embed_model, settings, tmp_path):
    # test_ingest.py pins "../../etc/passwd"; these are the other ways out.
    entries = _entries("policies/pol-tf-v1.pdf")
    root = _corpus(tmp_path, entries)
    if case == "absolute":
        entries[0]["file"] = str((root / "policies/pol-tf-v1.pdf").resolve())
    elif case == "symlink out":
        outside = tmp_path / "outside.pdf"
        outside.write_bytes((root / "policies/pol-tf-v1.pdf").read_bytes())
        (root / "policies/link.pdf").symlink_to(outside)
        entries[0]["file"] = "policies/link.pdf"
    else:
        entries[0]["file"] = "policies/../../c/../outside.pdf"
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))
    before = table_counts(demo_db)
    with pytest.raises(IngestError, match="file: path escapes the corpus directory"):
        ingest_directory(demo_db, root, embed_model, settings)
    assert table_counts(demo_db) == before


def test_nul_byte_in_any_field_is_a_clear_422(clients, rep_trace):
    # Pins the bug tests/test_fuzz.py found: a NUL reached Postgres and came back as a 503.
    rep, reviewer = clients["rep"], clients["compliance"]
    for r in (rep.post("/ask", data={"question": "timely\x00filing", "csrf_token": token_of(rep)}),
              reviewer.get("/disputes", params={"words": "a\x00b"}),
              reviewer.get("/disputes", params={"staff": "\x00"}),
              _signed_out_login(rep.app, "\x00")):
        assert r.status_code == 422, r.status_code
    r = reviewer.get("/disputes", params={"words": "a\x00b"}, headers={"Accept": "application/json"})
    assert r.status_code == 422 and "NUL character" in r.json()["detail"]
    r = rep.post("/ask", data={"question": "timely\x00filing", "csrf_token": token_of(rep)})
    assert r.status_code == 422 and "NUL character" in text_of(r.text, "notice-error")  # the ask page's own, traced


def _signed_out_login(app, name: str):
    client = TestClient(app, follow_redirects=False)
    return client.post("/login", data={"name": name, "password": "x", "csrf_token": token_of(client, "/login")})
