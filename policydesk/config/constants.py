"""Names the settings are checked against, defined here so that `config` imports nothing else of
policydesk and every part may read it: the role names, the shape of a Postgres memory size, and
the app login's password for local runs (start-up refuses it outside them)."""

from __future__ import annotations

import re

# The role names, ordered from least to most power; single sign-on gives a user in several mapped
# groups the last of their roles (accounts/sso.py). `admin` is last because it may grant any role.
# Which clearance each role gets is decided in `policydesk.accounts.access`.
ROLES: tuple[str, ...] = ("rep", "supervisor", "compliance", "admin")

# A memory size as Postgres settings are written: 512MB, 4GB.
MEMORY_SIZE = re.compile(r"^[1-9][0-9]*(kB|MB|GB|TB)$")

# The application role's password for local runs on the embedded Postgres.
LOCAL_APP_DB_PASSWORD = "policydesk-app-local"
