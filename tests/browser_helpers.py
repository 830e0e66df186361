"""What every browser test shares: Debian chromium under Playwright, the app served by uvicorn in a
thread on a real database, signing in, screenshots kept under the data directory, element boxes.

Screenshots go to `<data dir>/screenshots/<test file>/` (the data directory is POLICYDESK_DATA_DIR,
default `.policydesk` in the checkout), where they survive the run for a human to look at.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.web_helpers import free_port

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update"]
PASSWORD = "walkthrough-password"
REPO = Path(__file__).resolve().parent.parent

needs_chromium = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium is not installed at /usr/bin/chromium "
                                                     "(apt-get install -y chromium)"),
]


def screenshots_dir(group: str) -> Path:
    data_dir = Path(os.environ.get("POLICYDESK_DATA_DIR", ".policydesk"))
    if not data_dir.is_absolute():
        data_dir = REPO / data_dir
    path = data_dir / "screenshots" / group
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def served(app):
    """Serve `app` with uvicorn on a free local port; yields the base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def sign_in(browser, base: str, name: str, *, width: int = 1200):
    """A fresh browser context signed in as `name` (password PASSWORD), left on the ask page."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{base}/ask")
    assert "/login" in page.url
    page.fill("#name", name)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/ask")
    return page


def shot(page, group: str, name: str) -> Path:
    path = screenshots_dir(group) / name
    page.screenshot(path=str(path), full_page=True)
    return path


def box(page, selector: str) -> dict:
    """The element's border box in page pixels (x, y, width, height); fails if it is not rendered."""
    found = page.locator(selector).first.bounding_box()
    assert found is not None, f"{selector} is not rendered"
    return found


def assert_within(page, inner: str, outer: str, slack: float = 1.0) -> None:
    """`inner` lies inside `outer` horizontally: nothing needs a sideways scroll to be seen."""
    a, b = box(page, inner), box(page, outer)
    assert a["x"] >= b["x"] - slack and a["x"] + a["width"] <= b["x"] + b["width"] + slack, (
        f"{inner} spans x {a['x']:.0f}..{a['x'] + a['width']:.0f}, outside {outer} "
        f"x {b['x']:.0f}..{b['x'] + b['width']:.0f}")


def assert_same_row(page, first: str, second: str) -> None:
    """The two elements share a line: their vertical extents overlap."""
    a, b = box(page, first), box(page, second)
    assert a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"], (
        f"{first} (y {a['y']:.0f}, h {a['height']:.0f}) and {second} (y {b['y']:.0f}, h {b['height']:.0f}) "
        "are not on one line")


def assert_left_of(page, first: str, second: str) -> None:
    a, b = box(page, first), box(page, second)
    assert a["x"] + a["width"] <= b["x"] + 1, f"{first} does not sit left of {second}"
