"""The extension point: retrievers and node postprocessors a plan adds (docs/extending.md).

Kept import-light: `ComponentContext` is read by extension code, and `ComponentSpec` (the
setting's shape, which lives in `policydesk.config`) is re-exported for it. The registry (`registry.py`) and the per-request stack (`stack.py`) are imported by the
pipeline from their own modules.
"""

from policydesk.extensions.context import ComponentContext
from policydesk.config.components import ComponentSpec

__all__ = ["ComponentContext", "ComponentSpec"]
