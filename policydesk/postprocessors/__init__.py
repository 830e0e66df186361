"""Node postprocessors: version resolution and conflict flagging.

Run order in the pipeline: `VersionResolver` (the version that applied, under the caller's
predicate), then `ConflictFlagger` (a policy in context beats a wiki page or call note that
contradicts it). The deterministic rerank lives with fusion in `policydesk.retrievers`; the
version domain they build on (windows, the version repository, comparison) in
`policydesk.versions`.
"""

from policydesk.postprocessors.conflicts import ConflictFlagger
from policydesk.contract.report import ContextReport
from policydesk.postprocessors.versions import VersionResolver

__all__ = ["VersionResolver", "ConflictFlagger", "ContextReport"]
