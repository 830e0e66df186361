"""Group unanswered questions by meaning, so a policy owner sees the few gaps behind many asks.

Greedy single pass over the local embeddings, in order of how many neighbours each question
has: a question joins the first cluster whose representative is within `threshold` cosine
similarity. Small and deterministic; a few hundred questions a period is the expected size.
A question in which an identifier detector fires is never shown (counted, not quoted).
Without an embedding model, `group_exact` groups only questions asked in the same words.
Each group counts how many of its asks came close to no source (`unclaimed`: no owner was told).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from policydesk.detectors import find_member_identifiers

# MiniLM cosine between paraphrases of one policy question sits around 0.7-0.9; unrelated
# policy questions mostly below 0.5 (measured on the demo golden set's questions).
DEFAULT_THRESHOLD = 0.7


@dataclass
class QuestionCluster:
    representative: str
    size: int
    examples: list[str] = field(default_factory=list)
    withheld: int = 0  # questions counted here but not quoted (an identifier detector fired)
    unclaimed: int = 0  # asks here that came close to no source, so were charged to no owner


def _counts(questions: list[str]) -> Counter:
    return Counter(q.strip() for q in questions if q.strip())


def _cluster(members: list[str], counts: Counter, unclaimed: Counter) -> QuestionCluster:
    """`members` most central first; a question carrying an identifier is counted, never quoted."""
    shown = [q for q in members if not find_member_identifiers(q)]
    return QuestionCluster(
        representative=shown[0] if shown else "(withheld: every question here carried an identifier)",
        size=sum(counts[q] for q in members), examples=shown[1:4], withheld=len(members) - len(shown),
        unclaimed=sum(unclaimed[q] for q in members))


def _ordered(clusters: list[QuestionCluster], top: int | None) -> list[QuestionCluster]:
    return sorted(clusters, key=lambda c: (-c.size, c.representative))[:top]


def group_exact(questions: list[str], *, unclaimed: Counter | None = None,
                top: int | None = None) -> list[QuestionCluster]:
    """One group per wording: what the report shows when no embedding model is at hand."""
    counts = _counts(questions)
    return _ordered([_cluster([q], counts, unclaimed or Counter()) for q in counts], top)


def cluster_questions(questions: list[str], embed_model, *, threshold: float = DEFAULT_THRESHOLD,
                      unclaimed: Counter | None = None, top: int | None = None) -> list[QuestionCluster]:
    """Every group (or the `top` largest), largest first. `unclaimed`: question -> asks charged to no owner."""
    counts = _counts(questions)
    unique = list(counts)
    if not unique:
        return []
    vectors = np.asarray(embed_model.get_text_embedding_batch(unique), dtype=float)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)
    sims = vectors @ vectors.T
    order = sorted(range(len(unique)), key=lambda i: (-int((sims[i] >= threshold).sum()), unique[i]))
    assigned: dict[int, int] = {}
    heads: list[int] = []
    for i in order:
        home = next((h for h in heads if sims[i, h] >= threshold), None)
        if home is None:
            heads.append(i)
            home = i
        assigned[i] = home
    clusters = []
    for h in heads:
        members = sorted((i for i, head in assigned.items() if head == h), key=lambda i: -sims[i, h])
        clusters.append(_cluster([unique[i] for i in members], counts, unclaimed or Counter()))
    return _ordered(clusters, top)
