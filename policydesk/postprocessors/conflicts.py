"""Flag wiki pages and call notes that contradict a policy in context; the policy wins.

A wiki or call-note chunk contradicts a policy chunk when it names the policy in
`related_policies` and states, as a rule, a duration for the same kind of rule that the policy
chunk states differently. Durations are read as people write them ("ninety (90) days",
"6 months", "one year", "48 hrs", business vs calendar days) and compared by length of time,
exactly where the units convert and by range otherwise (`policydesk.versions.durations`);
the kind of rule comes from the words around each duration and its section heading
(`policydesk.versions.rulekind`). The warning names only the values that differ.

Guards against false positives:
- only the same kind of rule is compared: a note's escalation "within 30 calendar days" is
  not compared with the policy's decision "within 14 calendar days";
- a duration told as a story ("two days earlier") or not stated as a rule ("mailed the claim 2
  days after the visit") is not compared;
- durations that can't be told apart ("3 months" against "90 days"; business against calendar
  days) are not a contradiction;
- a value that any related policy version in context states for the same kind of rule, in any
  of its sections (the wiki's "180 days" against POL-CORR when POL-TF version 1 applied), is
  not a contradiction. Sections are taken from the context and, when a `lookup` is given, from
  the whole applied version (read under the caller's predicate).

A note that quotes a stale value next to the current one (a call note: "the caller said 180
days ... the rep explained 90 days") is flagged: it puts the stale number in context, and the
policy is there to answer.
"""

from __future__ import annotations

import llama_index.core.instrumentation as instrument

from dataclasses import dataclass
from typing import Literal

from llama_index.core.bridge.pydantic import Field
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from policydesk.contract.answer import AnswerWarning
from policydesk.contract.report import ContextReport, Processed
from policydesk.storage.chunk_ids import doc_id_of
from policydesk.storage.clearance import Clearance
from policydesk.versions import VersionLookup
from policydesk.versions.durations import Duration, compare, parse_durations
from policydesk.versions.rulekind import heading_terms, reads_as_rule, rule_terms, same_kind

dispatcher = instrument.get_dispatcher(__name__)


@dataclass(frozen=True)
class StatedRule:
    duration: Duration
    kind: frozenset[str]


def stated_rules(node, *, as_rule_only: bool) -> list[StatedRule]:
    """Each duration a chunk states, with the kind of rule it belongs to."""
    text = node.get_content()
    heading = heading_terms(node.metadata.get("section"), node.metadata.get("title"))
    return [StatedRule(d, rule_terms(text, d, heading)) for d in parse_durations(text)
            if not d.narrative and (not as_rule_only or reads_as_rule(text, d))]


def _unique(values) -> list[str]:
    return list(dict.fromkeys(str(v) for v in values))


NOTE_TYPES = {"wiki": "wiki page", "call_note": "call note"}


