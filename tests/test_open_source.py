"""A citation opens its source at the cited place (issue 51, item 3), over real HTTP.

A PDF opens at the cited page of the file as ingested (its bytes hash to the version's recorded
SHA-256, even after the file on disk changed); any other format opens the version's text at the
cited section. Every way of not being allowed to read a chunk (above the clearance, retired,
unknown) is the same 404.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import uuid
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote, unquote

import httpx
import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.accounts.access import ROLES, clearance_for
from policydesk.accounts.users import add_user
from tests.served_app import served
from tests.web_helpers import PASSWORD, by_class, csrf_from, find

WORD = re.compile(r"\w+")
_VARYING = ("date", "x-request-id", "set-cookie")  # per response, whatever was asked


def _words(s: str) -> list[str]:
    return WORD.findall(s.lower())


def _client(base: str, name: str | None = None) -> httpx.Client:
    client = httpx.Client(base_url=base, follow_redirects=False, timeout=30)
    if name is not None:
        token = csrf_from(client.get("/login").text)
        r = client.post("/login", data={"name": name, "password": PASSWORD, "csrf_token": token, "next": "/ask"})
        assert r.status_code == 303, r.text
    return client


def _add_people(db, prefix: str) -> dict[str, str]:
    tag = uuid.uuid4().hex[:6]
    names = {role: f"{prefix}-{role}-{tag}" for role in ROLES}
    with Session(db.owner) as session, session.begin():
        for role, name in names.items():
            add_user(session, name=name, role=role, password=PASSWORD)
    return names


def _open(chunk_id: str) -> str:
    return f"/sources/{quote(chunk_id, safe='')}/open"


@pytest.fixture(scope="module")
def demo_site(demo_db, settings, embed_model):
    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app

    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=date(2026, 11, 29))
    people = _add_people(demo_db, "cite")
    with served(create_app(settings, db=demo_db, pipeline=pipeline)) as site:
        clients = {role: _client(site.url, name) for role, name in people.items()}
        yield site.url, clients, people
        for c in clients.values():
            c.close()


def _chunks(db) -> list[dict]:
    with db.owner.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(text(
            "SELECT c.node_id, c.text, c.metadata_, c.access_level, c.sensitive, v.source_file, v.source_sha256 "
            "FROM data_chunks c JOIN document_versions v ON v.doc_id = c.doc_id AND v.version = c.version "
            "ORDER BY c.id"))]


def _body_words(chunk: dict, n: int = 8) -> list[str]:
    """The chunk's opening words below its heading path line."""
    return _words(chunk["text"].split("\n", 1)[1])[:n]


def _pdf_page_words(content: bytes, page: int) -> list[str]:
    from pypdf import PdfReader

    return _words(PdfReader(io.BytesIO(content)).pages[page - 1].extract_text())


def _contains(words: list[str], part: list[str]) -> bool:
    return any(words[i:i + len(part)] == part for i in range(len(words) - len(part) + 1))


def _open_pdf(client: httpx.Client, chunk: dict) -> tuple[int, bytes]:
    r = client.get(_open(chunk["node_id"]))
    assert r.status_code == 303, r.text
    location = r.headers["location"]
    path, _, fragment = location.partition("#")
    assert unquote(path) == f"/sources/{chunk['node_id']}/file" and fragment.startswith("page=")
    served_file = client.get(path)
    assert served_file.status_code == 200
    assert served_file.headers["content-type"] == "application/pdf"
    assert served_file.headers["content-disposition"].startswith("inline")
    assert "no-store" in served_file.headers["cache-control"] and "private" in served_file.headers["cache-control"]
    assert "frame-ancestors 'none'" in served_file.headers["content-security-policy"]
    assert served_file.headers["x-content-type-options"] == "nosniff"
    return int(fragment.removeprefix("page=")), served_file.content


