"""HTTP test helpers for the web app: parse pages with selectors, sign in, post with CSRF."""

from __future__ import annotations

import socket
from html.parser import HTMLParser

from fastapi.testclient import TestClient

PASSWORD = "correct horse battery staple"


def free_port() -> int:
    """A loopback port nothing listens on now, for a server a test starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.elements: list[dict] = []
        self._open: list[dict] = []

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.elements.append(el)
        if tag not in ("input", "meta", "link", "br", "img"):
            self._open.append(el)

    def handle_endtag(self, tag):
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i]["tag"] == tag:
                del self._open[i:]
                break

    def handle_data(self, data):
        for el in self._open:
            el["text"] += data


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


def find(html: str, tag: str, **attrs) -> list[dict]:
    return [e for e in parse(html).elements if e["tag"] == tag
            and all(e["attrs"].get(k.rstrip("_")) == v for k, v in attrs.items())]


def by_class(html: str, cls: str) -> list[dict]:
    return [e for e in parse(html).elements if cls in (e["attrs"].get("class") or "").split()]


def text_of(html: str, cls: str) -> str:
    return " ".join(e["text"] for e in by_class(html, cls))


def csrf_from(html: str) -> str:
    return find(html, "input", name="csrf_token")[0]["attrs"]["value"]


def sign_in(app, name: str) -> TestClient:
    client = TestClient(app, follow_redirects=False)
    token = csrf_from(client.get("/login").text)
    r = client.post("/login", data={"name": name, "password": PASSWORD, "csrf_token": token, "next": "/ask"})
    assert r.status_code == 303, r.text
    return client


def token_of(client: TestClient, path: str = "/ask") -> str:
    return csrf_from(client.get(path).text)


def ask(client: TestClient, question: str, **dates) -> "object":
    return client.post("/ask", data={"question": question, "csrf_token": token_of(client), **dates})
