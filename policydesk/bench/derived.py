"""Filler vectors derived from embedded ones, for a realistic filler too large to embed on the machine.

The first `limit` distinct filler texts are embedded by the model (and kept on disk,
`vector_file.py`); every later chunk keeps its own generated text (so the full-text arm, the
filters and version resolution see real rows) and gets a vector made from embedded vectors of
its own topic:

- a text already seen (a section a later version left unchanged) gets that text's vector, as
  the model would give it;
- a section a later version rewrites gets its previous version's vector mixed with another
  embedded vector of its topic, the weight chosen so that the mean cosine between a section and
  its revision is the one measured on the embedded texts;
- any other text gets an embedded vector of its topic and source type moved by the difference
  of two others of that topic, scaled so that the derived vectors' nearest-neighbour cosine is
  the embedded ones' (a convex mix of two would crowd them towards the topic's centre).

So the derived vectors stay in the region real texts of their topic occupy, versions stay a
revision apart and documents are not copies of each other. `nearest_neighbour_check` reports
the derived set's nearest-neighbour cosines beside the embedded set's (the figure that says
whether the derived corpus is as crowded as a real one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PlannedText:
    """What derivation needs to know about one filler chunk."""
    doc: int  # the filler document's index
    version: int
    section: int
    topic: str
    source_type: str
    text: str  # the text the model would embed (title, then the section)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _revision_weight(pairs: list[tuple[np.ndarray, np.ndarray]], donors: np.ndarray, rng) -> float:
    """The weight w for which cos(prev, unit(w*prev + (1-w)*donor)) matches the embedded revisions' mean."""
    if not pairs:
        return 0.9
    prev = np.array([p for p, _ in pairs])
    target = float(np.mean(np.sum(prev * np.array([r for _, r in pairs]), axis=1)))
    donor = donors[rng.integers(len(donors), size=len(prev))]
    grid = np.linspace(0.3, 0.995, 140)
    means = [float(np.mean(np.sum(prev * _unit(w * prev + (1 - w) * donor), axis=1))) for w in grid]
    return float(grid[int(np.argmin([abs(m - target) for m in means]))])


def _spread(pools: list[np.ndarray], rng, scale: float, count: int) -> np.ndarray:
    """`count` new vectors a + scale*(b - c), a, b, c drawn from one pool (one topic) each."""
    picks = rng.integers(len(pools), size=count)
    out = np.empty((count, pools[0].shape[1]), np.float32)
    for i, t in enumerate(picks):
        a, b, c = pools[t][rng.integers(len(pools[t]), size=3)]
        out[i] = a + scale * (b - c)
    return _unit(out)


def _nn_cosine(rows: np.ndarray, rng, sample: int = 400) -> float:
    idx = rng.choice(len(rows), min(sample, len(rows)), replace=False)
    sims = rows[idx] @ rows.T
    sims[np.arange(len(idx)), idx] = -1.0
    return float(np.mean(sims.max(axis=1)))


def _spread_scale(pools: list[np.ndarray], everything: np.ndarray, rng) -> float:
    """The scale at which as many derived vectors as there are embedded ones are as crowded
    (mean nearest-neighbour cosine) as the embedded ones."""
    unique = np.unique(everything, axis=0)
    target = _nn_cosine(unique, rng)
    grid = (0.2, 0.35, 0.5, 0.7, 0.85, 1.0, 1.2, 1.5)
    got = [_nn_cosine(_spread(pools, rng, g, len(unique)), rng) for g in grid]
    return float(grid[int(np.argmin([abs(x - target) for x in got]))])


def derive(planned: list[PlannedText], embedded: dict[str, np.ndarray], seed: int
           ) -> tuple[np.ndarray, dict]:
    """One vector per planned chunk: the embedded vector of its text where there is one, derived otherwise."""
    rng = np.random.default_rng(seed)
    by_topic: dict[str, list[np.ndarray]] = {}
    by_kind: dict[tuple[str, str], list[np.ndarray]] = {}
    seen_text: set[str] = set()
    for p in planned:
        if p.text in embedded and p.text not in seen_text:
            seen_text.add(p.text)
            by_topic.setdefault(p.topic, []).append(embedded[p.text])
            by_kind.setdefault((p.topic, p.source_type), []).append(embedded[p.text])
    topic_pool = {t: np.array(v) for t, v in by_topic.items()}
    kind_pool = {k: np.array(v) for k, v in by_kind.items()}
    everything = np.array([v for vs in by_topic.values() for v in vs])

    # Revision pairs among the embedded texts: (section at v-1, the rewritten section at v).
    prev_text: dict[tuple[int, int, int], str] = {(p.doc, p.version, p.section): p.text for p in planned}
    pairs = []
    for p in planned:
        before = prev_text.get((p.doc, p.version - 1, p.section))
        if before and before != p.text and before in embedded and p.text in embedded:
            pairs.append((embedded[before], embedded[p.text]))
    weight = _revision_weight(pairs[:5000], everything, rng)
    pools = [v for v in topic_pool.values() if len(v) >= 3] or [everything]
    scale = _spread_scale(pools, everything, rng)

    out = np.empty((len(planned), everything.shape[1]), np.float32)
    vec_of: dict[str, np.ndarray] = {}
    at: dict[tuple[int, int, int], np.ndarray] = {}
    derived = 0
    for i, p in enumerate(planned):
        if p.text in embedded:
            v = embedded[p.text]
        elif p.text in vec_of:
            v = vec_of[p.text]
        else:
            derived += 1
            pool = topic_pool.get(p.topic, everything)
            before = at.get((p.doc, p.version - 1, p.section))
            if before is not None:
                v = _unit(weight * before + (1 - weight) * pool[rng.integers(len(pool))])
            else:
                kind = kind_pool.get((p.topic, p.source_type))
                a = (kind if kind is not None else pool)[rng.integers(len(kind) if kind is not None else len(pool))]
                b, c = pool[rng.integers(len(pool), size=2)]
                v = _unit(a + scale * (b - c))
            vec_of[p.text] = v
        at[(p.doc, p.version, p.section)] = v
        out[i] = v
    return out, {"derived": derived, "embedded_texts_used": len(seen_text), "revision_pairs": len(pairs),
                 "revision_weight": round(weight, 3), "spread_scale": scale}


def nearest_neighbour_check(vectors: np.ndarray, is_derived: np.ndarray, seed: int, sample: int = 400) -> dict:
    """Mean cosine of a vector's nearest neighbour within the embedded rows and within as many
    derived rows, over a sample of each: close figures mean the derived corpus is as crowded as
    the embedded one (the noisy-copy filler's is near 1)."""
    rng = np.random.default_rng(seed)
    real, made = vectors[~is_derived], vectors[is_derived]
    n = min(len(real), len(made))
    if n < 2:
        return {}
    real, made = real[rng.choice(len(real), n, replace=False)], made[rng.choice(len(made), n, replace=False)]

    return {"nn_cosine_embedded": round(_nn_cosine(real, rng, sample), 4),
            "nn_cosine_derived": round(_nn_cosine(made, rng, sample), 4), "rows_compared": n}
