"""POST /api/v1/sources/changed: the document system says which sources changed; they are synced
from the configured folder (`POLICYDESK_SYNC_DIR`) on a background thread.

Only a compliance token may send one: a sync changes what every answer cites. The notice only
names sources; their text is always read from the folder, never from the request. A notice
naming anything the folder's manifest does not list is refused whole (422), nothing queued; a
server with no folder configured answers 404. A bad manifest entry fails alone, in the sync (503
only when the manifest can't be read at all). Each accepted notice is an audit_log row
(`sources_changed`: who, which files).
"""

from __future__ import annotations

import threading
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.concurrency import run_in_threadpool

from policydesk.proof import disputes
from policydesk.ingest.errors import IngestError
from policydesk.ingest.sync import UnknownSources, listed_sources
from policydesk.ingest.worker import Notice, SyncWorker
from policydesk.storage.storable import echoable
from policydesk.web.api.deps import ApiUser, body_schema, check_text, parse_body, read_body
from policydesk.web.api.problems import ApiProblem, problems
from policydesk.web.deps import Staff

router = APIRouter(tags=["sources"])
SYNC_ROLES = ("compliance",)
MAX_NAMES = 1000
_WORKER_LOCK = threading.Lock()


class ChangeNotice(BaseModel):
    model_config = ConfigDict(extra="forbid")
    paths: list[Annotated[str, Field(min_length=1, max_length=1000)]] | None = Field(
        default=None, max_length=MAX_NAMES, description="Files that changed, as the manifest's `file` entries.")
    ids: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        default=None, max_length=MAX_NAMES, description="Source ids that changed (every version listed is synced).")

    @model_validator(mode="after")
    def _names_something(self) -> "ChangeNotice":
        if not (self.paths or self.ids):
            raise ValueError("name the sources that changed: a non-empty `paths` or `ids` list")
        return self


class Queued(BaseModel):
    queued: list[str] = Field(description="The manifest files whose sync was queued.")


def sync_user(user: ApiUser) -> Staff:
    if user.role not in SYNC_ROLES:
        raise ApiProblem("forbidden", "Change notices are accepted only from a compliance user's token.")
    return user


def sync_worker(request: Request) -> SyncWorker:
    """The app's one sync queue, started on the first notice."""
    state = request.app.state
    with _WORKER_LOCK:
        if getattr(state, "sync_worker", None) is None:
            state.sync_worker = SyncWorker(state.db, state.settings.SYNC_DIR, state.pipeline.embed_model,
                                           state.settings)
        return state.sync_worker


@router.post("/sources/changed", status_code=202, response_model=Queued, openapi_extra=body_schema(ChangeNotice),
             responses=problems(403, 404, 503), summary="Sync the sources the document system says changed")
async def sources_changed(request: Request, user: Annotated[Staff, Depends(sync_user)]) -> JSONResponse:
    raw = await read_body(request, request.app.state.settings.API_MAX_BODY_BYTES)
    queued = await run_in_threadpool(_queue, request, user, raw)
    return JSONResponse(Queued(queued=queued).model_dump(), status_code=202)


def _queue(request: Request, user: Staff, raw: bytes) -> list[str]:
    notice = parse_body(raw, ChangeNotice)
    for i, name in enumerate([*(notice.paths or []), *(notice.ids or [])]):
        check_text(**{f"name {i + 1}": name})
    directory = request.app.state.settings.SYNC_DIR
    if directory is None:
        # The resource a notice is about does not exist here: this server syncs no folder.
        raise ApiProblem("not_found", "This server syncs no document folder (POLICYDESK_SYNC_DIR is not set).")
    try:
        chosen = listed_sources(directory, paths=notice.paths or (), ids=notice.ids or ())
    except UnknownSources as exc:
        shown = [n for n in exc.names if echoable(n, max_chars=200)]
        raise ApiProblem.field("invalid_request", exc.kind, "not in the document folder's manifest"
                               + (f": {', '.join(shown)}" if shown else "")) from None
    except IngestError as exc:
        raise ApiProblem("unavailable", f"The document folder's manifest is not valid, nothing was queued: {exc}") from None
    sync_worker(request).submit(Notice(tuple(notice.paths or ()), tuple(notice.ids or ())))
    queued = [s.file for s in chosen]
    disputes.audit(request.app.state.db, actor=user.name, action="sources_changed", target="sources",
                   details={"queued": queued})
    return queued
