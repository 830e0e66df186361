"""Node postprocessors: version resolution, conflict flagging, what-changed, deterministic rerank.

Run order in the pipeline: `VersionResolver` (the version that applied, under the caller's
predicate), then `ConflictFlagger` (a policy in context beats a wiki page or call note that
contradicts it). The deterministic rerank lives with fusion in `policydesk.retrievers`.
"""

from policydesk.postprocessors.conflicts import ConflictFlagger
from policydesk.postprocessors.durations import durations
from policydesk.postprocessors.lookup import VersionInfo, VersionLookup
from policydesk.postprocessors.versions import NoVersionInForce, ResolutionReport, VersionResolver
from policydesk.postprocessors.what_changed import (
    NoVisibleVersion,
    SectionChange,
    VersionComparison,
    compare_versions,
    is_what_changed_question,
    render_comparison,
)
from policydesk.postprocessors.window import display_window, in_force_on, in_force_today
from policydesk.retrievers.fusion import deterministic_rerank

__all__ = [
    "VersionLookup", "VersionInfo", "VersionResolver", "ResolutionReport", "NoVersionInForce",
    "ConflictFlagger", "durations",
    "compare_versions", "render_comparison", "is_what_changed_question", "VersionComparison", "SectionChange",
    "NoVisibleVersion",
    "display_window", "in_force_on", "in_force_today", "deterministic_rerank",
]
