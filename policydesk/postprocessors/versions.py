"""Step 5: put the version of each policy that applied into context, in both directions.

Each policy names its date basis (date of service, denial notice date). With that date entered,
every chunk of the policy is swapped for the same section of the version whose effective date
is the latest on or before it (a 2025 date swaps version 2 back to version 1; a 2027 date swaps
POL-PA version 1 forward to its scheduled version 2). Without it, chunks are swapped for the
version in force today (never a scheduled one) and the answer is warned about recent and
scheduled changes. Sections are fetched through `VersionLookup`, under the caller's predicate.

No version in force on the applicable date (entered, or today when none was entered): the
policy did not apply, so its chunks are dropped with a visible `not_in_force` warning. If it is
the first policy the ranking reaches, it is also kept in `report.held_back`: the pipeline refuses
for it only when the question is about that policy (it names it, or nothing in force answers),
never because an unrelated policy happened to rank first.

Wiki pages and call notes are date-checked too: a note enters the context only if
it was in force itself on the applicable date of each policy it relates to (`related_policies`;
that policy's date basis decides which entered date, or today) and each of those policies had
a version in force then. A note whose policy had none is dropped with the same warning (and,
reached before any policy in force, that policy is held back as above). A note
relating to no policy the caller can see is checked against every entered date (or today).

Findings go into node metadata (`applicable_date`, `date_basis`, `swapped_from`) and into the
caller's `ContextReport` (`report`); the resolver keeps nothing between calls.
"""

from __future__ import annotations

import llama_index.core.instrumentation as instrument

from datetime import date, timedelta

from llama_index.core.bridge.pydantic import Field
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from policydesk.contract.answer import AnswerWarning
from policydesk.contract.report import ContextReport, Processed
from policydesk.storage.chunk_ids import doc_id_of
from policydesk.storage.clearance import Clearance
from policydesk.versions import (
    NoVersionInForce,
    VersionInfo,
    VersionLookup,
    VersionReads,
    Window,
    basis_label,
    in_force_on,
    in_force_today,
    previous_version,
)

dispatcher = instrument.get_dispatcher(__name__)


