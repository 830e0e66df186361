"""What `policydesk ingest DIR --dry-run` and `policydesk inspect FILE` print: per file, the chunks
that would be written (id, heading path, tokens, first words), every warning and every refusal."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from policydesk.ingest.manifest import SUFFIXES, Source
from policydesk.ingest.plan import PlannedSource, plan_source
from policydesk.ingest.tokens import budget_for

FIRST_WORDS = 12


def _first_words(chunk_text: str) -> str:
    body = chunk_text.split("\n", 1)[-1].split()
    return " ".join(body[:FIRST_WORDS]) + (" ..." if len(body) > FIRST_WORDS else "")


def describe(planned: PlannedSource) -> list[str]:
    s = planned.source
    head = f"{s.file}  {s.doc_id} v{s.version} ({s.source_type})"
    if planned.refused:
        return [f"{head}: REFUSED: {planned.problem.reason}"]
    sections = len({c.section.section_id for c in planned.chunks})
    lines = [f"{head}  title {planned.doc_title!r}: {sections} sections, {len(planned.chunks)} chunks"]
    lines += [f"  warning: {w}" for w in planned.warnings]
    if planned.ocr_pages:  # low-confidence pages are also warnings above (flagged)
        lines.append("  read by OCR: " + ", ".join(f"page {n} confidence {c:.1f}" for n, c in sorted(planned.ocr_pages.items())))
    lines += [f"  header line, not indexed: {h}" for h in planned.header_lines]
    width = max(len(c.key) for c in planned.chunks)
    for c in planned.chunks:
        part = f" part {c.part}/{c.parts}" if c.parts > 1 else ""
        lines.append(
            f"  {c.key:<{width}}  {c.section.heading}{part} ({c.tokens} tokens, {c.section.where}): "
            f"{_first_words(c.text)}"
        )
    return lines


def summary(planned: list[PlannedSource], skip_bad: bool) -> str:
    refused = [p for p in planned if p.refused]
    chunks = sum(len(p.chunks) for p in planned)
    warnings = sum(len(p.warnings) for p in planned)
    verdict = "nothing written (dry run)"
    if refused and not skip_bad:
        verdict += "; a real ingest would be refused (pass --skip-bad to leave the refused files out)"
    return (f"{len(planned)} files: {chunks} chunks, {warnings} warnings, {len(refused)} refused; {verdict}")


def inspect_file(path: Path, settings, source_type: str | None = None) -> PlannedSource:
    """Plan one file outside any manifest; its type follows from the suffix unless given."""
    suffix = path.suffix.lower()
    kind = source_type or next((t for t, sfx in SUFFIXES.items() if suffix in sfx), "wiki")
    source = Source(
        file=path.name, path=path.resolve(), doc_id=path.stem.upper(), title=path.stem, source_type=kind,
        version=1, effective_from=date.today(), date_basis="none", access_level="public", sensitive=False,
        owner="-", related_policies=(),
    )
    return plan_source(source, settings, budget_for(settings))
