"""The one way a row reaches `audit_log`: every string escaped so Postgres cannot refuse it.

An audit row is the record that something was refused or done; a NUL or a lone surrogate in
a path or a message must not turn it into a database error that records nothing. Callers
screen what a user typed (`policydesk.storage.storable.screened`) before passing it here.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from policydesk.storage.storable import storable, storable_json

# No RETURNING: the app role may append to the audit log but (RLS) not read it back outside a
# reviewer's scope, and Postgres applies the read policy to RETURNING rows.
_AUDIT_INSERT = text("INSERT INTO audit_log (actor, action, target, details) "
                     "VALUES (:actor, :action, :target, CAST(:details AS jsonb))")


def insert_audit(conn: Connection, *, actor: str, action: str, target: str = "",
                 details: dict[str, Any] | None = None) -> None:
    conn.execute(_AUDIT_INSERT, {"actor": storable(actor), "action": storable(action), "target": storable(target),
                                 "details": json.dumps(storable_json(details or {}))})
