"""The extension point: retrievers and node postprocessors a plan adds (docs/extending.md).

Kept import-light: `ComponentSpec` is read by the settings, `ComponentContext` by extension
code. The registry (`registry.py`) and the per-request stack (`stack.py`) are imported by the
pipeline from their own modules.
"""

from policydesk.extensions.context import ComponentContext
from policydesk.extensions.spec import ComponentSpec

__all__ = ["ComponentContext", "ComponentSpec"]
