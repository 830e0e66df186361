"""Roles, access levels and the per-role topic gate, in one place.

The role is re-read from the database on every request; this module maps it to
what the caller may see. The `Clearance` value itself lives in storage (every scoped read is
built from it there) and is re-exported here.
"""

from __future__ import annotations

import re

from policydesk.storage.clearance import ACCESS_LEVELS, Clearance

__all__ = ["ACCESS_LEVELS", "ROLES", "Clearance", "UnknownRoleError", "clearance_for", "topic_denied",
           "RESTRICTED_TOPICS"]

ROLES: tuple[str, ...] = ("rep", "supervisor", "compliance")

# role -> (access levels it may read, cleared for sensitive sources)
_ROLE_GRANTS: dict[str, tuple[tuple[str, ...], bool]] = {
    "rep": (("public", "internal"), False),
    "supervisor": (("public", "internal", "restricted"), True),
    "compliance": (ACCESS_LEVELS, True),
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


def _patterns(*sources: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(s, re.IGNORECASE) for s in sources)


# topic -> (access level the role must hold, patterns). A question that matches
# a topic the role lacks is refused before retrieval with the generic
# out-of-scope message, so the refusal does not reveal that the topic exists.
RESTRICTED_TOPICS: dict[str, tuple[str, tuple[re.Pattern[str], ...]]] = {
    "fraud_investigation": ("restricted", _patterns(
        r"\bSIU\b",
        r"\bspecial investigations?\s+unit\b",
        r"\bfraud\s+referrals?\b",
        r"\bfraud\s+investigat(?:ion|ions|or|ors|e|ing)\b",
        r"\bcase\s+scoring\s+thresholds?\b",
    )),
    "contract_rates": ("restricted", _patterns(
        r"\bprovider\s+contract(?:ed)?\s+rates?\b",
        r"\bcontract(?:ed)?\s+rates?\s+(?:for|with|paid to)\b",
        r"\brate\s+schedules?\b",
        r"\bfee\s+schedule\s+percent(?:age)?s?\b",
        r"\breimbursement\s+rates?\s+(?:for|with|paid\s+to)\s+"
        r"(?:provider|dr\b|doctor|hospital|clinic|facility|group|practice)",
        r"\b(?:percent|percentage|%)\s+of\s+medicare\b",
    )),
    "regulatory_reporting": ("compliance", _patterns(
        r"\bregulatory\s+complaint\s+report(?:ing|s)?\b",
        r"\breport\w*\b[^.?!]{0,60}?\b(?:state\s+regulators?|"
        r"(?:state\s+)?department\s+of\s+insurance)\b",
    )),
    "call_audit": ("compliance", _patterns(
        r"\bcall\s+quality\s+audits?\b",
        r"\bdispute\s+review\s+procedures?\b",
        r"\bcompliance\s+audits?\b",
    )),
    "case_management_escalation": ("restricted", _patterns(
        r"\bsupervisor\s+escalation\s+(?:procedures?|process(?:es)?|path)\b",
        r"\bcase\s+management\s+escalations?\b",
    )),
}


def topic_denied(clearance: Clearance, question: str) -> str | None:
    """Name of the first topic gate that blocks this question for this clearance."""
    for topic, (level, patterns) in RESTRICTED_TOPICS.items():
        if level in clearance.levels:
            continue
        if any(p.search(question) for p in patterns):
            return topic
    return None