def test_pdf_citation_on_the_ask_page_opens_the_ingested_file_at_the_cited_page(demo_site, demo_db):
    base, clients, _ = demo_site
    rep = clients["rep"]
    page = rep.get("/ask")
    r = rep.post("/ask", data={"question": "What is the timely filing limit?", "csrf_token": csrf_from(page.text)})
    assert r.status_code == 200
    links = [a["attrs"]["href"] for a in by_class(r.text, "open-source")]
    assert links, "no 'open source' link on the answer's citations"
    chunks = {c["node_id"]: c for c in _chunks(demo_db)}
    opened = 0
    for href in links:
        chunk_id = unquote(href.removeprefix("/sources/").removesuffix("/open"))
        chunk = chunks[chunk_id]
        if not chunk["source_file"].endswith(".pdf"):
            continue
        number, content = _open_pdf(rep, chunk)
        assert number == chunk["metadata_"]["page_start"]
        assert hashlib.sha256(content).hexdigest() == chunk["source_sha256"]
        assert _contains(_pdf_page_words(content, number), _body_words(chunk))
        opened += 1
    assert opened, "the timely filing answer cites no PDF"


def test_a_chunk_on_a_later_page_opens_at_that_page(demo_site, demo_db):
    base, clients, _ = demo_site
    later = [c for c in _chunks(demo_db) if (c["metadata_"].get("page_start") or 0) >= 2
             and c["access_level"] in clearance_for("rep").levels and not c["sensitive"]]
    assert later, "the demo corpus has no readable chunk past page 1"
    for chunk in later:
        number, content = _open_pdf(clients["rep"], chunk)
        assert number == chunk["metadata_"]["page_start"] >= 2
        assert _contains(_pdf_page_words(content, number), _body_words(chunk))
        assert not _contains(_pdf_page_words(content, 1), _body_words(chunk))


@pytest.mark.parametrize("suffix", [".md", ".docx"])
def test_other_formats_open_their_text_at_the_cited_section(demo_site, demo_db, suffix):
    base, clients, _ = demo_site
    chunk = next(c for c in _chunks(demo_db) if c["source_file"].endswith(suffix) and c["access_level"] == "public"
                 and ":" not in c["metadata_"]["section_id"])
    r = clients["rep"].get(_open(chunk["node_id"]))
    assert r.status_code == 303
    path, _, fragment = r.headers["location"].partition("#")
    assert fragment == f"section-{chunk['metadata_']['section_id']}"
    page = clients["rep"].get(path)
    assert page.status_code == 200 and "no-store" in page.headers["cache-control"]
    [anchored] = find(page.text, "section", id=fragment)
    assert "cited" in anchored["attrs"]["class"].split()
    assert " ".join(_body_words(chunk, 12)) in " ".join(_words(anchored["text"]))
    marked = " ".join(" ".join(_words(m["text"])) for m in find(page.text, "mark"))
    assert " ".join(_body_words(chunk, 12)) in marked
    # Every readable section of the version is on the page, in order; only the cited one is marked.
    sections = [e for e in find(page.text, "section") if (e["attrs"].get("id") or "").startswith("section-")]
    assert len(sections) == sum(1 for c in _chunks(demo_db) if c["source_file"] == chunk["source_file"])
    assert sum("cited" in s["attrs"]["class"].split() for s in sections) == 1


def test_restricted_source_is_the_same_404_as_an_unknown_id(demo_site, demo_db):
    base, clients, _ = demo_site
    rep = clients["rep"]
    hidden = next(c for c in _chunks(demo_db) if c["access_level"] not in clearance_for("rep").levels)
    unknown = f"{hidden['node_id']}-no-such-{uuid.uuid4().hex[:6]}"
    for tail in ("open", "file", "text"):
        seen = rep.get(f"/sources/{quote(hidden['node_id'], safe='')}/{tail}")
        missing = rep.get(f"/sources/{quote(unknown, safe='')}/{tail}")
        assert seen.status_code == missing.status_code == 404
        assert seen.text == missing.text
        assert {k: v for k, v in seen.headers.items() if k not in _VARYING} == \
               {k: v for k, v in missing.headers.items() if k not in _VARYING}
    # The supervisor, cleared for it, opens the same link.
    if hidden["access_level"] in clearance_for("supervisor").levels:
        assert clients["supervisor"].get(_open(hidden["node_id"])).status_code == 303


def test_signed_out_caller_is_sent_to_sign_in_and_back(demo_site, demo_db):
    base, _, people = demo_site
    chunk = _chunks(demo_db)[0]
    with _client(base) as anonymous:
        for tail in ("open", "file", "text"):
            r = anonymous.get(f"/sources/{quote(chunk['node_id'], safe='')}/{tail}")
            assert r.status_code == 303 and r.headers["location"].startswith("/login?next=")
            assert b"%PDF" not in r.content and chunk["text"][-30:] not in r.text
        target = unquote(r.headers["location"].split("next=", 1)[1])
        login = anonymous.get("/login", params={"next": target})
        signed = anonymous.post("/login", data={"name": people["rep"], "password": PASSWORD, "next": target,
                                                "csrf_token": csrf_from(login.text)})
        assert signed.status_code == 303 and unquote(signed.headers["location"]) == f"/sources/{chunk['node_id']}/text"
        page = anonymous.get(signed.headers["location"])
        assert page.status_code == 200 and find(page.text, "section", id=f"section-{chunk['metadata_']['section_id']}")


