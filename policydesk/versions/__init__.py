"""Policy versions, the domain: effective-date windows and how they are shown, date bases,
the permission-scoped version repository, and version comparison ("what changed").

Postprocessors, the pipeline, disputes, synthesis and the web pages all read versions through
here; nothing in this package knows about retrieval, prompts or HTTP.

The repository and the comparison build LlamaIndex nodes, so they load on first use (PEP 562):
the terminal client formats windows without importing llama_index.
"""

from importlib import import_module

from policydesk.versions.bases import BASES, BASIS_KEYS, DateBasis, basis_label, basis_title, entered_dates
from policydesk.versions.durations import durations, say
from policydesk.versions.errors import NoVersionInForce, NoVisibleVersion
from policydesk.versions.window import Window, display_window, in_force_on, in_force_today, previous_version

_LAZY = {
    "SectionChange": "compare", "VersionComparison": "compare", "compare_versions": "compare",
    "is_what_changed_question": "compare", "render_comparison": "compare",
    "VersionInfo": "repository", "VersionLookup": "repository", "VersionReads": "repository",
    "row_to_node": "repository",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f"policydesk.versions.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'policydesk.versions' has no attribute {name!r}")


__all__ = [
    "BASIS_KEYS", "BASES", "DateBasis", "basis_label", "basis_title", "entered_dates",
    "durations", "say", "NoVersionInForce", "NoVisibleVersion",
    "Window", "display_window", "in_force_on", "in_force_today", "previous_version", *_LAZY,
]
