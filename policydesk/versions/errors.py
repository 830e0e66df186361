"""Why a version could not be found for a request."""

from __future__ import annotations

from datetime import date

from policydesk.versions.bases import basis_label


class NoVersionInForce(Exception):
    """No version of the policy had taken effect on the applicable date: the request is refused.

    `today` says the date was not entered but read from the clock: the message then says "in
    force today" and tells the rep to enter the member's date if it is on or after the first.
    """

    def __init__(self, doc_id: str, title: str, first_effective_from: date, applicable_date: date, basis: str,
                 *, today: bool = False):
        self.doc_id = doc_id
        self.title = title
        self.first_effective_from = first_effective_from
        self.applicable_date = applicable_date
        self.basis = basis
        self.today = today
        first = first_effective_from.isoformat()
        if today:
            message = (
                f"No version of {title} ({doc_id}) is in force today ({applicable_date.isoformat()}); the first "
                f"version takes effect {first}. If the member's {basis_label(basis)} is on or after {first}, "
                "enter it to get that version."
            )
        else:
            message = (
                f"No version of {title} ({doc_id}) was in force on {applicable_date.isoformat()} "
                f"({basis_label(basis)}); the first version took effect {first}."
            )
        super().__init__(message)

    @property
    def left_out(self) -> str:
        """The same finding, for a policy that was dropped from context rather than refused."""
        first = self.first_effective_from.isoformat()
        when = (f"is in force today ({self.applicable_date.isoformat()})" if self.today
                else f"was in force on {self.applicable_date.isoformat()} ({basis_label(self.basis)})")
        return (f"{self.title} ({self.doc_id}) was left out of this answer: no version {when}; "
                f"its first version {'takes' if self.today else 'took'} effect {first}.")


class NoVisibleVersion(LookupError):
    """The caller can see no version of the document (or it does not exist)."""