# -- a copy of the demo corpus: files that change on disk, a retired source ------------------------

def _retire(db, directory: Path, doc_id: str) -> None:
    from policydesk.ingest.sync import retire_sources

    manifest = directory / "manifest.yaml"
    data = yaml.safe_load(manifest.read_text())
    data["sources"] = [s for s in data["sources"] if s["id"] != doc_id]
    manifest.write_text(yaml.safe_dump(data, sort_keys=False))
    retire_sources(db, directory, [doc_id], actor="test")


@pytest.fixture(scope="module")
def changed_site(make_db, settings, embed_model, tmp_path_factory):
    """The demo corpus ingested from a folder of its own, one source then retired."""
    from policydesk.ingest import ingest_directory
    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app

    corpus = tmp_path_factory.mktemp("cite-corpus") / "corpus"
    shutil.copytree(Path(__file__).resolve().parent.parent / "corpus", corpus)
    db = make_db()
    ingest_directory(db, corpus, embed_model, settings)
    pipeline = build_pipeline(db, settings, embed_model=embed_model, today=date(2026, 11, 29))
    people = _add_people(db, "cite-ch")
    with served(create_app(settings, db=db, pipeline=pipeline)) as site:
        clients = {role: _client(site.url, name) for role, name in people.items()}
        yield site.url, clients, db, corpus, pipeline, people
        for c in clients.values():
            c.close()


def test_the_served_file_is_the_ingested_one_after_the_file_on_disk_changes(changed_site, settings, embed_model):
    from policydesk.ingest.staleness import check_staleness
    from policydesk.ingest.sync import sync_directory

    base, clients, db, corpus, *_ = changed_site
    chunk = next(c for c in _chunks(db) if c["source_file"].endswith(".pdf") and c["access_level"] == "public")
    number, before = _open_pdf(clients["rep"], chunk)
    on_disk = corpus / chunk["source_file"]
    assert on_disk.read_bytes() == before
    on_disk.write_bytes(on_disk.read_bytes() + b"\n% appended after ingest\n")
    assert check_staleness(db, corpus, max_bytes=settings.MAX_SOURCE_BYTES)  # the change is seen
    number_after, after = _open_pdf(clients["rep"], chunk)
    assert (number_after, after) == (number, before)
    assert hashlib.sha256(after).hexdigest() == chunk["source_sha256"] != hashlib.sha256(on_disk.read_bytes()).hexdigest()
    # A sync of everything else (nothing changed) writes no file bytes.
    with db.owner.connect() as conn:
        kept = conn.execute(text("SELECT count(*) FROM source_files")).scalar_one()
    on_disk.write_bytes(before)
    report = sync_directory(db, corpus, embed_model, settings)
    assert report.written == []
    with db.owner.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM source_files")).scalar_one() == kept


def test_a_pdf_whose_file_was_not_kept_opens_its_text_and_says_why(changed_site):
    """A version indexed before files were kept: its text at the cited section, with a notice."""
    base, clients, db, *_ = changed_site
    pdfs = [c for c in _chunks(db) if c["source_file"].endswith(".pdf") and c["access_level"] == "public"]
    chunk = pdfs[-1]
    assert chunk["source_sha256"] != pdfs[0]["source_sha256"]
    with db.owner.begin() as conn:
        conn.execute(text("DELETE FROM source_files WHERE sha256 = :s"), {"s": chunk["source_sha256"]})
    rep = clients["rep"]
    opened = rep.get(_open(chunk["node_id"]))
    path, _, fragment = opened.headers["location"].partition("#")
    assert opened.status_code == 303 and path.endswith("/text") and fragment == f"section-{chunk['metadata_']['section_id']}"
    page = rep.get(path)
    assert page.status_code == 200 and by_class(page.text, "source-not-kept") and not by_class(page.text, "source-file")
    assert rep.get(path.removesuffix("/text") + "/file").status_code == 404


