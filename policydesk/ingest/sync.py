"""`policydesk sync DIR`: bring the index up to date with the document folder.

Only sources whose file differs from the indexed one (or that are not indexed yet) are ingested,
each by `ingest_directory(only=...)` in its own transaction: readers never see half a source, and
a source that fails its checks is reported while the rest are written. After a sync the
staleness check records every file's current hash, so a source that failed stays visible as
changed-but-not-synced (the owners report) and answers citing it keep warning.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from policydesk.ingest.errors import IngestError
from policydesk.ingest.ingest import ingest_directory
from policydesk.ingest.manifest import Source, load_manifest
from policydesk.ingest.plan import file_sha256
from policydesk.ingest.staleness import check_staleness
from policydesk.storage.models import DocumentVersion

log = logging.getLogger("policydesk.sync")


class UnknownSources(ValueError):
    """A change notice named paths or ids the folder's manifest does not list."""

    def __init__(self, kind: str, names: list[str]):
        self.kind, self.names = kind, names
        super().__init__(f"not in the manifest: {kind} {', '.join(names)}")


@dataclass
class SyncReport:
    considered: int = 0
    written: list[str] = field(default_factory=list)  # "DOC v2"
    unchanged: int = 0
    failed: list[str] = field(default_factory=list)  # "file: field: reason"
    windows_closed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        failed = f"; {len(self.failed)} failed their checks and were not synced" if self.failed else ""
        return (f"{self.considered} sources: {len(self.written)} synced, {self.unchanged} unchanged{failed}; "
                f"{len(self.windows_closed)} version windows updated")


def select_sources(sources: list[Source], *, paths: Iterable[str] = (), ids: Iterable[str] = ()) -> list[Source]:
    """The manifest's sources named by file path or document id (every version of an id);
    all of them when neither is given. A name the manifest lacks raises `UnknownSources`."""
    paths, ids = [str(p) for p in paths], [str(i) for i in ids]
    if not paths and not ids:
        return list(sources)
    files = {s.file for s in sources} | {Path(s.file).as_posix() for s in sources}
    unknown_paths = [p for p in paths if Path(p).as_posix() not in files]
    if unknown_paths:
        raise UnknownSources("paths", unknown_paths)
    unknown_ids = [i for i in ids if i not in {s.doc_id for s in sources}]
    if unknown_ids:
        raise UnknownSources("ids", unknown_ids)
    wanted = {Path(p).as_posix() for p in paths}
    return [s for s in sources if Path(s.file).as_posix() in wanted or s.doc_id in ids]


def pending(db, sources: list[Source]) -> list[Source]:
    """Of these sources, those not indexed or whose file's hash differs from the indexed one."""
    with Session(db.owner) as session:
        indexed = {(r.doc_id, r.version): r.source_sha256 for r in session.execute(
            select(DocumentVersion.doc_id, DocumentVersion.version, DocumentVersion.source_sha256)
            .where(DocumentVersion.doc_id.in_({s.doc_id for s in sources})))}
    return [s for s in sources if indexed.get((s.doc_id, s.version)) != file_sha256(s.path)]


def sync_directory(db, directory: Path, embed_model, settings, *, paths: Iterable[str] = (),
                   ids: Iterable[str] = ()) -> SyncReport:
    """Sync the named sources (default: all), one transaction each. A manifest that does not
    parse raises `IngestError` before anything is written."""
    chosen = select_sources(load_manifest(Path(directory)), paths=paths, ids=ids)
    report = SyncReport(considered=len(chosen))
    todo = pending(db, chosen)
    report.unchanged = len(chosen) - len(todo)
    for s in todo:
        try:
            done = ingest_directory(db, directory, embed_model, settings, only={(s.doc_id, s.version)})
        except IngestError as exc:
            log.warning("sync: %s not synced: %s", s.file, exc)
            report.failed.append(str(exc))
            continue
        report.written += done.written_versions
        report.windows_closed += done.windows_closed
        report.warnings += done.warnings
    check_staleness(db, directory)
    return report


def sync_every(run: Callable[[], SyncReport], minutes: float, *, sleep: Callable[[float], None] = time.sleep,
               max_runs: int | None = None, on_report: Callable[[SyncReport | Exception], None] = lambda r: None
               ) -> int:
    """Run `run` now and then every `minutes`, `max_runs` times (None: until stopped). A run that
    raises is reported (`on_report` gets the exception) and the next one still happens. Returns
    the number of runs."""
    if minutes <= 0:
        raise ValueError("the period must be a positive number of minutes")
    runs = 0
    while max_runs is None or runs < max_runs:
        started = time.monotonic()
        try:
            on_report(run())
        except (IngestError, OSError, DBAPIError) as exc:
            log.error("sync failed: %s", exc)
            on_report(exc)
        runs += 1
        if max_runs is not None and runs >= max_runs:
            break
        sleep(max(0.0, minutes * 60 - (time.monotonic() - started)))
    return runs
