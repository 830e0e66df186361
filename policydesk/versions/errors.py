"""Why a version could not be found for a request."""

from __future__ import annotations

from datetime import date

from policydesk.versions.bases import basis_label


class NoVersionInForce(Exception):
    """No version of the policy had taken effect on the applicable date: the request is refused."""

    def __init__(self, doc_id: str, title: str, first_effective_from: date, applicable_date: date, basis: str):
        self.doc_id = doc_id
        self.title = title
        self.first_effective_from = first_effective_from
        self.applicable_date = applicable_date
        self.basis = basis
        super().__init__(
            f"No version of {title} ({doc_id}) was in force on {applicable_date.isoformat()} "
            f"({basis_label(basis)}); the first version took effect {first_effective_from.isoformat()}."
        )


class NoVisibleVersion(LookupError):
    """The caller can see no version of the document (or it does not exist)."""