FAQ = "wiki/appeals-faq.md"
APPEAL_QUESTION = "Can members send an appeal by email?"


def test_impact_report_and_disputes_page_link_each_citation_to_its_source(changed_site, settings, embed_model):
    """A supervisor's answer cites the FAQ; the FAQ is edited and synced; the impact list's row and
    the disputes page's citation both open the FAQ's text at the cited section (as indexed now)."""
    from policydesk.contract.answer import AskRequest
    from policydesk.ingest.sync import sync_directory

    base, clients, db, corpus, pipeline, people = changed_site
    asked = pipeline.ask(AskRequest(user_name=people["supervisor"], question=APPEAL_QUESTION))
    [cited] = [c for c in asked.citations if c.source_type == "wiki"]
    faq = corpus / FAQ
    old = faq.read_text()
    body = " ".join(cited.text.split("\n", 1)[1].split())
    line = next(ln for ln in old.splitlines() if len(ln.split()) > 6 and " ".join(ln.split()) in body)
    faq.write_text(old.replace(line, line + " Added after the answer was given."))
    assert sync_directory(db, corpus, embed_model, settings, paths=[FAQ]).written
    since = (datetime.now(timezone.utc).date() - timedelta(days=1)).isoformat()
    report = clients["supervisor"].get("/reports/impact", params={"since": since})
    assert report.status_code == 200
    assert str(asked.trace_id) in {r["attrs"].get("data-trace-id") for r in find(report.text, "tr")}
    hrefs = {a["attrs"]["href"] for a in by_class(report.text, "open-source")}
    assert f"/sources/{quote(cited.chunk_id, safe='')}/open" in hrefs
    disputes = clients["compliance"].get(f"/disputes/{asked.trace_id}")
    assert disputes.status_code == 200
    assert f"/sources/{quote(cited.chunk_id, safe='')}/open" in {a["attrs"]["href"] for a in by_class(disputes.text, "open-source")}
    opened = clients["supervisor"].get(f"/sources/{quote(cited.chunk_id, safe='')}/open")
    path, _, fragment = opened.headers["location"].partition("#")
    page = clients["supervisor"].get(path)
    [section] = find(page.text, "section", id=fragment)
    assert "cited" in section["attrs"]["class"].split() and "Added after the answer was given" in section["text"]


@pytest.mark.parametrize("role", ROLES)
def test_every_chunk_a_role_may_not_read_is_not_found(changed_site, role):
    """Above the role's clearance, retired (its chunks gone, its id kept in old answers), or an id
    that never existed: each is the same 404 on every URL."""
    base, clients, db, corpus, *_ = changed_site
    clearance = clearance_for(role)
    chunks = _chunks(db)
    retired_ids = _retired_chunk_ids(db, corpus, chunks)
    refused = [c["node_id"] for c in chunks if not clearance.permits(c["access_level"], c["sensitive"])]
    refused += retired_ids + [f"NO-SUCH-{uuid.uuid4().hex[:6]}:v1:purpose"]
    assert retired_ids, "no retired chunk to try"
    client = clients[role]
    reference = client.get(f"/sources/{quote(refused[-1], safe='')}/open")
    assert reference.status_code == 404
    for chunk_id in refused:
        for tail in ("open", "file", "text"):
            r = client.get(f"/sources/{quote(chunk_id, safe='')}/{tail}")
            assert r.status_code == 404, (role, chunk_id, tail)
            assert r.text == reference.text


_RETIRED: dict[int, list[str]] = {}


def _retired_chunk_ids(db, corpus: Path, chunks: list[dict]) -> list[str]:
    """Retire (once per database) a source every role could read before: a wiki page."""
    if id(db) not in _RETIRED:
        wiki = next(c for c in chunks if c["source_file"].startswith("wiki/") and c["access_level"] == "public"
                    and c["source_file"] != FAQ)
        doc_id = wiki["metadata_"]["doc_id"]
        ids = [c["node_id"] for c in chunks if c["metadata_"]["doc_id"] == doc_id]
        _retire(db, corpus, doc_id)
        _RETIRED[id(db)] = ids
    return _RETIRED[id(db)]


# -- each layer on its own: the statement's predicate, row-level security, the kept bytes ----------

