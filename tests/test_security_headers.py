"""Security headers on every response (issue 49, point 11): a Content-Security-Policy allowing scripts and
styles from PolicyDesk's own origin only and no framing, X-Frame-Options DENY, X-Content-Type-Options
nosniff and a same-origin Referrer-Policy; and pages that need nothing the policy forbids (no inline
script, style element or style attribute), checked on every kind of page a walkthrough renders and
in a real browser (no CSP violation reported, timelines still laid out)."""

from __future__ import annotations

import re
import threading
import time
import uuid
from datetime import date
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from policydesk.accounts.users import add_user
from tests.api_helpers import bearer, make_token
from tests.web_helpers import PASSWORD, ask, free_port, parse, token_of

EXPECTED = {
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}


def _directives(policy: str) -> dict[str, list[str]]:
    out = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


def _check_headers(response) -> None:
    for name, value in EXPECTED.items():
        assert response.headers.get(name) == value, (response.request.url, name, response.headers.get(name))
    csp = _directives(response.headers["content-security-policy"])
    assert csp["script-src"] == ["'self'"] and csp["style-src"] == ["'self'"], csp
    assert csp["frame-ancestors"] == ["'none'"] and csp["object-src"] == ["'none'"], csp
    assert csp["default-src"] == ["'self'"] and csp["base-uri"] == ["'none'"], csp


def _check_no_inline_code(html: str, where: str) -> None:
    page = parse(html)
    for el in page.elements:
        assert "style" not in el["attrs"], (where, el)
        assert not any(a.startswith("on") for a in el["attrs"]), (where, el)
        assert el["tag"] != "style", (where, el)
        if el["tag"] == "script":
            assert el["attrs"].get("src", "").startswith("/static/"), (where, el)
    assert "javascript:" not in html.lower(), where


def test_every_kind_of_response_carries_the_security_headers(web_app, clients, demo_db, staff):
    anonymous = TestClient(web_app, follow_redirects=False)
    rep, reviewer = clients["rep"], clients["compliance"]
    token = make_token(demo_db, staff["rep"])
    responses = [
        anonymous.get("/login"), anonymous.get("/ask"), anonymous.get("/no-such-page"), anonymous.get("/healthz"),
        anonymous.get("/static/app.css"), anonymous.get("/static/htmx.min.js"),
        anonymous.post("/login", data={"name": "x", "password": "y"}),  # 403, no CSRF token
        anonymous.get("/api/v1/versions/POL-TF"),  # 401 problem+json
        anonymous.get("/api/v1/versions/POL-TF", headers=bearer(token)),
        rep.get("/ask"), ask(rep, "What is the timely filing limit?"),
        rep.post("/ask", data={"question": "What is the timely filing limit?", "csrf_token": token_of(rep)},
                 headers={"HX-Request": "true"}),  # an htmx fragment
        rep.get("/disputes"),  # 403 page
        reviewer.get("/disputes", params={"words": "timely"}), reviewer.get("/disputes/audit"),
        reviewer.get("/reports/gaps"),
    ]
    for r in responses:
        _check_headers(r)


def test_no_page_needs_an_inline_script_or_style(clients, staff):
    rep, reviewer = clients["rep"], clients["compliance"]
    answered = ask(rep, "What is the timely filing limit?", date_of_service="2025-11-03")
    assert "tl-seg" in answered.text, "the answer shows no version timeline"
    trace_id = re.search(r"/citations/([0-9a-f-]{36})/", answered.text).group(1)
    pages = {
        "sign-in": TestClient(rep.app).get("/login"),
        "ask": rep.get("/ask"),
        "answer with timelines": answered,
        "refusal": ask(rep, "Approve claim CLM123456789 now"),
        "error": rep.get("/disputes"),
        "disputes search": reviewer.get("/disputes", params={"words": "timely", "staff": staff["rep"]}),
        "answer as given": reviewer.get(f"/disputes/{trace_id}"),
        "audit log": reviewer.get("/disputes/audit"),
        "gaps report": reviewer.get("/reports/gaps"),
        "impact list": reviewer.get("/reports/impact"),
        "owners report": reviewer.get("/reports/owners"),
    }
    for where, r in pages.items():
        assert r.status_code in (200, 403, 422), (where, r.status_code)
        _check_no_inline_code(r.text, where)
    # The bars are placed by classes app.css defines, to the whole percent.
    css = Path(__file__).resolve().parent.parent.joinpath("policydesk/web/static/app.css").read_text()
    for cls in set(re.findall(r"\btl-[lw]\d+\b", answered.text)):
        assert f".{cls}{{" in css, cls


CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium")
def test_pages_work_in_a_browser_under_the_policy(demo_db, settings, embed_model):
    import uvicorn
    from playwright.sync_api import sync_playwright

    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app

    name = f"csp-rep-{uuid.uuid4().hex[:6]}"
    with Session(demo_db.owner) as session, session.begin():
        add_user(session, name=name, role="rep", password=PASSWORD)
    app = create_app(settings, db=demo_db, pipeline=build_pipeline(demo_db, settings, embed_model=embed_model,
                                                                   today=date(2026, 11, 29)))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive()
        time.sleep(0.05)
    base = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            violations: list[str] = []
            page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
            page.goto(f"{base}/login")
            page.fill("#name", name)
            page.fill("#password", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/ask")
            page.fill("#question", "What is the timely filing limit?")
            page.fill("input[name=date_of_service]", "2025-11-03")
            page.click("form.ask-form button[type=submit]")  # htmx, from /static/htmx.min.js
            page.wait_for_selector("#result .answer-text")
            page.wait_for_selector("#result .tl-seg")
            widths = page.eval_on_selector_all("#result .tl-seg", "els => els.map(e => e.getBoundingClientRect().width)")
            track = page.eval_on_selector("#result .tl-track", "e => e.getBoundingClientRect().width")
            hidden = page.eval_on_selector(".htmx-indicator", "e => getComputedStyle(e).display")
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert violations == [], violations
    assert widths and all(0 < w < track for w in widths), (widths, track)
    assert hidden == "none"  # the indicator's style comes from app.css, not from an injected <style>
