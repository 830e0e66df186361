"""Flag wiki pages and call notes that contradict a policy in context; the policy wins.

A wiki or call-note chunk contradicts a policy chunk when it names the policy in
`related_policies` and states a duration in a unit the policy chunk also uses ("N days",
"N calendar days", "N business days", "N hours") that the policy does not state. The warning
names only those values.

Guards against false positives:
- only a shared unit is compared ("30 calendar days" is never compared with "60 days");
- a note whose values are all present in the policy chunk is consistent;
- a value that any related policy version in context states, in any of its sections (the
  wiki's "150 days" for corrected claims against POL-TF's "90 days"; its "180 days" against
  POL-CORR when POL-TF version 1 applied), is not a contradiction. Sections are taken from the
  context and, when a `lookup` is given, from the whole applied version (read under the
  caller's predicate).

A note that quotes a stale value next to the current one (a call note: "the caller said 180
days ... the rep explained 90 days") is flagged: it puts the stale number in context, and the
policy is there to answer. Known limit: a value belonging to another policy the note relates
to (CN-06's "30 calendar days" escalation rule next to POL-PA's 14) is flagged too.
"""

from __future__ import annotations

from typing import Literal

from llama_index.core.bridge.pydantic import Field
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from policydesk.answer import AnswerWarning
from policydesk.postprocessors.report import ContextReport
from policydesk.postprocessors.versions import doc_id_of
from policydesk.storage.clearance import Clearance
from policydesk.versions import VersionLookup, durations, say

NOTE_TYPES = {"wiki": "wiki page", "call_note": "call note"}


class ConflictFlagger(BaseNodePostprocessor):
    """Run after VersionResolver, so the policy chunks in context are the versions that applied."""

    action: Literal["drop", "demote"] = Field(
        default="drop", description="drop the contradicting note, or keep it after every other source"
    )
    lookup: VersionLookup | None = Field(default=None, description="Reads the other sections of a policy version.")
    clearance: Clearance | None = Field(default=None, description="What the caller may read, for the lookup.")

    report: ContextReport | None = Field(
        default=None, exclude=True, description="Where conflicts and their warnings go; None keeps only node metadata.")

    @classmethod
    def class_name(cls) -> str:
        return "ConflictFlagger"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        report = self.report if self.report is not None else ContextReport()
        policies = [n for n in nodes if n.node.metadata.get("source_type") == "policy"]
        known = self._policy_values(policies)
        flagged: dict[str, dict] = {}
        for note in nodes:
            meta = note.node.metadata
            if meta.get("source_type") not in NOTE_TYPES or note.node.node_id in flagged:
                continue
            related = set(meta.get("related_policies") or [])
            stated = durations(note.node.get_content())
            supported = self._supported(related, known)
            for policy in policies:
                if doc_id_of(policy.node) not in related:
                    continue
                conflict = self._compare(note, stated, policy, supported)
                if conflict is not None:
                    conflict["action"] = self.action
                    report.conflicts.append(conflict)
                    if note.node.node_id not in flagged:
                        flagged[note.node.node_id] = conflict
                        report.warnings.append(AnswerWarning(kind="conflict", message=conflict["message"]))
        if not flagged:
            return nodes
        if self.action == "drop":
            return [n for n in nodes if n.node.node_id not in flagged]
        kept = [n for n in nodes if n.node.node_id not in flagged]
        demoted = [n for n in nodes if n.node.node_id in flagged]
        for n in demoted:
            n.node.metadata["conflicts_with"] = flagged[n.node.node_id]["policy_chunk_id"]
        return kept + demoted

    @staticmethod
    def _supported(related: set[str], known: dict) -> dict[str, set[int]]:
        """Values any related policy version in context states, per unit."""
        merged: dict[str, set[int]] = {}
        for (doc_id, _version), by_unit in known.items():
            if doc_id in related:
                for unit, values in by_unit.items():
                    merged.setdefault(unit, set()).update(values)
        return merged

    def _compare(self, note: NodeWithScore, stated: dict, policy: NodeWithScore, supported: dict) -> dict | None:
        pmeta = policy.node.metadata
        policy_values = durations(policy.node.get_content())
        for unit, values in stated.items():
            theirs = policy_values.get(unit)
            if not theirs:
                continue  # no shared unit: nothing to compare
            extra = [v for v in values if v not in theirs and v not in supported.get(unit, ())]
            if not extra:
                # Every value is stated by a related policy version in context: the wiki's
                # "180 days" for timely filing is not contradicted by POL-CORR's "150 days".
                continue
            values = extra
            nmeta = note.node.metadata
            kind = NOTE_TYPES[nmeta["source_type"]]
            message = (
                f"The {kind} '{nmeta.get('title')}' says {say(values, unit)}, but {pmeta.get('title')} "
                f"version {pmeta.get('version')} says {say(theirs, unit)}; the policy wins."
            )
            return {
                "note_chunk_id": note.node.node_id,
                "note_title": nmeta.get("title"),
                "note_source_type": nmeta["source_type"],
                "note_values": [f"{v} {unit}" for v in values],
                "policy_chunk_id": policy.node.node_id,
                "policy_doc_id": doc_id_of(policy.node),
                "policy_title": pmeta.get("title"),
                "policy_version": pmeta.get("version"),
                "policy_values": [f"{v} {unit}" for v in theirs],
                "unit": unit,
                "message": message,
            }
        return None

    def _policy_values(self, policies: list[NodeWithScore]) -> dict[tuple, dict[str, set[int]]]:
        """Every duration each policy version in context states, in any of its sections."""
        texts: dict[tuple, list[str]] = {}
        for p in policies:
            texts.setdefault((doc_id_of(p.node), p.node.metadata.get("version")), []).append(p.node.get_content())
        if self.lookup is not None and self.clearance is not None:
            for doc_id, version in list(texts):
                for node in self.lookup.sections(doc_id, version, self.clearance):
                    texts[(doc_id, version)].append(node.get_content())
        known: dict[tuple, dict[str, set[int]]] = {}
        for key, chunks in texts.items():
            merged: dict[str, set[int]] = {}
            for t in chunks:
                for unit, values in durations(t).items():
                    merged.setdefault(unit, set()).update(values)
            known[key] = merged
        return known
