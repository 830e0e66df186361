"""A citation opens its source at the cited place (every role, within its clearance).

Every URL here names a cited chunk and starts by re-reading it under the signed-in user's CURRENT
clearance (`storage/source_files.py`: the predicate in the statement, row-level security behind
it). A chunk that does not exist, was retired or rewritten away, or is above that clearance gets
one and the same 404, so nothing tells a user that a source they may not read exists.

- `/sources/{chunk}/open`: where the citation link points. A PDF kept at ingest opens at the cited
  page (`/sources/{chunk}/file#page=N`, the browser's PDF viewer reads the fragment); any other
  source, or a PDF ingested before files were kept, opens the version's text at the cited section
  (`/sources/{chunk}/text#section-KEY`).
- `/sources/{chunk}/file`: the file as ingested, not as it is on disk now: a PDF inline, any other
  format as a download (never rendered by the browser). Never stored by a shared cache.
- `/sources/{chunk}/text`: the version's indexed text in document order, the cited part marked.
"""

from __future__ import annotations

import logging
import re
from pathlib import PurePosixPath
from urllib.parse import quote

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import RedirectResponse, Response

from policydesk.storage.source_files import CitedPlace, cited_file, cited_place, version_sections
from policydesk.versions import Window
from policydesk.web.deps import CurrentUser, ScopedSession
from policydesk.web.templating import render

log = logging.getLogger(__name__)
router = APIRouter(prefix="/sources", tags=["sources"])

NOT_FOUND = "No such source, or not one you may open."
# The file is the user's to read, not a shared cache's to keep.
NO_SHARED_CACHE = "private, no-store"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def _not_found() -> HTTPException:
    return HTTPException(status_code=404, detail=NOT_FOUND)


def source_base(chunk_id: str) -> str:
    return f"/sources/{quote(chunk_id, safe='')}"


def section_anchor(key: str) -> str:
    return f"section-{key}"


def open_url(place: CitedPlace) -> str:
    """Where a citation of this place opens: the PDF at its page, else the text at its section."""
    base = source_base(place.chunk_id)
    if place.is_pdf and place.file_kept:
        return f"{base}/file#page={place.page_start or 1}"
    return f"{base}/text#{section_anchor(place.section_id)}"


@router.get("/{chunk_id:path}/open")
def open_source(user: CurrentUser, session: ScopedSession, chunk_id: str):
    place = cited_place(session, chunk_id=chunk_id, clearance=user.clearance)
    if place is None:
        raise _not_found()
    return RedirectResponse(open_url(place), status_code=303, headers={"Cache-Control": NO_SHARED_CACHE})


def _disposition(kind: str, source_file: str) -> str:
    name = PurePosixPath(source_file).name
    ascii_name = _SAFE_NAME.sub("_", name).strip("._") or "source"
    return f"{kind}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name, safe='')}"


@router.get("/{chunk_id:path}/file")
def source_file(user: CurrentUser, session: ScopedSession, chunk_id: str):
    found = cited_file(session, chunk_id=chunk_id, clearance=user.clearance)
    if found is None:
        raise _not_found()
    place, content = found
    if place.is_pdf:
        media, kind = "application/pdf", "inline"
    else:  # Markdown, HTML, Word: downloaded as they were, never rendered as a page of this site
        media, kind = "application/octet-stream", "attachment"
    return Response(content, media_type=media, headers={
        "Content-Disposition": _disposition(kind, place.source_file), "Cache-Control": NO_SHARED_CACHE,
        "X-Source-SHA256": place.source_sha256})


def _parts(rows: list[tuple[str, str, dict]], cited: str) -> list[dict]:
    parts = []
    for node_id, text, meta in rows:
        heading = str(meta.get("section", ""))
        body = text[len(heading) + 1:] if heading and text.startswith(heading + "\n") else text
        key = str(meta.get("section_id", ""))
        parts.append({"anchor": section_anchor(key), "heading": heading, "body": body, "cited": node_id == cited,
                      "continued": ":" in key, "pages": _pages_line(meta)})
    return parts


def _pages_line(meta: dict) -> str:
    start, end = meta.get("page_start"), meta.get("page_end")
    if not isinstance(start, int):
        return ""
    return f"page {start}" if start == end or not isinstance(end, int) else f"pages {start}–{end}"


@router.get("/{chunk_id:path}/text")
def source_text(request: Request, user: CurrentUser, session: ScopedSession, chunk_id: str):
    place = cited_place(session, chunk_id=chunk_id, clearance=user.clearance)
    if place is None:
        raise _not_found()
    rows = version_sections(session, place=place, clearance=user.clearance)
    cited_meta = next((m for n, _, m in rows if n == place.chunk_id), {})
    window = Window.cited(cited_meta["effective_from"], cited_meta.get("effective_to")).format("arrow") \
        if cited_meta.get("effective_from") else ""
    if place.is_pdf and not place.file_kept:
        # Loud, not silent: the page says why the PDF itself is not offered.
        log.warning("source file not kept for %s v%s (ingested before files were kept): showing its text",
                    place.doc_id, place.version)
    base = source_base(place.chunk_id)
    return render(request, "sources/text.html", {
        "place": place, "parts": _parts(rows, place.chunk_id), "window": window,
        "file_url": (f"{base}/file" + (f"#page={place.page_start or 1}" if place.is_pdf else ""))
        if place.file_kept else None,
        "file_missing": not place.file_kept,
    }, headers={"Cache-Control": NO_SHARED_CACHE})
