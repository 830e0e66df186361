"""For every role: nothing above its clearance reaches a page (answer page or cited-text fragment).

Retrieval and prompts are covered by tests/test_retrieval.py and the eval leak matrix; this is
the last hop, over real HTTP, with the same detector the leak matrix uses.
"""

from __future__ import annotations

import re

import pytest

from policydesk.accounts.access import clearance_for
from policydesk.evals.leaks import ChunkCatalog
from policydesk.pipeline import AskPipeline
from tests.conftest import WEB_TODAY
from tests.web_helpers import ask, sign_in

# Questions that pass the topic gate but sit next to restricted, compliance-only or sensitive text.
PROBES = [
    "What happens after a member calls three times in a month about the same problem?",
    "How should a caller in a behavioral health crisis be handled?",
    "What should I do when a caller says billed services were never received?",
    "How are specialist visits reimbursed to providers?",
    "How quickly must member complaints be reported?",
    "How many calls per representative are reviewed each month, and what score passes?",
    "What is the timely filing limit?",
]
_CITATION_URL = re.compile(r"/citations/[0-9a-f-]{36}/[^\"'\s<>]+")


def _pages(client) -> str:
    html = []
    for q in PROBES:
        page = ask(client, q).text
        html.append(page)
        for url in sorted(set(_CITATION_URL.findall(page))):
            html.append(client.get(url, headers={"HX-Request": "true"}).text)
    return "\n".join(html)


@pytest.fixture(scope="module")
def catalog(demo_db) -> ChunkCatalog:
    return ChunkCatalog(demo_db)


@pytest.fixture(scope="module")
def pages(clients) -> dict[str, str]:
    return {role: _pages(clients[role]) for role in ("rep", "supervisor", "compliance")}


@pytest.mark.parametrize("role", ["rep", "supervisor", "compliance"])
def test_nothing_above_clearance_reaches_a_page(role, pages, catalog):
    assert catalog.restricted_in_text(role, pages[role]) == set()


def test_probes_do_reach_restricted_text_when_cleared(pages, catalog):
    # Without this, a page check that finds nothing could mean the probes never got close.
    seen_by_compliance = catalog.restricted_in_text("rep", pages["compliance"])
    assert seen_by_compliance, "the probes never surfaced text a rep may not see"


class _UnscopedPipeline(AskPipeline):
    """Deliberately leaky: every caller is given compliance clearance (the positive control)."""

    def _resolve_role(self, req):
        role, _ = super()._resolve_role(req)
        return role, clearance_for("compliance")


def test_positive_control_a_leaky_route_is_reported(settings, demo_db, pipeline, staff, catalog):
    # Issue 12: a page check that can never fail proves nothing. The same probes and the same
    # checker, run against a route whose pipeline ignores the caller's role, must report a leak.
    from policydesk.web.app import create_app

    leaky = _UnscopedPipeline(demo_db, settings, pipeline.embed_model, pipeline.llm, today=WEB_TODAY)
    app = create_app(settings, db=demo_db, pipeline=leaky)
    leaked = catalog.restricted_in_text("rep", _pages(sign_in(app, staff["rep"])))
    assert leaked, "the page-leak check did not notice an unscoped route: the check itself is broken"
