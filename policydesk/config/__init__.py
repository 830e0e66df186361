"""Settings: what differs per plan and per deployment, read from POLICYDESK_* environment variables
and an optional .env (`settings.py`), and how a setting names an extension component
(`components.py`). The bottom layer: it imports nothing of policydesk but `storage`'s constants
(role names, memory sizes, the local app password), so every part may read it."""

from policydesk.config.components import RESERVED_NAMES, ComponentSpec
from policydesk.config.settings import (
    DEFAULT_TEXT_CANDIDATES,
    LOCAL_SECRET_KEY,
    OFFLINE_EMBEDDING_MODEL,
    OFFLINE_EMBEDDING_MODEL_INT8,
    Settings,
    UncalibratedThreshold,
    get_settings,
)

__all__ = ["DEFAULT_TEXT_CANDIDATES", "LOCAL_SECRET_KEY", "OFFLINE_EMBEDDING_MODEL", "OFFLINE_EMBEDDING_MODEL_INT8",
           "RESERVED_NAMES", "ComponentSpec", "Settings", "UncalibratedThreshold", "get_settings"]
