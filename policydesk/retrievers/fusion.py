"""Reciprocal rank fusion and the deterministic rerank that follows it."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore

# k = 60 from Cormack, Clarke & Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and
# individual Rank Learning Methods" (SIGIR 2009); it damps the weight of the very top ranks.
RRF_K = 60

# Authoritative sources first when fused scores tie.
SOURCE_PRIORITY = {"policy": 0, "wiki": 1, "call_note": 2}


def reciprocal_rank_fusion(ranked_lists: list[list[NodeWithScore]], k: int = RRF_K) -> list[NodeWithScore]:
    """Fuse ranked lists by sum of 1/(k + rank); de-duplicates by node id, never by text."""
    scores: dict[str, float] = {}
    nodes: dict[str, NodeWithScore] = {}
    for ranked in ranked_lists:
        for rank, item in enumerate(ranked, start=1):
            node_id = item.node.node_id
            scores[node_id] = scores.get(node_id, 0.0) + 1.0 / (k + rank)
            nodes.setdefault(node_id, item)
    return [NodeWithScore(node=nodes[i].node, score=s) for i, s in scores.items()]


def deterministic_rerank(nodes: list[NodeWithScore], top_n: int | None = None) -> list[NodeWithScore]:
    """Stable order: fused score desc, then policy > wiki > call note, then chunk id asc.

    Scores are rounded to 12 places so float noise between runs can't flip a tie.
    """
    seen: set[str] = set()
    unique = []
    for n in nodes:
        if n.node.node_id not in seen:
            seen.add(n.node.node_id)
            unique.append(n)
    ordered = sorted(
        unique,
        key=lambda n: (
            -round(n.score or 0.0, 12),
            SOURCE_PRIORITY.get(n.node.metadata.get("source_type"), 9),
            n.node.node_id,
        ),
    )
    return ordered[:top_n] if top_n else ordered
