"""What a caller may read: the access levels and the sensitivity clearance, as one value.

The value type lives in storage because every scoped read is built from it here (the SQL
predicate, the PGVectorStore filters, the row-level-security settings) and storage imports
nothing above itself. Which role gets which clearance is decided in `policydesk.access`.
"""

from __future__ import annotations

from dataclasses import dataclass

# Ordered from least to most restricted.
ACCESS_LEVELS: tuple[str, ...] = ("public", "internal", "restricted", "compliance")


@dataclass(frozen=True)
class Clearance:
    role: str
    levels: tuple[str, ...]
    sensitive: bool

    def permits(self, access_level: str, sensitive: bool) -> bool:
        """True if a source at this access level (and sensitivity) may be read."""
        return access_level in self.levels and (self.sensitive or not sensitive)

    def checked_levels(self) -> tuple[str, ...]:
        """The levels, refused if any is not a known level or there are none.

        Levels come from code (access.py), never from a request; checked anyway because
        PGVectorStore interpolates filter values into SQL text.
        """
        unknown = set(self.levels) - set(ACCESS_LEVELS)
        if unknown or not self.levels:
            raise ValueError(f"refusing to build a predicate for access levels {self.levels!r}")
        return tuple(self.levels)


# Reads no policy text at all: for transactions that touch only rows scoped by user name
# (traces, feedback). Building a predicate from it is refused.
NO_SOURCES = Clearance(role="none", levels=(), sensitive=False)
