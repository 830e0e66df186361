"""Group unanswered questions by meaning, so a policy owner sees the few gaps behind many asks.

Greedy single pass over the local embeddings, in order of how many neighbours each question
has: a question joins the first cluster whose representative is within `threshold` cosine
similarity. Small and deterministic; a few hundred questions a period is the expected size.
A question in which an identifier detector fires is never shown (counted, not quoted).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from policydesk.detectors import find_member_identifiers

# MiniLM cosine between paraphrases of one policy question sits around 0.7-0.9; unrelated
# policy questions mostly below 0.5 (measured on the demo golden set's questions).
DEFAULT_THRESHOLD = 0.7
DEFAULT_TOP = 5


@dataclass
class QuestionCluster:
    representative: str
    size: int
    examples: list[str] = field(default_factory=list)
    withheld: int = 0  # questions counted here but not quoted (an identifier detector fired)


def cluster_questions(questions: list[str], embed_model, *, threshold: float = DEFAULT_THRESHOLD,
                      top: int = DEFAULT_TOP) -> list[QuestionCluster]:
    unique = list(dict.fromkeys(q.strip() for q in questions if q.strip()))
    if not unique:
        return []
    counts = {q: 0 for q in unique}
    for q in questions:
        if q.strip():
            counts[q.strip()] += 1
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
        members = [i for i, head in assigned.items() if head == h]
        shown = [unique[i] for i in sorted(members, key=lambda i: -sims[i, h]) if not find_member_identifiers(unique[i])]
        clusters.append(QuestionCluster(
            representative=shown[0] if shown else "(withheld: every question here carried an identifier)",
            size=sum(counts[unique[i]] for i in members), examples=shown[1:4],
            withheld=sum(1 for i in members if find_member_identifiers(unique[i]))))
    return sorted(clusters, key=lambda c: (-c.size, c.representative))[:top]
