"""The admin pages in a real browser (Debian chromium), against uvicorn on a database of their own:
sign in as the admin, add a user, change their role, create and revoke an API token, sync the
document folder and read what it refused. Screenshots of each step are kept under the data
directory (tests/browser_helpers.py, group "admin"); the layout is checked on element boxes.
"""

from __future__ import annotations

import uuid

import pytest

from tests.browser_helpers import (PASSWORD, assert_same_row, assert_within, box, chromium, needs_chromium, served,
                                   shot, sign_in)
from tests.test_admin import _folder, synced_folder_app

pytestmark = needs_chromium
GROUP = "admin"
TAG = uuid.uuid4().hex[:6]


@pytest.fixture(scope="module")
def site(make_db, embed_model, settings, tmp_path_factory):
    root = _folder(tmp_path_factory.mktemp("admin-walk") / "docs")
    admin = f"walk-admin-{TAG}"
    _, app = synced_folder_app(make_db, embed_model, settings, root, {admin: "admin"}, password=PASSWORD)
    with served(app) as url:
        yield url, root, admin


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def assert_bottoms_aligned(page, *selectors: str, slack: float = 1.0) -> None:
    """The controls of one form row end on the same line (labels above, controls level)."""
    bottoms = {s: box(page, s)["y"] + box(page, s)["height"] for s in selectors}
    assert max(bottoms.values()) - min(bottoms.values()) <= slack, bottoms


def test_admin_walkthrough_in_browser(browser, site):
    url, root, admin = site
    page = sign_in(browser, url, admin)
    page.click("nav a[href='/admin']")
    page.wait_for_url(f"{url}/admin/users")
    assert page.inner_text(".admin-tabs [aria-current=page]") == "Users"
    shot(page, GROUP, "01-users.png")
    form = "form.add-user"
    for control in ("input[name=name]", "select[name=role]", "input[name=password]", "button[type=submit]"):
        assert_same_row(page, f"{form} input[name=name]", f"{form} {control}")
    assert_bottoms_aligned(page, *(f"{form} {c}" for c in ("input[name=name]", "select[name=role]",
                                                            "input[name=password]", "button[type=submit]")))
    assert_within(page, "table.users", "section.card:has(table.users)")

    # Add a user: the generated password is shown once, on this response only.
    newcomer = f"walk-new-{TAG}"
    page.fill(f"{form} input[name=name]", newcomer)
    page.select_option(f"{form} select[name=role]", "rep")
    page.click(f"{form} button[type=submit]")
    page.wait_for_selector(".shown-once .secret")
    password = page.inner_text(".shown-once .secret").strip()
    assert len(password) >= 12 and newcomer in page.inner_text(".shown-once")
    row = f"tr[data-user='{newcomer}']"
    assert "rep" in page.input_value(f"{row} select[name=role]")
    shot(page, GROUP, "02-user-added-password-once.png")
    assert_within(page, "table.users", "section.card:has(table.users)")
    assert_same_row(page, f"{row} select[name=role]", f"{row} form.set-role button")
    assert_bottoms_aligned(page, f"{row} select[name=role]", f"{row} form.set-role button")
    assert_same_row(page, f"{row} .tag-on", f"{row} form.toggle button")

    # Change the role.
    page.select_option(f"{row} select[name=role]", "supervisor")
    page.click(f"{row} form.set-role button")
    page.wait_for_selector(f".admin-done:has-text('{newcomer} is now supervisor')")
    assert page.input_value(f"{row} select[name=role]") == "supervisor"
    assert password not in page.content()
    shot(page, GROUP, "03-role-changed.png")

    # Create an API token for them, then revoke it.
    page.click(".admin-tabs a[href='/admin/tokens']")
    page.wait_for_url(f"{url}/admin/tokens")
    token_form = "form.create-token"
    assert_bottoms_aligned(page, *(f"{token_form} {c}" for c in ("select[name=user]", "input[name=days]",
                                                                  "input[name=label]", "button[type=submit]")))
    page.select_option(f"{token_form} select[name=user]", newcomer)
    page.fill(f"{token_form} input[name=label]", "desk tool")
    page.click(f"{token_form} button[type=submit]")
    page.wait_for_selector(".shown-once .secret")
    token = page.inner_text(".shown-once .secret").strip()
    assert token.startswith("pdk_")
    key_id = token.split("_")[1]
    token_row = f"tr[data-key-id='{key_id}']"
    assert "active" in page.inner_text(token_row) and "never" in page.inner_text(token_row)
    shot(page, GROUP, "04-token-created-once.png")
    assert_within(page, "table.tokens", "section.card:has(table.tokens)")
    page.click(f"{token_row} form.revoke button")
    page.wait_for_selector(f".admin-done:has-text('Token {key_id} is revoked')")
    assert "revoked" in page.inner_text(token_row)
    assert token.split("_", 2)[2] not in page.content()
    page.reload()
    assert token.split("_", 2)[2] not in page.content() and "revoked" in page.inner_text(token_row)
    shot(page, GROUP, "05-token-revoked.png")

    # Sources: versions, owners; a sync that refuses an empty file says which and why.
    (root / "beta.md").write_text("")
    page.click(".admin-tabs a[href='/admin/sources']")
    page.wait_for_url(f"{url}/admin/sources")
    alpha_v1 = page.inner_text("tr[data-doc-id='WIKI-ALPHA'][data-version='1']")
    assert "Desk Training" in alpha_v1 and "2024-01-01 to 2025-12-31" in alpha_v1
    assert "in force" in page.inner_text("tr[data-doc-id='WIKI-ALPHA'][data-version='2']")
    assert "Special Cases Unit" in page.inner_text("tr[data-doc-id='WIKI-GAMMA']")
    assert "No sync recorded yet" in page.inner_text(".last-sync")
    page.click("form.sync-now button")
    page.wait_for_selector("table.refused")
    assert "1 refused" in page.inner_text(".last-sync") and admin in page.inner_text(".last-sync")
    assert "1 failed their checks" in page.inner_text(".admin-done.admin-warn[role=alert]")  # not shown as success
    success_bg = "rgb(236, 246, 239)"  # --good-bg, the colour of a plain "done"
    assert page.eval_on_selector(".admin-done", "e => getComputedStyle(e).backgroundColor") != success_bg
    refused = page.inner_text("table.refused")
    assert "beta.md" in refused and "empty file (0 bytes)" in refused
    assert "changed on disk, not synced" in page.inner_text("tr[data-doc-id='WIKI-BETA']")
    shot(page, GROUP, "06-sources-after-sync.png")
    assert_within(page, "table.sources", "section.sources-card")
    assert_within(page, "table.refused", "section.sync-card")
    assert_same_row(page, ".sync-folder", "form.sync-now button")
