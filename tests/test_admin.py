"""The admin pages over real HTTP (uvicorn on a loopback port) on a real database of their own.

Every admin URL and method refuses every other role (403) and a signed-out caller (sent to sign
in), and every form refuses a missing or wrong CSRF token; nothing changes when refused. Each
action is checked as a user would see it (the disabled user cannot sign in, the new role applies
at once, the revoked token gets 401), a secret appears once and never again on any page, and
each action leaves exactly one audit row, with no secret in it.
"""

from __future__ import annotations

import re
import uuid
from datetime import date

import httpx
import pytest
import yaml
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from policydesk.accounts.users import add_user, get_user
from policydesk.ingest import ingest_directory
from policydesk.storage.models import ApiToken
from tests.served_app import marks, rows_since, served, stored_text_since
from tests.web_helpers import PASSWORD, by_class, csrf_from, find, text_of

TAG = uuid.uuid4().hex[:6]
ROLES_REFUSED = ("rep", "supervisor", "compliance")
PAGES = {  # file: (id, title, version, effective_from, access level, owner, text)
    "alpha-v1.md": ("WIKI-ALPHA", "Alpha Desk Guide", 1, "2024-01-01", "public", "Desk Training",
                    "# Alpha Desk Guide\n\n## Hours\n\nThe alpha desk opens at seven.\n"),
    "alpha-v2.md": ("WIKI-ALPHA", "Alpha Desk Guide", 2, "2026-01-01", "public", "Desk Training",
                    "# Alpha Desk Guide\n\n## Hours\n\nThe alpha desk opens at half past seven.\n"),
    "beta.md": ("WIKI-BETA", "Beta Desk Guide", 1, "2025-01-01", "internal", "Front Office",
                "# Beta Desk Guide\n\n## Hours\n\nThe beta desk opens at eight.\n"),
    "gamma.md": ("WIKI-GAMMA", "Gamma Escalation Desk", 1, "2025-01-01", "restricted", "Special Cases Unit",
                 "# Gamma Escalation Desk\n\n## Hours\n\nThe gamma desk opens at nine.\n"),
}


def _folder(root):
    root.mkdir(parents=True, exist_ok=True)
    for file, (*_, body) in PAGES.items():
        (root / file).write_text(body)
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": [
        {"file": file, "id": doc_id, "title": title, "type": "wiki", "version": version,
         "effective_from": start, "date_basis": "none", "access_level": level, "sensitive": False, "owner": owner}
        for file, (doc_id, title, version, start, level, owner, _) in PAGES.items()]}, sort_keys=False))
    return root


def name(role: str) -> str:
    return f"adm-{role}-{TAG}"


def synced_folder_app(make_db, embed_model, settings, root, users: dict[str, str], password: str = PASSWORD):
    """A new database with `root` ingested and these users (name -> role, all with `password`),
    and the web app over it with `root` as the sources folder: (db, app)."""
    from policydesk.pipeline import build_pipeline
    from policydesk.web.app import create_app

    db = make_db()
    ingest_directory(db, root, embed_model, settings)
    local = settings.model_copy(update={"SYNC_DIR": root})
    with Session(db.owner) as session, session.begin():
        for user, role in users.items():
            add_user(session, name=user, role=role, password=password)
    return db, create_app(local, db=db, pipeline=build_pipeline(db, local, embed_model=embed_model,
                                                                 today=date(2026, 11, 29)))


@pytest.fixture(scope="module")
def site(make_db, embed_model, settings, tmp_path_factory):
    root = _folder(tmp_path_factory.mktemp("admin-docs") / "docs")
    db, app = synced_folder_app(make_db, embed_model, settings, root,
                                {name(role): role for role in (*ROLES_REFUSED, "admin")})
    with served(app) as server:
        yield server.url, db, root


def client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, follow_redirects=False, timeout=60)


def sign_in(url: str, user: str, password: str = PASSWORD) -> httpx.Client:
    c = client(url)
    r = signing_in(c, user, password)
    assert r.status_code == 303, r.text[:300]
    return c


def signing_in(c: httpx.Client, user: str, password: str) -> httpx.Response:
    token = csrf_from(c.get("/login").text)
    return c.post("/login", data={"name": user, "password": password, "csrf_token": token, "next": "/ask"})


def csrf(c: httpx.Client, path: str = "/ask") -> str:
    return csrf_from(c.get(path).text)


