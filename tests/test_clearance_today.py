"""Cited text follows today's clearance, not the clearance the answer was given under (issue 12).

Regression: a supervisor was shown a citation link to the SIU referral procedure; after being set
to `rep`, the same /citations/{trace}/{chunk} link still returned the restricted sentence,
because the route served the text out of the caller's own trace row and never re-checked.
"""

from __future__ import annotations

import re
import uuid

import pytest
from sqlalchemy.orm import Session

from policydesk.evals.leaks import ChunkCatalog
from policydesk.accounts.users import add_user, set_role
from tests.web_helpers import PASSWORD, ask, sign_in

SIU_QUESTION = "What is the SIU procedure for a fraud referral?"
_CITATION_URL = re.compile(r"/citations/[0-9a-f-]{36}/[^\"'\s<>]+")


@pytest.fixture(scope="module")
def catalog(demo_db) -> ChunkCatalog:
    return ChunkCatalog(demo_db)


def _new_user(db, role: str) -> str:
    name = f"demoted-{uuid.uuid4().hex[:6]}"
    with Session(db.owner) as session, session.begin():
        add_user(session, name=name, role=role, password=PASSWORD)
    return name


def _set_role(db, name: str, role: str) -> None:
    with Session(db.owner) as session, session.begin():
        set_role(session, name=name, role=role)


def test_demoted_supervisor_loses_the_cited_restricted_text(web_app, demo_db, catalog, clients):
    name = _new_user(demo_db, "supervisor")
    client = sign_in(web_app, name)
    page = ask(client, SIU_QUESTION)
    urls = sorted(set(_CITATION_URL.findall(page.text)))
    siu_urls = [u for u in urls if "POL-SIU" in u]
    assert siu_urls, "the supervisor's answer should cite the SIU procedure"
    before = {u: client.get(u, headers={"HX-Request": "true"}) for u in urls}
    assert all(r.status_code == 200 for r in before.values())
    assert catalog.restricted_in_text("rep", "".join(r.text for r in before.values())), \
        "sanity: while a supervisor, the links show text a rep may not read"

    _set_role(demo_db, name, "rep")
    assert client.get(urls[0]).status_code == 303  # the role change ended the session at once
    client = sign_in(web_app, name)  # signed in again, as a rep
    after = {u: client.get(u, headers={"HX-Request": "true"}) for u in urls}
    for u in siu_urls:
        assert after[u].status_code == 404
        assert after[u].text == client.get(u.replace("POL-SIU", "POL-NOPE"), headers={"HX-Request": "true"}).text, \
            "a lost clearance must look exactly like a citation that does not exist"
    seen = [r.text for r in after.values()]
    seen += [client.get("/ask").text, ask(client, SIU_QUESTION).text, client.get("/disputes").text,
             client.get("/disputes/audit").text]
    assert catalog.restricted_in_text("rep", "\n".join(seen)) == set()

    # Compliance reviewing that same answer still sees it under compliance clearance.
    trace_id = siu_urls[0].split("/")[2]
    review = clients["compliance"].get(f"/disputes/{trace_id}")
    assert review.status_code == 200
    assert catalog.restricted_in_text("rep", review.text), "the reviewer should see the cited SIU text"


def test_promoted_back_the_link_works_again(web_app, demo_db):
    name = _new_user(demo_db, "supervisor")
    client = sign_in(web_app, name)
    urls = [u for u in _CITATION_URL.findall(ask(client, SIU_QUESTION).text) if "POL-SIU" in u]
    _set_role(demo_db, name, "rep")
    client = sign_in(web_app, name)  # a role change ends the session: the next sign-in is a rep's
    assert client.get(urls[0]).status_code == 404
    _set_role(demo_db, name, "supervisor")
    client = sign_in(web_app, name)
    assert client.get(urls[0]).status_code == 200


def test_demoted_reviewer_sees_no_cited_text_on_disputes(web_app, demo_db, clients, catalog):
    # The disputes pages are compliance-only: a reviewer set to supervisor is turned away on the
    # very next request, from the answer page and from every fragment.
    name = _new_user(demo_db, "compliance")
    reviewer = sign_in(web_app, name)
    sup_client = clients["supervisor"]
    page = ask(sup_client, SIU_QUESTION)
    trace_id = _CITATION_URL.findall(page.text)[0].split("/")[2]
    assert reviewer.get(f"/disputes/{trace_id}").status_code == 200
    _set_role(demo_db, name, "supervisor")
    assert reviewer.get(f"/disputes/{trace_id}").status_code == 303  # the session ended with the role
    reviewer = sign_in(web_app, name)
    for path in (f"/disputes/{trace_id}", "/disputes", "/disputes/audit"):
        r = reviewer.get(path)
        assert r.status_code == 403 and catalog.restricted_in_text("supervisor", r.text) == set()