@pytest.mark.parametrize("role", ROLES)
def test_the_statement_alone_reads_only_what_the_role_may(demo_db, role):
    """On the owner login (no row-level security) the re-read's own predicate still decides."""
    from policydesk.storage.source_files import cited_file, cited_place

    clearance = clearance_for(role)
    chunks = _chunks(demo_db)
    with Session(demo_db.owner) as session:
        for c in chunks:
            place = cited_place(session, chunk_id=c["node_id"], clearance=clearance)
            found = cited_file(session, chunk_id=c["node_id"], clearance=clearance)
            if clearance.permits(c["access_level"], c["sensitive"]):
                assert place is not None and place.file_kept and found is not None
                assert hashlib.sha256(found[1]).hexdigest() == c["source_sha256"] == place.source_sha256
            else:
                assert place is None and found is None, (role, c["node_id"])


@pytest.mark.parametrize("role", ROLES)
def test_row_level_security_alone_shows_the_app_login_only_readable_files(demo_db, role):
    """A bare SELECT on the table, no predicate of ours: only files of versions the role may read."""
    from policydesk.storage.scope import scoped_session

    clearance = clearance_for(role)
    with demo_db.owner.connect() as conn:
        versions = conn.execute(text("SELECT source_sha256, access_level, sensitive FROM document_versions")).all()
    readable = {v.source_sha256 for v in versions if clearance.permits(v.access_level, v.sensitive)}
    with scoped_session(demo_db.app, clearance) as session:
        seen = set(session.execute(text("SELECT sha256 FROM source_files")).scalars())
    assert seen == readable
    with demo_db.app.connect() as conn:  # no scope set: nothing
        assert conn.execute(text("SELECT count(*) FROM source_files")).scalar_one() == 0


def test_bytes_already_kept_are_not_read_again_and_changed_bytes_are_refused(make_db):
    from policydesk.storage.source_files import FileChangedError, keep_files

    db = make_db()
    content = b"%PDF-1.4 kept once"
    sha = hashlib.sha256(content).hexdigest()
    with Session(db.owner) as session, session.begin():
        assert keep_files(session, {sha: lambda: content}) == 1

    def must_not_read() -> bytes:
        raise AssertionError("bytes already kept were read again")

    with Session(db.owner) as session, session.begin():
        assert keep_files(session, {sha: must_not_read}) == 0
    other = hashlib.sha256(b"what ingest hashed").hexdigest()
    with pytest.raises(FileChangedError):
        with Session(db.owner) as session, session.begin():
            keep_files(session, {other: lambda: b"what is on disk now"})
    with db.owner.connect() as conn:
        assert conn.execute(text("SELECT sha256 FROM source_files")).scalars().all() == [sha]


def test_migration_0024_steps_down_and_up_again(make_db, settings):
    from alembic import command

    from policydesk.storage.migrate import alembic_config, current_revision

    db = make_db()

    def migrate(step, revision: str) -> None:
        with db.owner.begin() as conn:
            step(alembic_config(conn, settings.APP_DB_ROLE, settings.APP_DB_PASSWORD.get_secret_value()), revision)

    migrate(command.downgrade, "0023")
    with db.owner.connect() as conn:
        assert conn.execute(text("SELECT to_regclass('source_files')")).scalar_one() is None
    migrate(command.upgrade, "0024")
    assert current_revision(db.owner) == "0024"
    with db.owner.connect() as conn:
        assert conn.execute(text("SELECT relforcerowsecurity FROM pg_class WHERE relname = 'source_files'")).scalar_one()
    migrate(command.upgrade, "head")