def new_user(db, role: str = "rep") -> str:
    user = f"adm-target-{uuid.uuid4().hex[:8]}"
    with Session(db.owner) as session, session.begin():
        add_user(session, name=user, role=role, password=PASSWORD)
    return user


def new_token(c: httpx.Client, user: str) -> tuple[str, str]:
    """(token, key id) created through the page."""
    r = c.post("/admin/tokens", data={"user": user, "days": "30", "label": "desk tool", "csrf_token": csrf(c, "/admin/tokens")})
    assert r.status_code == 200, r.text[:500]
    secret = shown_once(r.text)
    return secret, secret.split("_")[1]


def shown_once(html: str) -> str:
    shown = by_class(html, "secret")
    assert len(shown) == 1, "no secret (or more than one) shown"
    return shown[0]["text"].strip()


def user_row(db, user: str):
    with Session(db.owner) as session:
        return get_user(session, name=user)


def admin_rows(db, since) -> list[dict]:
    return [r for r in rows_since(db, since, "audit_log")
            if r["action"].startswith(("user_", "api_token_", "sources_synced"))]


@pytest.fixture(scope="module")
def admin(site):
    url, _, _ = site
    return sign_in(url, name("admin"))


# -- who may: every URL, every method ------------------------------------------------------------

def _routes(target: str, key_id: str) -> list[tuple[str, str, dict]]:
    return [
        ("GET", "/admin", {}), ("GET", "/admin/users", {}), ("GET", "/admin/tokens", {}), ("GET", "/admin/sources", {}),
        ("POST", "/admin/users", {"name": f"{target}-new", "role": "compliance"}),
        ("POST", f"/admin/users/{target}/role", {"role": "compliance"}),
        ("POST", f"/admin/users/{target}/disable", {}),
        ("POST", f"/admin/users/{target}/enable", {}),
        ("POST", f"/admin/users/{target}/password", {}),
        ("POST", "/admin/tokens", {"user": target, "days": "30", "label": "x"}),
        ("POST", f"/admin/tokens/{key_id}/revoke", {}),
        ("POST", "/admin/sources/sync", {}),
    ]


@pytest.fixture(scope="module")
def victim(site, admin):
    """A user and a live token of theirs: what a refused request would have changed."""
    url, db, _ = site
    user = new_user(db)
    token, key_id = new_token(admin, user)
    return user, token, key_id


@pytest.mark.parametrize("who", ["signed out", *ROLES_REFUSED])
def test_every_admin_route_refuses_everyone_but_an_admin(site, victim, who):
    url, db, _ = site
    user, token, key_id = victim
    c = client(url) if who == "signed out" else sign_in(url, name(who))
    before, audit_mark = user_row(db, user), marks(db)
    for method, path, data in _routes(user, key_id):
        # A valid CSRF token each time, so what refuses is the role check (the sign-in page gives one too).
        token_page = "/login" if who == "signed out" else "/ask"
        r = c.request(method, path, data={**data, "csrf_token": csrf(c, token_page)} if method == "POST" else None)
        if who == "signed out":
            assert r.status_code == 303 and r.headers["location"].startswith("/login?next=/admin"), (method, path, r.status_code)
        else:
            assert r.status_code == 403, (method, path, r.status_code)
            assert "administrators only" in r.text
    after = user_row(db, user)
    assert (after.role, after.disabled_at, after.password_hash) == (before.role, before.disabled_at, before.password_hash)
    assert user_row(db, f"{user}-new") is None
    with Session(db.owner) as session:
        assert session.scalar(select(ApiToken.revoked_at).where(ApiToken.key_id == key_id)) is None
        assert session.scalar(select(func.count()).select_from(ApiToken).where(ApiToken.label == "x")) == 0
    assert admin_rows(db, audit_mark) == []


def test_the_admin_nav_link_shows_for_the_admin_only(site, admin):
    url, _, _ = site
    assert find(admin.get("/ask").text, "a", href="/admin")
    for role in ROLES_REFUSED:
        assert not find(sign_in(url, name(role)).get("/ask").text, "a", href="/admin")


@pytest.mark.parametrize("sent", ["missing", "wrong"])
def test_every_admin_form_refuses_a_missing_or_wrong_csrf_token(site, admin, victim, sent):
    url, db, _ = site
    user, token, key_id = victim
    before, audit_mark = user_row(db, user), marks(db)
    for method, path, data in _routes(user, key_id):
        if method != "POST":
            continue
        body = data if sent == "missing" else {**data, "csrf_token": "not-the-session-token"}
        r = admin.post(path, data=body)
        assert r.status_code == 403 and "did not come from this site" in r.text, (path, r.status_code)
    after = user_row(db, user)
    assert (after.role, after.disabled_at, after.password_hash) == (before.role, before.disabled_at, before.password_hash)
    assert admin_rows(db, audit_mark) == []


