"""Jinja2 rendering: one template serves the full page and its htmx fragment.

As in jinja2-fragments, a fragment is a named block of the page template rendered on its
own, so the page and the fragment can never drift apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from policydesk.web.deps import CSRF_FIELD, CSRF_HEADER, csrf_token, is_htmx

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))


def render(request: Request, name: str, context: dict[str, Any] | None = None, *, block: str | None = None,
           status_code: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    """Render `name`; with `block` and an htmx request, only that block (no <html>)."""
    ctx = {
        "request": request,
        "csrf_token": csrf_token(request),
        "csrf_field": CSRF_FIELD,
        "csrf_header": CSRF_HEADER,
        "user": getattr(request.state, "user", None),
        "fragment": False,
        "sso": request.app.state.settings.sso_enabled,
        "local_passwords": request.app.state.settings.LOCAL_PASSWORDS,
        **(context or {}),
    }
    template = TEMPLATES.get_template(name)
    if block and is_htmx(request):
        ctx["fragment"] = True
        body = "".join(template.blocks[block](template.new_context(ctx)))
    else:
        body = template.render(ctx)
    return HTMLResponse(body, status_code=status_code, headers=headers)
