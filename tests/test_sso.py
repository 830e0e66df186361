"""Issue 19: single sign-on through OpenID Connect, for real, against a local OpenID provider
(`oidc-provider-mock`, started by the test on a free port): the browser's trip to the provider is
made with httpx, the code exchange and ID-token checks by the app through Authlib."""

from __future__ import annotations

import json
import logging
import uuid
from urllib.parse import parse_qs, quote, urlparse

import httpx
import oidc_provider_mock
import pytest
from pydantic import SecretStr
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from policydesk.accounts.sso import REFUSED_NO_ROLE
from policydesk.storage.models import User, WebSession
from policydesk.accounts.users import add_user, set_role
from policydesk.web.app import create_app
from tests.web_helpers import PASSWORD, find, text_of

ROLE_MAP = {"pd-reps": "rep", "pd-supervisors": "supervisor", "pd-compliance": "compliance"}


@pytest.fixture(scope="module")
def idp() -> str:
    with oidc_provider_mock.run_server_in_thread() as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture(scope="module")
def db(make_db):
    return make_db()


def _app(settings, db, idp, **overrides):
    sso_settings = settings.model_copy(update={
        "OIDC_ISSUER": idp, "OIDC_CLIENT_ID": "policydesk", "OIDC_CLIENT_SECRET": SecretStr("policydesk-secret"),
        "OIDC_ROLE_MAP": ROLE_MAP, **overrides})
    return create_app(sso_settings, db=db, pipeline=object())


@pytest.fixture(scope="module")
def app(settings, db, idp):
    return _app(settings, db, idp)


def sso_sign_in(app, idp: str, sub: str, claims: dict, next_path: str = "/ask"):
    """The whole flow: the app sends the browser to the provider, the person picks their account
    on its form, the provider sends the browser back with a code."""
    assert httpx.put(f"{idp}/users/{quote(sub, safe='')}", json=claims).status_code == 204
    client = TestClient(app, follow_redirects=False)
    start = client.get("/login/sso", params={"next": next_path})
    assert start.status_code == 302, start.text
    authorize = start.headers["location"]
    assert authorize.startswith(f"{idp}/oauth2/authorize")
    query = parse_qs(urlparse(authorize).query)
    assert query["client_id"] == ["policydesk"] and "openid" in query["scope"][0] and query["nonce"][0]
    chosen = httpx.post(authorize, data={"sub": sub}, follow_redirects=False)
    assert chosen.status_code == 302, chosen.text
    client.callback_url = chosen.headers["location"]
    return client, client.get(client.callback_url)


def _user(db, name: str) -> User | None:
    with Session(db.owner) as session:
        return session.scalar(select(User).where(User.name == name))


def _name() -> str:
    return f"sso-{uuid.uuid4().hex[:6]}@plan.example"


def test_first_sign_in_creates_the_user_with_the_mapped_role(app, db, idp):
    name = _name()
    client, done = sso_sign_in(app, idp, f"sub-{name}", {"preferred_username": name, "groups": ["pd-reps", "staff"]},
                               next_path="/ask")
    assert done.status_code == 303 and done.headers["location"] == "/ask"
    user = _user(db, name)
    assert user.role == "rep" and user.oidc_subject == f"{idp}|sub-{name}" and user.password_hash == "!sso"
    page = client.get("/ask")
    assert page.status_code == 200 and name in page.text
    assert client.get("/disputes").status_code == 403  # a rep, decided per request


def test_role_is_refreshed_from_the_claim_at_the_next_sign_in(app, db, idp):
    name, sub = _name(), f"sub-{uuid.uuid4().hex[:6]}"
    sso_sign_in(app, idp, sub, {"preferred_username": name, "groups": ["pd-reps"]})
    assert _user(db, name).role == "rep"
    client, done = sso_sign_in(app, idp, sub, {"preferred_username": name, "groups": ["pd-compliance"]})
    assert done.status_code == 303
    assert _user(db, name).role == "compliance"
    assert client.get("/disputes").status_code == 200
    # Between sign-ins a role change applies at once: it ends the session (the next request
    # goes to sign-in), exactly as for a local user.
    with Session(db.owner) as session, session.begin():
        set_role(session, name=name, role="rep")
    assert client.get("/disputes").status_code == 303