def test_the_admin_opens_every_page(admin):
    assert admin.get("/admin").headers["location"] == "/admin/users"
    for path, heading in (("/admin/users", "Add a user"), ("/admin/tokens", "Create an API token"),
                          ("/admin/sources", "Sources")):
        r = admin.get(path)
        assert r.status_code == 200 and heading in r.text, path


# -- users ---------------------------------------------------------------------------------------

def _one_audit_row(db, since, action: str, target: str, *secrets: str) -> dict:
    rows = admin_rows(db, since)
    assert [(r["action"], r["actor"], r["target"]) for r in rows] == [(action, name("admin"), target)]
    stored = " ".join(stored_text_since(db, since)["audit_log"])
    for secret in secrets:
        assert secret not in stored
    return rows[0]


def test_adding_a_user_shows_the_generated_password_once_and_it_signs_in(site, admin):
    url, db, _ = site
    user, since = f"adm-new-{uuid.uuid4().hex[:6]}", marks(db)
    r = admin.post("/admin/users", data={"name": user, "role": "supervisor", "password": "", "csrf_token": csrf(admin)})
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    password = shown_once(r.text)
    assert f"Password for {user}" in text_of(r.text, "shown-once")
    row = _one_audit_row(db, since, "user_added", user, password)
    assert row["details"] == {"role": "supervisor", "password": "generated"}
    newcomer = sign_in(url, user, password)
    assert "supervisor" in text_of(newcomer.get("/ask").text, "role")
    listing = admin.get("/admin/users").text
    assert password not in listing and find(listing, "tr", **{"data-user": user})


def test_adding_a_user_with_a_given_password_or_a_bad_one(site, admin):
    url, db, _ = site
    user, since = f"adm-given-{uuid.uuid4().hex[:6]}", marks(db)
    given = "a long enough password 1"
    r = admin.post("/admin/users", data={"name": user, "role": "rep", "password": given, "csrf_token": csrf(admin)})
    assert r.status_code == 200 and not by_class(r.text, "secret") and given not in r.text
    assert _one_audit_row(db, since, "user_added", user, given)["details"]["password"] == "given"
    sign_in(url, user, given)
    since = marks(db)
    for data, said in (({"name": f"{user}-short", "role": "rep", "password": "short"}, "at least 12 characters"),
                       ({"name": user, "role": "rep", "password": ""}, "already exists"),
                       ({"name": f"{user}-x", "role": "superuser", "password": ""}, "Unknown role 'superuser'"),
                       ({"name": "bad name!", "role": "rep", "password": ""}, "must be 1-64 letters")):
        r = admin.post("/admin/users", data={**data, "csrf_token": csrf(admin)})
        assert r.status_code == 422 and said in text_of(r.text, "notice-error"), data
    assert user_row(db, f"{user}-short") is None and user_row(db, f"{user}-x") is None
    assert admin_rows(db, since) == []


def test_a_role_change_applies_at_once_to_sessions_and_tokens(site, admin):
    url, db, _ = site
    user = new_user(db, "rep")
    target = sign_in(url, user)
    token, key_id = new_token(admin, user)
    assert client(url).get("/api/v1/traces", headers={"Authorization": f"Bearer {token}"}).status_code == 403
    since = marks(db)
    r = admin.post(f"/admin/users/{user}/role", data={"role": "compliance", "csrf_token": csrf(admin)})
    assert r.status_code == 200 and f"{user} is now compliance" in text_of(r.text, "admin-done")
    row = _one_audit_row(db, since, "user_role_changed", user)
    assert row["details"] == {"role_before": "rep", "role": "compliance"}
    assert target.get("/ask").status_code == 303  # the rep's session ended
    again = sign_in(url, user)
    assert again.get("/disputes").status_code == 200  # a compliance page, at once
    assert client(url).get("/api/v1/traces", headers={"Authorization": f"Bearer {token}"}).status_code == 200


