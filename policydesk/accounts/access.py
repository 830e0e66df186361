"""Roles and access levels, in one place.

The role is re-read from the database on every request; this module maps it to
what the caller may see. The `Clearance` value itself lives in storage (every scoped read is
built from it there) and is re-exported here. The per-role topic gate is derived from the
corpus (`policydesk.screening.topics`), not listed here.
"""

from __future__ import annotations

from policydesk.config.constants import ROLES
from policydesk.storage.clearance import ACCESS_LEVELS, Clearance

__all__ = ["ACCESS_LEVELS", "ADMIN_ROLE", "ROLES", "Clearance", "UnknownRoleError", "clearance_for"]

# The role that may use the admin pages (accounts, API tokens, sources and sync). Administering
# accounts is no reason to read restricted policy text, so it reads with the rep's clearance.
ADMIN_ROLE = "admin"

# role -> (access levels it may read, cleared for sensitive sources)
_ROLE_GRANTS: dict[str, tuple[tuple[str, ...], bool]] = {
    "rep": (("public", "internal"), False),
    "supervisor": (("public", "internal", "restricted"), True),
    "compliance": (ACCESS_LEVELS, True),
    ADMIN_ROLE: (("public", "internal"), False),
}


class UnknownRoleError(ValueError):
    """Raised for a role that is not one of ROLES."""


def clearance_for(role: str) -> Clearance:
    try:
        levels, sensitive = _ROLE_GRANTS[role]
    except (KeyError, TypeError):
        raise UnknownRoleError(
            f"Unknown role {role!r}; expected one of: {', '.join(ROLES)}."
        ) from None
    return Clearance(role=role, levels=levels, sensitive=sensitive)
