"""The gaps, owners and impact reports in a real browser (Debian chromium) at a 1200 px window, as
compliance and as a supervisor: every table lies inside its card (nothing needs a sideways scroll)
and an owner is named once, over their sources. Screenshots under the data directory
(tests/browser_helpers.py), group "reports".
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.accounts.users import add_user
from policydesk.contract.answer import AskRequest
from policydesk.storage.chunk_ids import sha256_text
from policydesk.proof.tracing import write_trace
from policydesk.reading.language import sentences
from tests.browser_helpers import PASSWORD, assert_within, box, chromium, needs_chromium, served, shot, sign_in
from tests.conftest import CORPUS, WEB_TODAY

pytestmark = needs_chromium
GROUP = "reports"
WIDTH = 1200
QUESTIONS = ("What is the timely filing limit?", "Can members send an appeal by email?",
             "Does the plan cover acupuncture for chronic back pain?", "How soon can a prescription be refilled?",
             "Does the Hospice and Palliative Care policy cover acupuncture?")


def _cite_an_earlier_wording(db, rep: str) -> None:
    """A rep's answer that cited a section (of a source with one version, so the version still
    applies) whose second sentence has been reworded since: one row on the impact list, with a
    sentence diff."""
    with db.owner.connect() as conn:
        chunk = conn.execute(text(
            "SELECT node_id, text, metadata_ FROM data_chunks WHERE access_level = 'public' AND doc_id IN "
            "(SELECT doc_id FROM document_versions GROUP BY doc_id HAVING count(*) = 1) "
            "ORDER BY length(text) DESC, node_id LIMIT 1")).one()
    said = sentences(chunk.text)
    assert len(said) >= 3, "the longest public section should hold a few sentences"
    earlier = chunk.text.replace(said[1], said[1].rstrip(".") + " as the earlier wording said.")
    meta = chunk.metadata_
    write_trace(db, {
        "id": uuid.uuid4(), "kind": "ask", "user_name": rep, "user_role": "rep",
        "permitted_levels": ["public", "internal"], "sensitive_cleared": False, "question": "an earlier answer",
        "created_at": datetime.now(timezone.utc), "chunk_ids": [chunk.node_id], "answer_text": "x",
        "citations": [{"chunk_id": chunk.node_id, "doc_id": meta["doc_id"], "title": meta["title"],
                       "section": meta.get("section", "s"), "source_type": meta.get("source_type", "policy"),
                       "version": meta["version"], "effective_from": meta["effective_from"], "effective_to": None,
                       "text_sha256": sha256_text(earlier), "text": earlier}],
    })


@pytest.fixture(scope="module")
def world(make_db, settings, embed_model):
    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app

    db = make_db(demo=True)
    tag = uuid.uuid4().hex[:6]
    names = {role: f"reports-{role}-{tag}" for role in ("rep", "supervisor", "compliance")}
    with Session(db.owner) as session, session.begin():
        for role, name in names.items():
            add_user(session, name=name, role=role, password=PASSWORD)
    local = settings.model_copy(update={"SYNC_DIR": CORPUS})  # the manifest's review_every
    pipeline = build_pipeline(db, local, embed_model=embed_model, today=WEB_TODAY)
    for question in QUESTIONS:
        pipeline.ask(AskRequest(user_name=names["rep"], question=question))
    _cite_an_earlier_wording(db, names["rep"])
    with served(create_app(local, db=db, pipeline=pipeline)) as url:
        yield url, names


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def _fits(page) -> int:
    """Every table inside its card, no sideways scroll in a table's wrapper or the page; returns the
    number of tables checked."""
    tables = page.locator("main section.card table").count()
    for i in range(tables):
        assert_within(page, f"main section.card:has(table) table >> nth={i}", f"main section.card:has(table) >> nth={i}")
    overflowing = page.evaluate("""() => [...document.querySelectorAll('.table-wrap')]
        .filter(w => w.scrollWidth > w.clientWidth + 1).length""")
    assert overflowing == 0
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    return tables


def _open(page, url: str, ready: str) -> None:
    page.goto(url)
    page.wait_for_selector(ready)


@pytest.mark.parametrize("role", ["compliance", "supervisor"])
def test_reports_fit_a_1200_px_window_and_name_each_owner_once(browser, world, role):
    base, names = world
    page = sign_in(browser, base, names[role], width=WIDTH)

    _open(page, f"{base}/reports/gaps", "table.gaps")
    # Every page link in the header reads on one line ("Gaps report" was broken over two): its
    # text makes one line box (a flex item's own box is stretched to the row, so it can't tell).
    lines = page.eval_on_selector_all("header nav a", """links => links.map(a => {
        const r = document.createRange(); r.selectNodeContents(a); return [a.textContent, r.getClientRects().length]; })""")
    assert lines and all(n == 1 for _, n in lines), lines
    assert _fits(page) >= 1
    owners = page.locator("table.gaps tbody th.owner-name").all_inner_texts()
    assert owners and len(owners) == len(set(owners))
    # A source row names its source, never its owner again.
    source_rows = page.locator("table.gaps tr.gaps-source").all_inner_texts()
    assert source_rows and not any(owner in row for row in source_rows for owner in owners)
    assert box(page, "table.gaps")["width"] <= box(page, "main section.card:has(table.gaps)")["width"]
    assert "Does the plan cover acupuncture for chronic back pain?" in page.inner_text("ol.clusters")
    shot(page, GROUP, f"{role}-gaps.png")

    _open(page, f"{base}/reports/owners", "section.owner-card")
    headings = page.locator("section.owner-card h2").all_inner_texts()
    assert headings and len(headings) == len(set(headings))
    assert page.locator("ul.owner-past_review li").count() >= 1  # the demo manifest's review_every
    assert page.locator("main table").count() == 0 or _fits(page)
    for card in range(page.locator("section.owner-card").count()):
        assert_within(page, f"section.owner-card >> nth={card}", "main")
    shot(page, GROUP, f"{role}-owners.png")

    _open(page, f"{base}/reports/impact", "table.impact")
    for summary in page.locator("table.impact details summary").all():
        summary.click()  # the sentence diffs open: they must fit too
    page.wait_for_selector("table.impact ol.sentence-diff li.added")
    assert page.locator("table.impact li.removed").count() >= 1
    assert page.locator("table.impact li.same").count() >= 1
    assert _fits(page) == 1
    shot(page, GROUP, f"{role}-impact.png")
    page.context.close()