def test_a_disabled_user_cannot_sign_in_and_an_enabled_one_can(site, admin):
    url, db, _ = site
    user = new_user(db)
    target = sign_in(url, user)
    token, _ = new_token(admin, user)
    since = marks(db)
    r = admin.post(f"/admin/users/{user}/disable", data={"csrf_token": csrf(admin)})
    assert r.status_code == 200 and "disabled" in text_of(r.text, "admin-done")
    _one_audit_row(db, since, "user_disabled", user)
    assert target.get("/ask").status_code == 303
    assert signing_in(client(url), user, PASSWORD).status_code != 303
    assert client(url).get("/api/v1/versions/WIKI-ALPHA", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    row_text = " ".join(e["text"] for e in find(admin.get("/admin/users").text, "tr", **{"data-user": user}))
    assert "disabled" in row_text and "Enable" in row_text
    since = marks(db)
    assert admin.post(f"/admin/users/{user}/enable", data={"csrf_token": csrf(admin)}).status_code == 200
    _one_audit_row(db, since, "user_enabled", user)
    sign_in(url, user)


def test_a_reset_password_is_shown_once_and_the_old_one_stops_working(site, admin):
    url, db, _ = site
    user = new_user(db)
    target = sign_in(url, user)
    since = marks(db)
    r = admin.post(f"/admin/users/{user}/password", data={"csrf_token": csrf(admin)})
    assert r.status_code == 200
    password = shown_once(r.text)
    _one_audit_row(db, since, "user_password_reset", user, password)
    assert target.get("/ask").status_code == 303
    assert signing_in(client(url), user, PASSWORD).status_code != 303
    sign_in(url, user, password)
    for path in ("/admin/users", "/admin/tokens", "/admin/sources"):
        assert password not in admin.get(path).text


def test_an_admin_cannot_lock_themselves_out(site, admin):
    url, db, _ = site
    me, since = name("admin"), marks(db)
    for path, data in ((f"/admin/users/{me}/role", {"role": "rep"}), (f"/admin/users/{me}/disable", {}),
                       (f"/admin/users/{me}/password", {})):
        r = admin.post(path, data={**data, "csrf_token": csrf(admin)})
        assert r.status_code == 422 and "yourself" in text_of(r.text, "notice-error"), path
    assert user_row(db, me).role == "admin" and user_row(db, me).disabled_at is None
    assert admin.get("/admin/users").status_code == 200
    assert admin_rows(db, since) == []


def test_the_users_page_lists_role_status_and_last_sign_in(site, admin):
    url, db, _ = site
    user = new_user(db, "supervisor")
    html = admin.get("/admin/users").text
    row = " ".join(e["text"] for e in find(html, "tr", **{"data-user": user}))
    assert "enabled" in row and "not known" in row
    sign_in(url, user)
    row = " ".join(e["text"] for e in find(admin.get("/admin/users").text, "tr", **{"data-user": user}))
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", row) and "not known" not in row


# -- API tokens ----------------------------------------------------------------------------------

def test_a_token_is_shown_once_works_and_gets_401_once_revoked(site, admin):
    url, db, _ = site
    user, since = new_user(db), marks(db)
    token, key_id = new_token(admin, user)
    assert token.startswith("pdk_")
    row = _one_audit_row(db, since, "api_token_created", key_id, token, token.split("_", 2)[2])
    assert row["details"]["user"] == user and row["details"]["label"] == "desk tool"
    api = client(url)
    auth = {"Authorization": f"Bearer {token}"}
    assert api.get("/api/v1/versions/WIKI-ALPHA", headers=auth).status_code == 200
    listing = admin.get("/admin/tokens").text
    row_text = " ".join(e["text"] for e in find(listing, "tr", **{"data-key-id": key_id}))
    assert user in row_text and "active" in row_text and "never" not in row_text  # last used: just now
    since = marks(db)
    r = admin.post(f"/admin/tokens/{key_id}/revoke", data={"csrf_token": csrf(admin, "/admin/tokens")})
    assert r.status_code == 200 and "revoked" in text_of(r.text, "admin-done")
    _one_audit_row(db, since, "api_token_revoked", key_id, token)
    assert api.get("/api/v1/versions/WIKI-ALPHA", headers=auth).status_code == 401
    secret = token.split("_", 2)[2]
    for path in ("/admin/tokens", "/admin/users", "/admin/sources"):
        assert secret not in admin.get(path).text, path
    assert secret not in r.text


def test_a_bad_token_form_is_refused_and_creates_nothing(site, admin):
    url, db, _ = site
    since = marks(db)
    for data, said in (({"user": "nobody-here", "days": "30"}, "no user named"),
                       ({"user": name("rep"), "days": "0"}, "1 to 3650 days"),
                       ({"user": name("rep"), "days": "many"}, "how many days"),
                       ({"user": name("rep"), "days": "99999999"}, "1 to 3650 days")):
        r = admin.post("/admin/tokens", data={**data, "label": "", "csrf_token": csrf(admin)})
        assert r.status_code == 422 and said in text_of(r.text, "notice-error"), data
        assert not by_class(r.text, "secret")
    assert admin_rows(db, since) == []


def test_revoking_an_unknown_token_is_a_clear_error(site, admin):
    r = admin.post("/admin/tokens/0123456789ab/revoke", data={"csrf_token": csrf(admin)})
    assert r.status_code == 422 and "no token with key id" in text_of(r.text, "notice-error")


# -- sources -------------------------------------------------------------------------------------

def test_the_sources_page_shows_versions_windows_owners_and_access(site, admin):
    html = admin.get("/admin/sources").text
    rows = {(e["attrs"]["data-doc-id"], e["attrs"]["data-version"]): e["text"] for e in find(html, "tr")
            if "data-doc-id" in e["attrs"]}
    assert set(rows) == {("WIKI-ALPHA", "1"), ("WIKI-ALPHA", "2"), ("WIKI-BETA", "1"), ("WIKI-GAMMA", "1")}
    assert "v1: 2024-01-01 to 2025-12-31" in rows[("WIKI-ALPHA", "1")] and "in force" not in rows[("WIKI-ALPHA", "1")]
    assert "v2: 2026-01-01 to open-ended" in rows[("WIKI-ALPHA", "2")] and "in force" in rows[("WIKI-ALPHA", "2")]
    assert "Desk Training" in rows[("WIKI-ALPHA", "1")] and "public" in rows[("WIKI-ALPHA", "1")]
    # A restricted source is listed by its metadata for the admin (who reads text as a rep), never its text.
    assert "Special Cases Unit" in rows[("WIKI-GAMMA", "1")] and "restricted" in rows[("WIKI-GAMMA", "1")]
    assert "gamma desk opens at nine" not in html
    assert "No sync recorded yet" in html


def test_sync_now_syncs_the_folder_and_the_page_shows_what_it_refused(site, admin):
    url, db, root = site
    (root / "gamma.md").write_text(PAGES["gamma.md"][-1].replace("nine", "ten"))
    (root / "beta.md").write_text("")  # an empty file: refused by ingest's checks
    since = marks(db)
    r = admin.post("/admin/sources/sync", data={"csrf_token": csrf(admin, "/admin/sources")})
    assert r.status_code == 200, r.text[:500]
    assert "1 synced" in text_of(r.text, "last-sync") and "1 refused" in text_of(r.text, "last-sync")
    assert "WIKI-GAMMA v1" in text_of(r.text, "synced")
    assert "1 failed their checks" in text_of(r.text, "admin-warn")  # a partial sync is not shown as plain success
    refused = [e["text"] for e in find(r.text, "tr") if "beta.md" in e["text"]]
    assert refused and "empty file (0 bytes)" in refused[0]
    row = _one_audit_row(db, since, "sources_synced", str(root))
    assert row["details"]["refused"] == [{"file": "beta.md", "field": "file", "reason": "empty file (0 bytes)"}]
    assert row["details"]["written"] == ["WIKI-GAMMA v1"]
    # The page, opened again, still says so (read from the audit row), and marks beta's file as changed.
    html = admin.get("/admin/sources").text
    assert name("admin") in text_of(html, "last-sync") and "empty file (0 bytes)" in html
    beta = " ".join(e["text"] for e in find(html, "tr", **{"data-doc-id": "WIKI-BETA", "data-version": "1"}))
    assert "changed on disk, not synced" in beta
    alpha = " ".join(e["text"] for e in find(html, "tr", **{"data-doc-id": "WIKI-ALPHA", "data-version": "2"}))
    assert "as indexed" in alpha


def test_a_sync_that_cannot_read_the_manifest_says_so_and_is_recorded(site, admin):
    url, db, root = site
    manifest = (root / "manifest.yaml").read_text()
    (root / "manifest.yaml").write_text("sources: [unclosed")
    try:
        since = marks(db)
        r = admin.post("/admin/sources/sync", data={"csrf_token": csrf(admin, "/admin/sources")})
        assert "The sync was refused, nothing was written" in text_of(r.text, "notice-error")
        row = _one_audit_row(db, since, "sources_synced", str(root))
        assert row["details"]["error"]
        assert "refused, nothing was written" in text_of(admin.get("/admin/sources").text, "last-sync")
    finally:
        (root / "manifest.yaml").write_text(manifest)
