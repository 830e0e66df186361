"""A thin client of the JSON API, for `policydesk ask --server URL --token T`.

It imports neither the pipeline nor a database driver's engine: a terminal user gets an answer
from a running server without loading models (docs/api.md has the timing).
"""

from __future__ import annotations

from typing import Any

PROBLEM_MEMBERS = ("type", "title", "status", "detail", "instance", "errors")


class ApiClientError(Exception):
    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def ask_remote(server: str, token: str, question: str, dates: dict[str, str], *, timeout: float = 120.0,
               line_of_business: str | None = None) -> dict[str, Any]:
    """The answer object, exactly as a local `policydesk ask --json` prints it. A refusal is an
    answer too (the server sends it as a `refused` problem carrying every answer field)."""
    import httpx

    url = server.rstrip("/") + "/api/v1/ask"
    try:
        body = {"question": question, **dates} | ({"line_of_business": line_of_business} if line_of_business else {})
        response = httpx.post(url, json=body, timeout=timeout,
                              headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
    except httpx.HTTPError as exc:
        raise ApiClientError(f"could not reach {url}: {exc.__class__.__name__}: {exc}", exit_code=3) from None
    try:
        body = response.json()
    except ValueError:
        raise ApiClientError(f"{url} answered {response.status_code} without JSON; is it a PolicyDesk server?",
                             exit_code=3) from None
    if response.status_code == 200:
        return body
    if body.get("type") == "refused":
        return {k: v for k, v in body.items() if k not in PROBLEM_MEMBERS}
    message = f"{body.get('title', response.status_code)}: {body.get('detail', '')}"
    if body.get("trace_id"):
        message += f" (trace {body['trace_id']})"
    retry = response.headers.get("Retry-After")
    if retry:
        message += f"; retry after {retry} s"
    raise ApiClientError(message, exit_code=3 if response.status_code >= 500 or response.status_code == 429 else 2)


def render_answer(data: dict[str, Any]) -> str:
    """The text form of an answer object (`AskResult.to_json()` or the API's answer): what
    `policydesk ask` prints without --json, locally or with --server."""
    if data.get("refused"):
        return f"REFUSED: {data.get('refusal_reason')}"
    if data.get("abstained") or data.get("error"):
        return f"NO ANSWER: {data.get('abstain_reason') or data.get('error')}"
    # The one window formatter; imported here, not at the top, so `--json` loads nothing more.
    from policydesk.versions.window import Window

    lines = [data.get("answer", ""), ""]
    for p in data.get("passages", []):  # no model: the policy text shown, the marked sentence in >> <<
        text, at, marked = p["text"], 0, []
        for start, end in sorted(tuple(m) for m in p.get("marked", [])):
            marked += [text[at:start], ">>", text[start:end], "<<"]
            at = end
        window = Window.cited(p["effective_from"], p.get("effective_to")).format("ascii")
        lines.insert(len(lines) - 1, f"POLICY TEXT: {p['title']} - {p['section']} - version {p['version']} - {window}")
        lines.insert(len(lines) - 1, "  " + "".join(marked + [text[at:]]).replace("\n", "\n  "))
    if data.get("condition"):
        lines.insert(1, f"ONLY IF: {data['condition']}")
    if data.get("line_of_business"):
        lines.insert(0, f"[line of business: {data['line_of_business']}]")
    for c in data.get("citations", []):
        window = Window.cited(c["effective_from"], c.get("effective_to")).format("ascii")
        products = f" - {', '.join(c['line_of_business'])} only" if c.get("line_of_business") else ""
        lines.append(f"  [{c['chunk_id']}] {c['title']} - {c['section']} - version {c['version']} - {window}{products}")
    lines += [f"  ! {w['kind']}: {w['message']}" for w in data.get("warnings", [])]
    return "\n".join(lines)
