"""The sentence stating the size of a change the question asks, over a more similar neighbour.

"Can the decision be extended, and by how many days?" is closer in meaning to a sentence about
extending something else ("a request to extend a stay is decided within 24 hours") than to the
one stating the extension ("may be extended once by up to 14 days"): a question asking *by how
much* wants the sentence that states a change *by* an amount. English only; no corpus words.
"""

from __future__ import annotations

import re

CHANGE_SIZE_BONUS = 0.08

_ASKS_SIZE = re.compile(r"\bby\s+how\s+(?:many|much|long)\b", re.IGNORECASE)
_STATES_SIZE = re.compile(r"\bby\s+(?:up\s+to\s+|at\s+least\s+|another\s+|an?\s+(?:additional|extra)\s+|no\s+more\s+than\s+)?"
                          r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|fourteen|fifteen|thirty)\b",
                          re.IGNORECASE)


def asks_change_size(part: str) -> bool:
    return bool(_ASKS_SIZE.search(part))


def states_change_size(text: str) -> bool:
    return bool(_STATES_SIZE.search(text))
