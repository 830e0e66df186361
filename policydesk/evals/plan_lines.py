"""The labelled set of lines as plans write them, for ingest screening: figures and the split.

Each item is one line of a source (`policy`, `wiki` or `call_note`) labelled `plan` (a plan's
or provider's own number: phone and fax lines, PO boxes and addresses, NPIs and tax ids, form and
field numbers, regulation citations, procedure and diagnosis codes, bulletin numbers) or `member`
(a member's identifier in the same shapes: a callback number, an ID, an SSN, a date of birth, an
MRN, a home address). A line is *refused* when ingest screening (`screen_blocks`) reports any
finding for it as a block of that source type; a `member` line should be refused, a `plan` line
should not.

The dev/test side of an item is decided by its text alone, before any tuning:
sha256(SPLIT_SALT + ":" + text), first 8 hex digits as a number, modulo 10 below 4 is test.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict

from policydesk.ingest.layout import Block
from policydesk.ingest.screening import screen_blocks

DATA_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "plan_lines"
SPLIT_SALT = "policydesk/plan-lines-split"
TEST_SHARE = 4  # of 10


class LabelledLine(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    source: Literal["policy", "wiki", "call_note"]
    label: Literal["plan", "member"]
    shape: str


def split_of(text: str) -> str:
    digest = hashlib.sha256(f"{SPLIT_SALT}:{text}".encode()).hexdigest()
    return "test" if int(digest[:8], 16) % 10 < TEST_SHARE else "dev"


def load_lines(split_or_path: str | Path) -> list[LabelledLine]:
    path = DATA_DIR / f"{split_or_path}.yaml" if str(split_or_path) in {"dev", "test"} else Path(split_or_path)
    with open(path, encoding="utf-8") as fh:
        return [LabelledLine(**item) for item in yaml.safe_load(fh)["lines"]]


def is_refused(line: LabelledLine) -> bool:
    return bool(screen_blocks([Block(line.text, "line 1")], line.source))


@dataclass
class LinesReport:
    counts: Counter = field(default_factory=Counter)  # (label, refused) -> n
    by_shape: Counter = field(default_factory=Counter)  # (label, shape, correct) -> n
    misses: list[LabelledLine] = field(default_factory=list)

    def _n(self, label: str, refused: bool) -> int:
        return self.counts[(label, refused)]

    @property
    def precision(self) -> float:
        """Of the lines refused, the share that were member identifiers."""
        refused = self._n("member", True) + self._n("plan", True)
        return self._n("member", True) / refused if refused else 1.0

    @property
    def recall(self) -> float:
        """Of the member-identifier lines, the share refused."""
        members = self._n("member", True) + self._n("member", False)
        return self._n("member", True) / members if members else 1.0

    @property
    def plan_pass_rate(self) -> float:
        plan = self._n("plan", True) + self._n("plan", False)
        return self._n("plan", False) / plan if plan else 1.0


def evaluate_lines(lines: list[LabelledLine]) -> LinesReport:
    report = LinesReport()
    for line in lines:
        refused = is_refused(line)
        correct = refused == (line.label == "member")
        report.counts[(line.label, refused)] += 1
        report.by_shape[(line.label, line.shape, correct)] += 1
        if not correct:
            report.misses.append(line)
    return report


def format_lines_report(report: LinesReport, title: str) -> str:
    c = report.counts
    rows = [title,
            f"member lines: {c[('member', True)]} refused, {c[('member', False)]} passed",
            f"plan lines:   {c[('plan', False)]} passed, {c[('plan', True)]} refused",
            f"precision {report.precision:.3f}  recall {report.recall:.3f}  plan lines passed {report.plan_pass_rate:.3f}",
            "label   shape        right/all"]
    shapes = sorted({(label, shape) for label, shape, _ in report.by_shape})
    for label, shape in shapes:
        right, wrong = report.by_shape[(label, shape, True)], report.by_shape[(label, shape, False)]
        rows.append(f"{label:<7} {shape:<12} {right}/{right + wrong}")
    return "\n".join(rows)
