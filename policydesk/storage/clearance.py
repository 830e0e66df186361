"""What a caller may read: the access levels and the sensitivity clearance, as one value.

The value type lives in storage because every scoped read is built from it here (the SQL
predicate, the PGVectorStore filters, the row-level-security settings) and storage imports
nothing above itself. Which role gets which clearance is decided in `policydesk.accounts.access`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

# Ordered from least to most restricted.
ACCESS_LEVELS: tuple[str, ...] = ("public", "internal", "restricted", "compliance")
# The shape of a product (line of business) name. Which names exist is data: the ones the
# corpus's sources name (`sources.product_names`), never a list in code.
PRODUCT_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclass(frozen=True)
class Clearance:
    role: str
    levels: tuple[str, ...]
    sensitive: bool
    # The product the asker chose: a second filter-first attribute that travels with
    # the clearance into every scoped read. None = no product chosen (every product's sources).
    line_of_business: str | None = None

    def permits(self, access_level: str, sensitive: bool, line_of_business=None) -> bool:
        """True if a source at this access level (and sensitivity, and for these products) may be read."""
        return (access_level in self.levels and (self.sensitive or not sensitive)
                and self.applies_to(line_of_business))

    def applies_to(self, products) -> bool:
        """A source for these products (None or empty = every product) is in this clearance's product scope."""
        return self.line_of_business is None or not products or self.line_of_business in products

    def for_product(self, line_of_business: str | None) -> "Clearance":
        """The same clearance, limited to one product's sources (and those for every product)."""
        return replace(self, line_of_business=line_of_business)

    def checked_product(self) -> str | None:
        """The product, refused unless it has a product name's shape (it is rendered into SQL)."""
        p = self.line_of_business
        if p is not None and not PRODUCT_NAME.fullmatch(p):
            raise ValueError(f"refusing to build a predicate for line of business {p!r}")
        return p

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