class ConflictFlagger(BaseNodePostprocessor):
    """Run after VersionResolver, so the policy chunks in context are the versions that applied."""

    action: Literal["drop", "demote"] = Field(
        default="drop", description="drop the contradicting note, or keep it after every other source"
    )
    lookup: VersionLookup | None = Field(default=None, description="Reads the other sections of a policy version.")
    clearance: Clearance | None = Field(default=None, description="What the caller may read, for the lookup.")

    @classmethod
    def class_name(cls) -> str:
        return "ConflictFlagger"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return self.flag(nodes).nodes

    @dispatcher.span
    def flag(self, nodes: list[NodeWithScore]) -> Processed:
        """The nodes with contradicting notes dropped or demoted, and the conflicts found."""
        report = ContextReport()
        policies = [n for n in nodes if n.node.metadata.get("source_type") == "policy"]
        known = self._policy_rules(policies)
        flagged: dict[str, dict] = {}
        for note in nodes:
            meta = note.node.metadata
            if meta.get("source_type") not in NOTE_TYPES or note.node.node_id in flagged:
                continue
            related = set(meta.get("related_policies") or [])
            rules = [(chunk_id, r) for (doc_id, _v), by_chunk in known.items() if doc_id in related
                     for chunk_id, r in by_chunk]
            differing = self._differing(stated_rules(note.node, as_rule_only=True), rules)
            for policy in policies:
                pairs = differing.get(policy.node.node_id)
                if not pairs:
                    continue
                conflict = self._conflict(note, policy, pairs)
                conflict["action"] = self.action
                report.conflicts.append(conflict)
                if note.node.node_id not in flagged:
                    flagged[note.node.node_id] = conflict
                    report.warnings.append(AnswerWarning(kind="conflict", message=conflict["message"], doc_ids=[
                        doc_id_of(note.node), conflict["policy_doc_id"]]))
        if not flagged:
            return Processed(nodes, report)
        if self.action == "drop":
            return Processed([n for n in nodes if n.node.node_id not in flagged], report)
        kept = [n for n in nodes if n.node.node_id not in flagged]
        demoted = [n for n in nodes if n.node.node_id in flagged]
        for n in demoted:
            n.node.metadata["conflicts_with"] = flagged[n.node.node_id]["policy_chunk_id"]
        return Processed(kept + demoted, report)

    @staticmethod
    def _differing(stated: list[StatedRule], rules: list[tuple[str, StatedRule]]) -> dict[str, list]:
        """Per policy chunk: (note duration, policy duration) pairs for rules the note states differently.

        A note rule differs when every rule of the same kind in the related policies states a
        different length of time. It is reported against the ones that share the most words
        with it, in the same unit where there are some (the filing limit, not the decision time
        of the same policy).
        """
        out: dict[str, list] = {}
        for rule in stated:
            same = [(chunk_id, r) for chunk_id, r in rules if same_kind(rule.kind, r.kind)]
            if not same or any(compare(rule.duration, r.duration) != "different" for _c, r in same):
                continue  # no rule of this kind, or one states the same length (or can't be told apart)
            rank = {id(r): (len(rule.kind & r.kind), r.duration.unit == rule.duration.unit) for _c, r in same}
            top = max(rank.values())
            for chunk_id, r in same:
                if rank[id(r)] == top:
                    out.setdefault(chunk_id, []).append((rule.duration, r.duration))
        return out

    @staticmethod
    def _conflict(note: NodeWithScore, policy: NodeWithScore, pairs: list) -> dict:
        pmeta, nmeta = policy.node.metadata, note.node.metadata
        values, policy_values = _unique(a for a, _b in pairs), _unique(b for _a, b in pairs)
        kind = NOTE_TYPES[nmeta["source_type"]]
        message = (
            f"The {kind} '{nmeta.get('title')}' says {' and '.join(values)}, but {pmeta.get('title')} "
            f"version {pmeta.get('version')} says {' and '.join(policy_values)}; the policy wins."
        )
        return {
            "note_chunk_id": note.node.node_id,
            "note_title": nmeta.get("title"),
            "note_source_type": nmeta["source_type"],
            "note_values": values,
            "policy_chunk_id": policy.node.node_id,
            "policy_doc_id": doc_id_of(policy.node),
            "policy_title": pmeta.get("title"),
            "policy_version": pmeta.get("version"),
            "policy_values": policy_values,
            "unit": pairs[0][0].unit,
            "message": message,
        }

    def _policy_rules(self, policies: list[NodeWithScore]) -> dict[tuple, list[tuple[str, StatedRule]]]:
        """Every rule duration each policy version in context states, in any of its sections.

        A rule read from a section that is not in context is filed under the version's first
        chunk in context, so a conflict is always reported against a chunk the reader can see.
        """
        chunks: dict[tuple, dict[str, object]] = {}
        for p in policies:
            chunks.setdefault((doc_id_of(p.node), p.node.metadata.get("version")), {})[p.node.node_id] = p.node
        in_context = {n.node.node_id for n in policies}
        if self.lookup is not None and self.clearance is not None:
            stored = self.lookup.sections_of(list(chunks), self.clearance)  # one read for every version
            for doc_id, version in list(chunks):
                for node in stored.get((doc_id, int(version)), []):
                    chunks[(doc_id, version)].setdefault(node.node_id, node)
        known: dict[tuple, list[tuple[str, StatedRule]]] = {}
        for key, by_id in chunks.items():
            first = next(i for i in by_id if i in in_context)
            known[key] = [(chunk_id if chunk_id in in_context else first, r)
                          for chunk_id, node in by_id.items() for r in stated_rules(node, as_rule_only=False)]
        return known