def test_sso_sign_in_opens_a_server_side_session_that_sign_out_ends_for_a_copied_cookie(app, db, idp):
    name = _name()
    client, done = sso_sign_in(app, idp, f"sub-{name}", {"preferred_username": name, "groups": ["pd-reps"]})
    assert done.status_code == 303 and client.get("/ask").status_code == 200
    with Session(db.owner) as session:
        rows = session.execute(select(WebSession.ended_at).join(User, User.id == WebSession.user_id)
                               .where(User.name == name)).all()
    assert len(rows) == 1 and rows[0].ended_at is None
    copied = client.cookies.get("policydesk_session")
    assert client.post("/logout", headers={"X-CSRF-Token": _csrf(client)}).status_code == 303
    replay = TestClient(app, follow_redirects=False)
    replay.cookies.set("policydesk_session", copied)
    r = replay.get("/ask")
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/ask"


def test_several_mapped_groups_give_the_most_cleared_role(app, db, idp):
    name = _name()
    sso_sign_in(app, idp, f"sub-{name}", {"preferred_username": name, "groups": ["pd-supervisors", "pd-reps"]})
    assert _user(db, name).role == "supervisor"


@pytest.mark.parametrize("groups", [["staff", "finance"], [], None])
def test_a_user_without_a_mapped_group_is_refused(app, db, idp, groups, caplog):
    name = _name()
    claims = {"preferred_username": name} | ({"groups": groups} if groups is not None else {})
    with caplog.at_level(logging.WARNING, logger="policydesk.web.routes.sso"):
        client, done = sso_sign_in(app, idp, f"sub-{name}", claims)
    refused = [r for r in caplog.records if getattr(r, "event", None) == "sso_refused"]
    assert len(refused) == 1 and f"sub-{name}" in refused[0].getMessage()
    assert done.status_code == 403
    assert text_of(done.text, "notice-error") == REFUSED_NO_ROLE
    assert _user(db, name) is None
    assert client.get("/ask").status_code == 303  # not signed in


def test_an_idp_account_cannot_take_over_a_local_account_by_name(app, db, idp):
    name = f"local-{uuid.uuid4().hex[:6]}"
    with Session(db.owner) as session, session.begin():
        add_user(session, name=name, role="rep", password=PASSWORD)
    client, done = sso_sign_in(app, idp, f"sub-{name}", {"preferred_username": name, "groups": ["pd-compliance"]})
    assert done.status_code == 403 and "not linked to single sign-on" in done.text
    assert _user(db, name).role == "rep" and _user(db, name).oidc_subject is None


def test_a_forged_or_replayed_callback_is_refused(app, db, idp):
    client = TestClient(app, follow_redirects=False)
    r = client.get("/login/sso/callback", params={"code": "made-up", "state": "made-up"})
    assert r.status_code == 401 and "did not complete" in r.text
    name = _name()
    signed_in, done = sso_sign_in(app, idp, f"sub-{name}", {"preferred_username": name, "groups": ["pd-reps"]})
    assert done.status_code == 303
    # The same code and state again: from another browser (no state in its session), and from
    # the same one (its state was used up).
    replayed = client.get(signed_in.callback_url)
    assert replayed.status_code == 401 and client.get("/ask").status_code == 303
    assert signed_in.get(signed_in.callback_url).status_code == 401


def test_sso_user_has_no_password_to_sign_in_with(app, db, idp):
    name = _name()
    sso_sign_in(app, idp, f"sub-{name}", {"preferred_username": name, "groups": ["pd-reps"]})
    client = TestClient(app, follow_redirects=False)
    token = find(client.get("/login").text, "input", name="csrf_token")[0]["attrs"]["value"]
    for attempt in ("!sso", "", PASSWORD):
        r = client.post("/login", data={"name": name, "password": attempt, "csrf_token": token, "next": "/ask"})
        assert r.status_code in (401, 422), r.status_code


def test_local_passwords_can_be_switched_off(settings, db, idp):
    app = _app(settings, db, idp, LOCAL_PASSWORDS=False)
    name = f"pw-{uuid.uuid4().hex[:6]}"
    with Session(db.owner) as session, session.begin():
        add_user(session, name=name, role="rep", password=PASSWORD)
    client = TestClient(app, follow_redirects=False)
    page = client.get("/login").text
    assert not find(page, "form", action="/login") and find(page, "a", href="/login/sso?next=/ask")
    r = client.post("/login", data={"name": name, "password": PASSWORD, "next": "/ask"},
                    headers={"X-CSRF-Token": _csrf(client)})
    assert r.status_code == 403 and "switched off" in r.text
    assert client.get("/ask").status_code == 303


def _csrf(client: TestClient) -> str:
    body = find(client.get("/login").text, "body")[0]
    return json.loads(body["attrs"]["hx-headers"])["X-CSRF-Token"]
