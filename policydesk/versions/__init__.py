"""Policy versions, the domain: effective-date windows and how they are shown, date bases,
the permission-scoped version repository, and version comparison ("what changed").

Postprocessors, the pipeline, disputes, synthesis and the web pages all read versions through
here; nothing in this package knows about retrieval, prompts or HTTP.
"""

from policydesk.versions.bases import BASIS_KEYS, BASES, DateBasis, basis_label, basis_title
from policydesk.versions.compare import (
    SectionChange,
    VersionComparison,
    compare_versions,
    is_what_changed_question,
    render_comparison,
)
from policydesk.versions.durations import durations, say
from policydesk.versions.errors import NoVersionInForce, NoVisibleVersion
from policydesk.versions.repository import VersionInfo, VersionLookup, row_to_node
from policydesk.versions.window import Window, display_window, in_force_on, in_force_today, previous_version

__all__ = [
    "BASIS_KEYS", "BASES", "DateBasis", "basis_label", "basis_title",
    "SectionChange", "VersionComparison", "compare_versions", "is_what_changed_question", "render_comparison",
    "durations", "say", "NoVersionInForce", "NoVisibleVersion",
    "VersionInfo", "VersionLookup", "row_to_node",
    "Window", "display_window", "in_force_on", "in_force_today", "previous_version",
]
