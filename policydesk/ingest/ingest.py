"""`policydesk ingest DIR`: read and validate everything (the model embedding each changed file's
chunks meanwhile, embedcache.py), then write, in one transaction.

- Unchanged sources (same file SHA-256) are hashed, not read again (no parse, no OCR), and write nothing.
- A changed source replaces its version's chunks under the same chunk ids; only text the same
  embedding model has not embedded before is embedded (embedcache.py).
- A new version closes the window of the version it supersedes.
- Any error before commit leaves every table as it was.
- A file that cannot be read or carries member PHI refuses the whole ingest, every such file
  listed at once; with `skip_bad` those files are left out and the rest is written.
- Nothing widens who may read indexed text: a source whose `access_level` or `sensitive`
  differs from its indexed versions is refused, as is a file whose bytes are already indexed
  (or listed) under another id at another clearance; a retired id is never indexed again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.orm import Session
from policydesk.ingest.chunking import embed_text
from policydesk.ingest.embedcache import EmbeddingQueue
from policydesk.ingest.chunks import chunk_metadata, make_node, row_metadata, windows_for
from policydesk.ingest.errors import IngestError, IngestRefused
from policydesk.ingest.manifest import Source, check_windows, load_manifest, read_manifest
from policydesk.ingest.plan import PlannedSource, file_sha256, plan_source
from policydesk.ingest.readers.ocr import ocr_metadata
from policydesk.ingest.tokens import budget_for
from policydesk.storage.clearance import ACCESS_LEVELS
from policydesk.storage.models import OPEN_END, Chunk, Document, DocumentVersion
from policydesk.storage.source_files import FileChangedError, keep_files
from policydesk.screening.topic_terms import catch_up

__all__ = ["IngestReport", "file_sha256", "ingest_directory", "plan_directory"]


@dataclass
class IngestReport:
    sources: int = 0
    unchanged: int = 0
    written_versions: list[str] = field(default_factory=list)
    chunks_written: int = 0
    chunks_embedded: int = 0  # of those, embedded now (the rest came from the embedding cache)
    windows_closed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "file: field: reason", with --skip-bad
    warnings: list[str] = field(default_factory=list)  # "file: warning"

    def summary(self) -> str:
        skipped = f"; {len(self.skipped)} refused and skipped" if self.skipped else ""
        return (
            f"{self.sources} sources: {len(self.written_versions)} written, {self.unchanged} unchanged{skipped}; "
            f"{self.chunks_written} chunks written ({self.chunks_embedded} embedded, the rest from the embedding "
            f"cache); {len(self.windows_closed)} version windows updated"
        )


def plan_directory(directory: Path, settings) -> tuple[list[Source], list[PlannedSource]]:
    """The manifest and every source read, screened and chunked; nothing is written."""
    sources = load_manifest(Path(directory))
    budget = budget_for(settings)
    return sources, [plan_source(s, settings, budget) for s in sources]


def _changed(p: PlannedSource, existing: dict) -> bool:
    row = existing.get((p.source.doc_id, p.source.version))
    return row is None or row.source_sha256 != p.sha256


def _listed(directory: Path, only: set[tuple[str, int]]) -> tuple[list[Source], list[Source]]:
    """The `only` sources of the manifest, and all its good sources; a bad entry elsewhere in the
    manifest does not stop them, a bad entry among them raises its own error."""
    manifest = read_manifest(Path(directory))
    chosen = [s for s in manifest.sources if (s.doc_id, s.version) in only]
    missing = only - {(s.doc_id, s.version) for s in chosen}
    for doc_id, version in sorted(missing):
        problem = next((p for p in manifest.problems if p.doc_id == doc_id), None)
        if problem is not None:
            raise problem.error
        raise IngestError("manifest.yaml", "sources", f"{doc_id} version {version} is not listed")
    return chosen, manifest.sources


def listed_hashes(sources: Iterable[Source], settings) -> dict[str, list[Source]]:
    """The manifest's sources by file SHA-256 (too large or unreadable files left out: ingest
    refuses them on their own), for the same-content check."""
    by_sha: dict[str, list[Source]] = {}
    for s in sources:
        try:
            sha = file_sha256(s.path, max_bytes=settings.MAX_SOURCE_BYTES, file=s.file)
        except (IngestError, OSError):
            continue
        by_sha.setdefault(sha, []).append(s)
    return by_sha


def ingest_directory(db, directory: Path, embed_model, settings, *, progress: bool = False,
                     skip_bad: bool = False, only: set[tuple[str, int]] | None = None,
                     listed: Mapping[str, list[Source]] | None = None) -> IngestReport:
    """`only`: ingest just these (doc_id, version) sources of the manifest, in this one
    transaction (the other versions already indexed still shape their windows); sync.py calls it
    once per source, so a source that fails its checks leaves the others written, and a bad entry
    elsewhere in the manifest does not stop it. `listed`: the manifest's sources by file hash
    (`listed_hashes`), for the same-content check; computed when not given."""
    if only is None:
        sources = everything = load_manifest(Path(directory))
    else:
        sources, everything = _listed(directory, set(only))
    budget = budget_for(settings)
    report = IngestReport(sources=len(sources))

    with Session(db.owner) as session, session.begin(), EmbeddingQueue(session, embed_model, progress=progress) as queue:
        existing = {
            (v.doc_id, v.version): v
            for v in session.scalars(select(DocumentVersion).where(DocumentVersion.doc_id.in_({s.doc_id for s in sources})))
        }
        docs = {d.doc_id: d for d in session.scalars(select(Document).where(Document.doc_id.in_({s.doc_id for s in sources})))}
        # Each changed file's chunks go to the embedding queue as soon as the file is read, so the
        # model works while the next files are read (embedcache.py); what a refused ingest queued
        # is dropped with the transaction.
        planned, keys = [], {}
        for s in sources:
            indexed = existing.get((s.doc_id, s.version))
            p = plan_source(s, settings, budget, indexed_sha256=indexed.source_sha256 if indexed else None)
            planned.append(p)
            if not p.refused and _changed(p, existing):
                keys[id(p)] = queue.add([embed_text(s.title, c.text) for c in p.chunks])
        problems = [p.problem for p in planned if p.problem is not None]
        if problems and not skip_bad:
            raise IngestRefused(problems)
        report.skipped = [str(p) for p in problems]
        report.warnings = [f"{p.source.file}: {w}" for p in planned for w in p.warnings]
        prepared = [p for p in planned if not p.refused]
        changed = [p for p in prepared if id(p) in keys]
        report.unchanged = len(prepared) - len(changed)
        # Who may read indexed text never widens, changed or not: the checks run on every source.
        for p in prepared:
            _check_clearance(p, docs.get(p.source.doc_id), existing)
        if listed is None and only is None:
            listed = {}
            for p in planned:
                if p.sha256:
                    listed.setdefault(p.sha256, []).append(p.source)
        elif listed is None:
            listed = listed_hashes(everything, settings)
        copies = _indexed_copies(session, {p.sha256 for p in prepared})
        for p in prepared:
            _check_copies(p, copies.get(p.sha256, []), listed.get(p.sha256, []))

        # Windows over every version of each touched document: those indexed and those in DIR.
        all_versions: dict[str, dict[int, tuple]] = {}
        for (doc_id, version), row in existing.items():
            all_versions.setdefault(doc_id, {})[version] = (row.effective_from, row.source_file)
        for p in prepared:
            all_versions.setdefault(p.source.doc_id, {})[p.source.version] = (p.source.effective_from, p.source.file)
        windows = {}
        for doc_id, versions in all_versions.items():
            check_windows(doc_id, [(v, d, f) for v, (d, f) in versions.items()])
            windows[doc_id] = windows_for([(v, d) for v, (d, _) in versions.items()], OPEN_END)

        for p in changed:
            doc = docs.get(p.source.doc_id)
            if doc is not None:
                for attr, field_name in (("title", "title"), ("source_type", "type"), ("date_basis", "date_basis")):
                    if getattr(doc, attr) != getattr(p.source, attr):
                        raise IngestError(p.source.file, field_name, f"differs from the indexed {doc.doc_id} ({getattr(doc, attr)!r})")
                if (doc.line_of_business or []) != list(p.source.line_of_business):
                    raise IngestError(p.source.file, "line_of_business",
                                      f"differs from the indexed {doc.doc_id} ({doc.line_of_business or 'every product'})")

        # Writes go out in few statements: new documents in one flush, then versions, then chunks
        # batched by the session (multi-row INSERTs), old chunks deleted only where a version is
        # rewritten. Documents and versions are written while the model works; chunks follow their
        # vectors, one INSERT per batch the model returns: a first load of the demo corpus is about
        # 20 statements (a cache look-up per batch, a chunk INSERT per run of files whose vectors
        # came back together: how many runs depends on timing, their rows and order do not;
        # `sql_statements` of benchmarks/ingest_rate.py).
        for p in changed:
            s = p.source
            if s.doc_id not in docs:
                docs[s.doc_id] = Document(
                    doc_id=s.doc_id, title=s.title, source_type=s.source_type, date_basis=s.date_basis,
                    access_level=s.access_level, owner=s.owner, related_policies=list(s.related_policies),
                    line_of_business=list(s.line_of_business) or None,
                )
                session.add(docs[s.doc_id])
        session.flush()
        for p in changed:
            s = p.source
            window = windows[s.doc_id][s.version]
            row = existing.get((s.doc_id, s.version))
            values = dict(
                title=s.title, source_type=s.source_type, effective_from=s.effective_from,
                effective_to=window["effective_to"], supersedes=window["supersedes"],
                superseded_by=window["superseded_by"], date_basis=s.date_basis, access_level=s.access_level,
                sensitive=s.sensitive, owner=s.owner, source_file=s.file, source_sha256=p.sha256,
                disk_sha256=p.sha256, line_of_business=list(s.line_of_business) or None,
            )
            if row is None:
                row = DocumentVersion(doc_id=s.doc_id, version=s.version, **values)
                session.add(row)
                existing[(s.doc_id, s.version)] = row
            else:
                before = session.scalars(select(Chunk.text).where(
                    Chunk.doc_id == s.doc_id, Chunk.version == s.version).order_by(Chunk.id)).all()
                if list(before) != [c.text for c in p.chunks]:
                    values["text_changed_at"] = func.now()  # the answers citing it say so
                for k, v in values.items():
                    setattr(row, k, v)
                session.execute(delete(Chunk).where(Chunk.doc_id == s.doc_id, Chunk.version == s.version))
        session.flush()
        _keep_files(session, changed)
        # Chunks in manifest order (their ids and the HNSW graph's insertion order as before), each
        # leading run of files whose vectors are all in written while the model works on the next.
        queue.finish()
        todo = list(changed)
        while todo:
            ready = next((i for i, p in enumerate(todo) if not queue.ready(keys[id(p)])), len(todo))
            if not ready:
                queue.wait()
                continue
            rows = []
            for p in todo[:ready]:
                s = p.source
                window = windows[s.doc_id][s.version]
                for chunk, vector in zip(p.chunks, queue.vectors(keys[id(p)])):
                    node = make_node(s.doc_id, chunk.text,
                                     chunk_metadata(s, chunk, window)
                                     | ocr_metadata(p.ocr_pages, chunk, settings.OCR_FLAG_BELOW))
                    rows.append(dict(node_id=node.node_id, text=chunk.text, metadata_=row_metadata(node), embedding=vector))
                report.written_versions.append(f"{s.doc_id} v{s.version}")
                report.chunks_written += len(p.chunks)
            # A bulk INSERT without RETURNING: nothing reads the new rows back here, and an ORM
            # flush would fetch every generated column (the tsvector too) for each row.
            session.execute(insert(Chunk), rows)
            todo = todo[ready:]
        report.chunks_embedded = queue.embedded

        rewritten = {(p.source.doc_id, p.source.version) for p in changed}
        for (doc_id, version), row in existing.items():
            if (doc_id, version) in rewritten:
                continue
            w = windows[doc_id][version]
            if (row.effective_to, row.superseded_by, row.supersedes) == (w["effective_to"], w["superseded_by"], w["supersedes"]):
                continue
            row.effective_to, row.superseded_by, row.supersedes = w["effective_to"], w["superseded_by"], w["supersedes"]
            _rewrite_chunk_windows(session, doc_id, version, w)
            report.windows_closed.append(f"{doc_id} v{version} -> {w['effective_to']}")
        if report.chunks_written:
            # Fresh statistics keep the planner's estimate of the access predicate honest
            # (it decides between the HNSW index and an exact scan); over every row written, so
            # the pending inserts go first (a text statement does not flush the session).
            session.flush()
            session.execute(text("ANALYZE data_chunks"))
        # The topic gate's terms for what this transaction wrote, committed with it.
        session.flush()
        catch_up(session.connection())
    return report


def _keep_files(session: Session, changed: list[PlannedSource]) -> None:
    """Each written version's file as ingested (storage/source_files.py), so a citation opens the
    file it was made from even after the file on disk changes; bytes already kept are not re-read."""
    by_sha = {p.sha256: p.source for p in changed}

    def reader(s: Source):
        def read() -> bytes:
            try:
                return s.path.read_bytes()
            except OSError as exc:
                raise IngestError(s.file, "file", f"could not be read again to keep it ({exc.strerror})") from None
        return read

    try:
        keep_files(session, {sha: reader(s) for sha, s in by_sha.items()})
    except FileChangedError as exc:
        raise IngestError(by_sha[str(exc)].file, "file", "changed while it was being ingested; ingest it again") from None


def _clearance_text(access_level: str, sensitive: bool) -> str:
    return f"{access_level}{', sensitive' if sensitive else ''}"


def _check_clearance(p: PlannedSource, doc: Document | None, existing: dict) -> None:
    """A source already indexed keeps its clearance: the manifest may not change its
    `access_level` or `sensitive` (lowering them would show indexed text to more roles), nor
    list a retired id again."""
    s = p.source
    if doc is None:
        return
    if doc.retired_at is not None:
        raise IngestError(s.file, "id", f"{s.doc_id} was retired on {doc.retired_at.date().isoformat()} "
                                        f"(by {doc.retired_by}); a retired id is not indexed again: list the "
                                        "source under a new id")
    if doc.access_level != s.access_level:
        raise IngestError(s.file, "access_level", f"differs from the indexed {doc.doc_id} ({doc.access_level!r})")
    indexed = {row.sensitive for (doc_id, _), row in existing.items() if doc_id == s.doc_id} - {s.sensitive}
    if indexed:
        raise IngestError(s.file, "sensitive", f"differs from the indexed {doc.doc_id} ({indexed.pop()!r})")


@dataclass(frozen=True)
class _Held:
    """Another source holding the same bytes: indexed (maybe retired) or listed in the manifest."""
    doc_id: str
    version: int
    file: str
    access_level: str
    sensitive: bool
    state: str  # "indexed" | "retired" | "listed"


def _indexed_copies(session: Session, shas: set[str]) -> dict[str, list[_Held]]:
    """Indexed versions (retired ones too) whose file had one of these hashes."""
    shas.discard("")
    if not shas:
        return {}
    v, d = DocumentVersion, Document
    rows = session.execute(select(v.source_sha256, v.doc_id, v.version, v.source_file, v.access_level, v.sensitive,
                                  d.retired_at).join(d, d.doc_id == v.doc_id)
                           .where(v.source_sha256.in_(sorted(shas))).order_by(v.doc_id, v.version)).all()
    found: dict[str, list[_Held]] = {}
    for r in rows:
        state = "retired" if r.retired_at is not None else "indexed"
        found.setdefault(r.source_sha256, []).append(
            _Held(r.doc_id, r.version, r.source_file, r.access_level, r.sensitive, state))
    return found


def _wider(a: tuple[str, bool], b: tuple[str, bool]) -> bool:
    """Clearance `a` lets someone read what `b` keeps from them: a lower level, or not sensitive."""
    return ACCESS_LEVELS.index(a[0]) < ACCESS_LEVELS.index(b[0]) or (b[1] and not a[1])


def _check_copies(p: PlannedSource, indexed: list[_Held], listed: list[Source]) -> None:
    """The same bytes under another id must carry the same clearance: a copy or a symlink of a
    restricted file listed as public would hand its text to every rep. A retired copy bars only
    a wider one (retiring a wrongly public copy lets the original be indexed)."""
    s = p.source
    mine = (s.access_level, s.sensitive)
    others = indexed + [_Held(o.doc_id, o.version, o.file, o.access_level, o.sensitive, "listed") for o in listed]
    for other in others:
        theirs = (other.access_level, other.sensitive)
        if other.doc_id == s.doc_id or theirs == mine:
            continue
        if other.state == "retired" and not _wider(mine, theirs):
            continue
        field_name = "access_level" if other.access_level != s.access_level else "sensitive"
        if _wider(mine, theirs):
            why = "a copy must not be read more widely than the text it copies"
        else:
            why = (f"if {other.doc_id} should not be read that widely, retire it "
                   f"(policydesk sync DIR --retire {other.doc_id})" if other.state == "indexed"
                   else "list both at one clearance")
        raise IngestError(s.file, field_name, (
            f"same content (sha256 {p.sha256[:12]}) as {other.doc_id} v{other.version} ({other.file}), "
            f"{other.state} at {_clearance_text(*theirs)}; {s.doc_id} lists it at {_clearance_text(*mine)}: {why}"))


def _rewrite_chunk_windows(session: Session, doc_id: str, version: int, window: dict) -> None:
    rows = session.execute(select(Chunk.id, Chunk.text, Chunk.metadata_).where(
        Chunk.doc_id == doc_id, Chunk.version == version
    )).all()
    for chunk_pk, chunk_text, meta in rows:
        clean = {k: v for k, v in meta.items() if not k.startswith("_") and k not in ("doc_id", "document_id", "ref_doc_id")}
        clean.update(
            effective_to=window["effective_to"].isoformat(),
            superseded_by=window["superseded_by"], supersedes=window["supersedes"],
        )
        node = make_node(doc_id, chunk_text, clean)
        session.execute(update(Chunk).where(Chunk.id == chunk_pk).values(metadata_=row_metadata(node)))
