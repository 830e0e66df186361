"""'What changed in the timely filing policy?' answered from the versions themselves.

The comparison is computed in code, section by section (section ids are stable across
versions): sections added, removed and changed, and for a changed section the durations
before and after (180 days -> 90 days) and the wording added or removed. Both versions are read
through `VersionLookup`, under the caller's predicate, and both are cited with their windows.

Which two versions (when no dates are given): the version in force `today` and the one it
replaced. If fewer than two versions have taken effect by `today` (POL-PA: version 2 is
scheduled for 2027), the two newest versions are compared instead, and the scheduled one is
shown as "takes effect YYYY-MM-DD". Without `today`, the two newest versions.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import date

from llama_index.core.schema import TextNode

from policydesk.storage.clearance import Clearance
from policydesk.versions.durations import durations, say
from policydesk.versions.errors import NoVersionInForce, NoVisibleVersion
from policydesk.versions.repository import VersionInfo, VersionLookup
from policydesk.versions.window import Window, in_force_on, in_force_today, previous_version

_WHAT_CHANGED = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\bwhat\s+(?:has\s+|have\s+)?changed\b",
    r"\bwhat\s+(?:changes?|updates?)\s+(?:were|was|have\s+been|has\s+been)\s+made\b",
    r"\bwhat(?:'s|\u2019s|\s+is|\s+are)\s+(?:different|new)\b",
    r"\bwhat(?:'s|\u2019s|\s+is|\s+are)\s+the\s+differences?\b",
    r"\bhow\s+(?:did|has|have)\b.{0,80}?\bchange[ds]?\b",
    r"\bhow\s+(?:does|do|did)\b.{0,80}?\bdiffer\b",
    r"\bcompare\b.{0,60}?\bversions?\b",
    r"\bdifferences?\s+between\b.{0,60}?\bversions?\b",
    r"\bversion\s*\d+\s+(?:vs\.?|versus|and)\s+(?:version\s*)?\d+\b",
    r"\bchanges?\s+(?:in|to)\s+the\b.{0,60}?\bpolicy\b.{0,20}?(?:\?|$)",
))


def is_what_changed_question(question: str) -> bool:
    return any(p.search(question) for p in _WHAT_CHANGED)


@dataclass
class SectionChange:
    section_id: str
    section: str
    old: TextNode | None  # None when the section was added
    new: TextNode | None  # None when the section was removed
    durations_before: list[str] = field(default_factory=list)
    durations_after: list[str] = field(default_factory=list)
    added_text: list[str] = field(default_factory=list)
    removed_text: list[str] = field(default_factory=list)


@dataclass
class VersionComparison:
    doc_id: str
    title: str
    old: VersionInfo | None  # None when the policy has a single version
    new: VersionInfo
    today: date | None = None
    added: list[SectionChange] = field(default_factory=list)
    removed: list[SectionChange] = field(default_factory=list)
    changed: list[SectionChange] = field(default_factory=list)
    unchanged: list[SectionChange] = field(default_factory=list)


def _words(text: str) -> list[str]:
    return text.split()


def _normal(text: str) -> str:
    return " ".join(text.split())


def _pick(versions: list[VersionInfo], between, today: date | None) -> tuple[VersionInfo | None, VersionInfo]:
    first, second = between
    for d in (first, second):
        if d is not None and in_force_on(versions, d) is None:
            v0 = versions[0]
            raise NoVersionInForce(v0.doc_id, v0.title, v0.effective_from, d, v0.date_basis)
    if first is not None and second is not None:
        a, b = in_force_on(versions, first), in_force_on(versions, second)
        return (a, b) if a.effective_from <= b.effective_from else (b, a)
    if second is not None:
        b = in_force_on(versions, second)
        return previous_version(versions, b), b
    current = in_force_today(versions, today) if today is not None else None
    if current is not None and previous_version(versions, current) is not None:
        newer = current
    else:
        newer = versions[-1]  # fewer than two have taken effect: include the scheduled one
    if first is not None:
        a = in_force_on(versions, first)
        if a.effective_from < newer.effective_from:
            return a, newer
        return a, min((v for v in versions if v.effective_from > a.effective_from),
                      key=lambda v: v.effective_from, default=a)
    return previous_version(versions, newer), newer


def _diff(old: TextNode, new: TextNode, change: SectionChange) -> None:
    before, after = durations(old.get_content()), durations(new.get_content())
    for unit in list(dict.fromkeys([*before, *after])):
        b, a = before.get(unit, []), after.get(unit, [])
        if b != a:
            change.durations_before.append(say(b, unit) if b else "none")
            change.durations_after.append(say(a, unit) if a else "none")
    ow, nw = _words(old.get_content()), _words(new.get_content())
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=ow, b=nw, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            change.removed_text.append(" ".join(ow[i1:i2]))
        if op in ("insert", "replace"):
            change.added_text.append(" ".join(nw[j1:j2]))


def compare_versions(lookup: VersionLookup, doc_id: str, clearance: Clearance,
                     between: tuple[date | None, date | None] = (None, None), *,
                     today: date | None = None) -> VersionComparison:
    """Compare the versions in force on the two dates (see the module docstring for defaults)."""
    versions = lookup.versions([doc_id], clearance).get(doc_id, [])
    if not versions:
        raise NoVisibleVersion(f"no visible version of {doc_id}")
    versions = sorted(versions, key=lambda v: v.effective_from)
    old, new = _pick(versions, between, today)
    if old is not None and old.version == new.version:
        old = None
    comparison = VersionComparison(doc_id, new.title, old, new, today)
    new_sections = {n.metadata["section_id"]: n for n in lookup.sections(doc_id, new.version, clearance)}
    if old is None:
        comparison.unchanged = [SectionChange(s, n.metadata.get("section", s), n, n) for s, n in new_sections.items()]
        return comparison
    old_sections = {n.metadata["section_id"]: n for n in lookup.sections(doc_id, old.version, clearance)}
    for sid, node in new_sections.items():
        title = node.metadata.get("section", sid)
        before = old_sections.get(sid)
        if before is None:
            comparison.added.append(SectionChange(sid, title, None, node))
        elif _normal(before.get_content()) == _normal(node.get_content()):
            comparison.unchanged.append(SectionChange(sid, title, before, node))
        else:
            change = SectionChange(sid, title, before, node)
            _diff(before, node, change)
            comparison.changed.append(change)
    for sid, node in old_sections.items():
        if sid not in new_sections:
            comparison.removed.append(SectionChange(sid, node.metadata.get("section", sid), node, None))
    return comparison


def _quote(words: str, limit: int = 24) -> str:
    parts = words.split()
    more = " \u2026" if len(parts) > limit else ""
    return "\u201c" + " ".join(parts[:limit]) + more + "\u201d"


def _describe(change: SectionChange) -> str:
    bits = [f"{b} \u2192 {a}" for b, a in zip(change.durations_before, change.durations_after)]
    if not bits:
        added = [t for t in change.added_text if t]
        removed = [t for t in change.removed_text if t]
        if added:
            bits.append("added " + "; ".join(_quote(t) for t in added))
        if removed:
            bits.append("removed " + "; ".join(_quote(t) for t in removed))
    elif any(len(t.split()) > 12 for t in change.added_text):
        bits.append("new text added")
    return f"{change.section}: {', '.join(bits) or 'wording changed'}."


def render_comparison(c: VersionComparison) -> tuple[str, list[TextNode]]:
    """Answer text citing both versions with their windows, and the nodes it cites."""
    new_window = Window.stored(c.new.effective_from, c.new.effective_to).format(today=c.today)
    if c.old is None:
        nodes = [s.new for s in c.unchanged[:1]]
        return (f"{c.title} has only one version: version {c.new.version} ({new_window}). "
                "There is no earlier version to compare it with."), nodes
    old_window = Window.stored(c.old.effective_from, c.old.effective_to).format(today=c.today)
    lines = [f"{c.title}: version {c.old.version} ({old_window}) \u2192 version {c.new.version} ({new_window})."]
    nodes: list[TextNode] = []
    for change in c.changed:
        lines.append(_describe(change))
        nodes.extend([change.old, change.new])
    for change in c.added:
        lines.append(f"{change.section}: section added in version {c.new.version}.")
        nodes.append(change.new)
    for change in c.removed:
        lines.append(f"{change.section}: section removed in version {c.new.version}.")
        nodes.append(change.old)
    if not (c.changed or c.added or c.removed):
        lines.append("The text of every section is the same in both versions.")
        nodes.extend(n for s in c.unchanged[:1] for n in (s.old, s.new))
    elif c.unchanged:
        lines.append("Unchanged: " + ", ".join(s.section for s in c.unchanged) + ".")
    return " ".join(lines), nodes