class VersionResolver(BaseNodePostprocessor):
    """Swap policy chunks for the version that applied (configured for one request: its dates)."""

    lookup: VersionLookup = Field(description="Permission-scoped reads of versions and sections.")
    clearance: Clearance = Field(description="What the caller may read; every lookup runs under it.")
    dates: dict[str, date | None] = Field(
        default_factory=dict, description="Entered dates keyed by date basis (date_of_service, denial_notice_date)."
    )
    today: date = Field(description="Injected clock; the version in force today is used without a date.")
    recent_change_days: int = Field(default=365, description="Warn when the in-force version is this recent.")

    @classmethod
    def class_name(cls) -> str:
        return "VersionResolver"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return self.resolve(nodes).nodes

    @dispatcher.span
    def resolve(self, nodes: list[NodeWithScore]) -> Processed:
        """The nodes of the versions that apply, and what was found about the request."""
        report = ContextReport()
        policy_ids = [doc_id_of(n.node) for n in nodes if n.node.metadata.get("source_type") == "policy"]
        related_ids = [r for n in nodes if n.node.metadata.get("source_type") != "policy"
                       for r in n.node.metadata.get("related_policies") or []]
        wanted = list(dict.fromkeys(policy_ids + related_ids))
        # One read for the request: the versions of every policy in play and each policy
        # section's other versions, so a swap needs no read of its own.
        sections = {(doc_id_of(n.node), n.node.metadata.get("section_id")) for n in nodes
                    if n.node.metadata.get("source_type") == "policy" and n.node.metadata.get("section_id")}
        reads = self.lookup.reads(wanted, sections, self.clearance)
        versions = reads.versions
        chosen: dict[str, VersionInfo | None] = {}
        out: list[NodeWithScore] = []
        seen: set[str] = set()
        for item in nodes:
            meta = item.node.metadata
            if meta.get("source_type") != "policy":
                meta.setdefault("applicable_date", None)
                if not self._note_in_force(item, versions, chosen, report):
                    continue
                resolved = item
            else:
                resolved = self._resolve(item, reads, chosen, report)
                if resolved is None:
                    continue
            if resolved.node.node_id in seen:
                report.dropped.append({"chunk_id": item.node.node_id, "reason": "duplicate after version swap"})
                continue
            seen.add(resolved.node.node_id)
            out.append(resolved)
        report.applied.extend(self._applied(v) for v in chosen.values() if v is not None)
        return Processed(out, report)

    # -- one wiki page or call note -----------------------------------------------------------

    def _note_in_force(self, item: NodeWithScore, versions, chosen, report: ContextReport) -> bool:
        node, meta = item.node, item.node.metadata
        related = [p for p in dict.fromkeys(meta.get("related_policies") or []) if versions.get(p)]
        bases = {p: versions[p][0].date_basis for p in related}
        checks = [self.dates.get(b) or self.today for b in bases.values()] or \
            [d for d in self.dates.values() if d is not None] or [self.today]
        too_early = self._note_not_in_force_on(meta, checks)
        for doc_id in related:
            try:
                target = self._in_force(doc_id, versions[doc_id], self.dates.get(bases[doc_id]), bases[doc_id])
            except NoVersionInForce as exc:
                self._hold_back(exc, chosen, report)
                report.dropped.append({"chunk_id": node.node_id, "reason": str(exc)})
                if too_early is None:  # the note alone would have stood in for the policy: say so
                    self._warn_left_out(exc, report)
                return False
            if target is None:  # the version that applied is hidden from the caller: no stand-in
                report.dropped.append({"chunk_id": node.node_id, "reason": f"no visible version of {doc_id} in force"})
                return False
        if too_early is not None:
            report.dropped.append({"chunk_id": node.node_id, "reason": too_early})
            return False
        return True

    @staticmethod
    def _note_not_in_force_on(meta: dict, checks: list[date]) -> str | None:
        """Why the note itself was not in force on one of the dates, or None."""
        if not meta.get("effective_from"):
            return None
        window = Window.stored(meta["effective_from"], meta.get("effective_to"))
        for on in checks:
            if on < window.first or (window.last is not None and on > window.last):
                return f"{meta.get('title')} was not in force on {on.isoformat()} ({window.format()})"
        return None

    @staticmethod
    def _hold_back(exc: NoVersionInForce, chosen: dict, report: ContextReport) -> None:
        """Keep the first not-in-force policy reached before any policy in force."""
        if report.held_back is None and not any(chosen.values()):
            report.held_back = exc

    @staticmethod
    def _warn_left_out(exc: NoVersionInForce, report: ContextReport) -> None:
        message = exc.left_out
        if all(w.message != message for w in report.warnings):
            report.warnings.append(AnswerWarning(kind="not_in_force", message=message))

    # -- one policy chunk ---------------------------------------------------------------------

    def _resolve(self, item: NodeWithScore, reads: VersionReads, chosen, report: ContextReport) -> NodeWithScore | None:
        node, versions = item.node, reads.versions
        doc_id = doc_id_of(node)
        basis = node.metadata.get("date_basis")
        applicable = self.dates.get(basis)
        if doc_id not in chosen:
            try:
                chosen[doc_id] = self._choose(doc_id, versions.get(doc_id, []), applicable, basis, report)
            except NoVersionInForce as exc:
                self._hold_back(exc, chosen, report)
                chosen[doc_id] = None
                report.dropped.append({"chunk_id": node.node_id, "reason": str(exc)})
                self._warn_left_out(exc, report)
                return None
        target = chosen[doc_id]
        if target is None:
            if not versions.get(doc_id):
                why = "no visible version"
            elif applicable is not None:
                why = f"no visible version in force on {applicable.isoformat()}"
            else:
                why = "no visible version in force today"
            report.dropped.append({"chunk_id": node.node_id, "reason": why})
            return None
        if int(node.metadata.get("version", 0)) != target.version:
            section_id = node.metadata.get("section_id")
            fetched = reads.section(doc_id, target.version, section_id)
            if fetched is None:
                report.dropped.append({
                    "chunk_id": node.node_id,
                    "reason": f"section {section_id!r} does not exist in version {target.version}",
                })
                return None
            if "retrieval_degraded" in node.metadata:
                fetched.metadata["retrieval_degraded"] = node.metadata["retrieval_degraded"]
            report.swaps.append((node.node_id, fetched.node_id))
            fetched.metadata["swapped_from"] = node.node_id
            item = NodeWithScore(node=fetched, score=item.score)
        item.node.metadata["applicable_date"] = applicable.isoformat() if applicable else None
        item.node.metadata["date_basis"] = basis
        return item

    def _choose(self, doc_id, versions: list[VersionInfo], applicable: date | None, basis,
                report: ContextReport) -> VersionInfo | None:
        target = self._in_force(doc_id, versions, applicable, basis)
        if target is not None and applicable is None:
            report.warnings.extend(self._change_warnings(versions, target, basis))
        return target

    def _in_force(self, doc_id, versions: list[VersionInfo], applicable: date | None, basis) -> VersionInfo | None:
        """The version in force on the applicable date (today without one); raises when none had started."""
        if not versions:
            return None
        first = min(versions, key=lambda v: v.effective_from)
        if applicable is not None:
            target = in_force_on(versions, applicable)
            if target is None:
                raise NoVersionInForce(doc_id, first.title, first.effective_from, applicable, basis)
            if applicable >= target.effective_to:
                # The version that applied on that date exists but is not visible to the caller
                # (its window was closed by a later version this caller can't read): never
                # stand in an older one for it.
                return None
            return target
        if first.effective_from > self.today:
            raise NoVersionInForce(doc_id, first.title, first.effective_from, self.today, basis, today=True)
        return in_force_today(versions, self.today)

    # -- warnings and the applied record ------------------------------------------------------

    def _change_warnings(self, versions: list[VersionInfo], current: VersionInfo, basis) -> list[AnswerWarning]:
        warnings = []
        label = basis_label(basis)
        start = current.effective_from.isoformat()
        if current.effective_from > self.today - timedelta(days=self.recent_change_days):
            prev = previous_version(versions, current)
            if prev is not None:
                prev_window = Window.stored(prev.effective_from, prev.effective_to).format()
                message = (
                    f"{current.title} changed on {start}: version {current.version} replaced version "
                    f"{prev.version} ({prev_window}). If the member's {label} is before "
                    f"{start}, enter it to get the rule that applied."
                )
            else:
                message = (
                    f"{current.title} took effect on {start}; no earlier version exists. If the member's "
                    f"{label} is before {start}, enter it: no version of this policy applied then."
                )
            warnings.append(AnswerWarning(kind="recent_change", message=message, doc_ids=[current.doc_id]))
        scheduled = sorted((v for v in versions if v.effective_from > self.today), key=lambda v: v.effective_from)
        if scheduled:
            nxt = scheduled[0]
            window = Window.stored(current.effective_from, current.effective_to).format()
            warnings.append(AnswerWarning(kind="scheduled_change", doc_ids=[current.doc_id], message=(
                f"{current.title} has a scheduled change: version {nxt.version} takes effect "
                f"{nxt.effective_from.isoformat()}. This answer uses version {current.version} ({window}). "
                f"If the member's {label} is on or after {nxt.effective_from.isoformat()}, enter it to get "
                f"the rule that will apply."
            )))
        return warnings

    def _applied(self, v: VersionInfo) -> dict:
        applicable = self.dates.get(v.date_basis)
        window = Window.stored(v.effective_from, v.effective_to)
        return {
            "doc_id": v.doc_id,
            "title": v.title,
            "version": v.version,
            "effective_from": v.effective_from.isoformat(),
            # The stored (exclusive) end, as in chunk metadata; None when open-ended. Render with
            # Window.stored, or use "window", which already shows the last day in force.
            "effective_to": None if window.last is None else v.effective_to.isoformat(),
            "window": window.format(),
            "date_basis": v.date_basis,
            "applicable_date": applicable.isoformat() if applicable else None,
        }