def test_start_up_check_refuses_kept_files_without_forced_rls_or_with_app_writes(make_db, settings):
    from policydesk.storage.security import database_problems

    db = make_db()
    assert database_problems(db.app) == []
    with db.owner.begin() as conn:
        conn.execute(text("ALTER TABLE source_files NO FORCE ROW LEVEL SECURITY"))
        conn.execute(text(f"GRANT INSERT ON source_files TO {settings.APP_DB_ROLE}"))
    problems = database_problems(db.app)
    assert any("not forced on source_files" in p for p in problems), problems
    assert any("may INSERT source_files" in p for p in problems), problems


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists(), reason="Debian chromium is not installed")
def test_in_a_browser_the_citation_link_lands_on_the_cited_section_marked(demo_db, settings, embed_model):
    """What a rep sees: the link scrolls the version's text to the cited section, which is marked."""
    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app
    from tests import browser_helpers as bh

    chunks = [c for c in _chunks(demo_db) if c["source_file"].endswith(".md") and c["access_level"] == "public"]
    longest = max({c["source_file"] for c in chunks}, key=lambda f: sum(c["source_file"] == f for c in chunks))
    last = [c for c in chunks if c["source_file"] == longest][-1]
    name = f"cite-browser-{uuid.uuid4().hex[:6]}"
    with Session(demo_db.owner) as session, session.begin():
        add_user(session, name=name, role="rep", password=bh.PASSWORD)
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=date(2026, 11, 29))
    with bh.served(create_app(settings, db=demo_db, pipeline=pipeline)) as base, bh.chromium() as browser:
        page = bh.sign_in(browser, base, name)
        page.set_viewport_size({"width": 1000, "height": 420})
        page.goto(f"{base}{_open(last['node_id'])}")
        anchor = f"section-{last['metadata_']['section_id']}"
        assert page.url.endswith(f"#{anchor}")
        cited = f"[id='{anchor}']"
        top = bh.box(page, cited)["y"]
        assert page.evaluate("window.scrollY") > 0 and 0 <= top < 420 / 2, top
        assert page.locator(f"{cited} mark").inner_text().split()[:6] == last["text"].split("\n", 1)[1].split()[:6]
        assert page.locator("section.cited").count() == 1
        bh.shot(page, "open-source", "markdown-cited-section.png")


# -- files made here: a long multi-page PDF cut into several chunks, and an HTML page -------------

def test_every_chunk_of_a_multi_page_pdf_names_the_pages_its_words_are_on(tmp_path, settings):
    """Each chunk's opening words are on its page_start and its closing words on its page_end, for
    a long section cut into parts that start and end mid-page and run across page breaks."""
    from policydesk.ingest import plan_directory
    from tests.ingest_fixtures import build

    root = build(tmp_path / "fixtures")
    _, planned = plan_directory(root, settings)
    [imaging] = [p for p in planned if p.source.file == "policies/imaging.pdf"]
    content = (root / "policies/imaging.pdf").read_bytes()
    from pypdf import PdfReader

    pages = len(PdfReader(io.BytesIO(content)).pages)
    assert pages >= 3
    spans = set()
    for chunk in imaging.chunks:
        start, end = chunk.pages
        body = _words(chunk.text.split("\n", 1)[1])
        assert 1 <= start <= end <= pages
        assert _contains(_pdf_page_words(content, start), body[:6]), (chunk.key, start)
        assert _contains(_pdf_page_words(content, end), body[-6:]), (chunk.key, end)
        spans.add((start, end))
    assert any(s != e for s, e in spans) and any(s >= 2 for s, _ in spans), spans
    # Other formats carry no pages.
    assert all(c.pages is None for p in planned if not p.source.file.endswith(".pdf") for c in p.chunks)


def test_an_html_citation_opens_its_text_at_the_section(make_db, settings, embed_model, tmp_path):
    from policydesk.ingest import ingest_directory
    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app
    from tests.ingest_fixtures import build

    db = make_db()
    root = build(tmp_path / "fixtures")
    ingest_directory(db, root, embed_model, settings)
    people = _add_people(db, "cite-html")
    chunk = next(c for c in _chunks(db) if c["source_file"].endswith(".html") and ":" not in c["metadata_"]["section_id"]
                 and c["metadata_"]["section"] != c["metadata_"]["title"])
    pipeline = build_pipeline(db, settings, embed_model=embed_model, today=date(2026, 11, 29))
    with served(create_app(settings, db=db, pipeline=pipeline)) as site:
        rep = _client(site.url, people["rep"])
        opened = rep.get(_open(chunk["node_id"]))
        path, _, fragment = opened.headers["location"].partition("#")
        assert opened.status_code == 303 and fragment == f"section-{chunk['metadata_']['section_id']}"
        page = rep.get(path)
        [section] = find(page.text, "section", id=fragment)
        assert "cited" in section["attrs"]["class"].split()
        assert _contains(_words(section["text"]), _body_words(chunk))
        # The HTML file itself is only ever a download, never a page of this site.
        raw = rep.get(path.removesuffix("/text") + "/file")
        assert raw.status_code == 200 and raw.headers["content-disposition"].startswith("attachment")
        assert raw.headers["content-type"] == "application/octet-stream"
        assert raw.content == (root / chunk["source_file"]).read_bytes()
        rep.close()
