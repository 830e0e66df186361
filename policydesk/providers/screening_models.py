"""The refusal gate's intent classifier and the what-changed detector, on the local model.

Both read a question only through the offline MiniLM (it never leaves the process for them),
whatever provider answers. They are fitted once per loaded model and kept beside its weights:
every pipeline built on that model in the process shares them, as it shares the weights
(`offline_embedding`). Fitting is lazy and retried: a classifier that fails to fit screens that
question with rules only, and the next question tries again (docs/refusal.md).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding

from policydesk.providers.local import VectorCache, local_embedding
from policydesk.screening.intent import IntentClassifier
from policydesk.screening.whatchanged import WhatChangedDetector


class LocalVectors:
    """Batched, normalized vectors from the local model, cached by text: the classifier and the
    detector read the same question once."""

    def __init__(self, model: BaseEmbedding) -> None:
        self.model = model
        self._cache = VectorCache(model)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        return np.stack(self._cache.embed(texts)) if texts else np.asarray([], dtype=np.float32)


@dataclass(frozen=True)
class ScreeningModels:
    model: BaseEmbedding
    embed: LocalVectors
    intent: IntentClassifier
    what_changed: WhatChangedDetector

    @classmethod
    def on(cls, model: BaseEmbedding) -> "ScreeningModels":
        embed = LocalVectors(model)
        return cls(model, embed, IntentClassifier(embed), WhatChangedDetector(embed))


_fitted: dict[int, ScreeningModels] = {}  # by id of the loaded model, which lives as long as the process
_fitting = threading.Lock()


def screening_models(settings) -> ScreeningModels:
    """The screening models on the local model these settings load (one set per loaded model)."""
    model = local_embedding(settings)
    with _fitting:
        found = _fitted.get(id(model))
        if found is None or found.model is not model:
            found = _fitted[id(model)] = ScreeningModels.on(model)
        return found
