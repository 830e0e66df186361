"""LlamaIndex retrievers that carry the caller's access predicate into every SQL statement.

The predicate itself is built in `policydesk.storage.predicate`, the one place for every scoped read.

These are the bare arms, exported also under names that say so (`HybridArmsRetriever`,
`DenseArmRetriever`, `TextArmRetriever`): the predicate and RLS only, with no clearance guard
over extension arms and no version resolution, so every version of a policy that matches comes
back. To compose an answer, use `policydesk.PolicyRetriever` (or `policydesk.retriever(user)`).
"""

from policydesk.retrievers.fusion import reciprocal_rank_fusion, deterministic_rerank
from policydesk.retrievers.hybrid import HybridRetrievalEvent, HybridRetriever, RetrievalResult
from policydesk.retrievers.scoped import EmbeddingUnavailable, PermissionScopedRetriever
from policydesk.retrievers.split import split_question
from policydesk.retrievers.store import chunk_vector_store
from policydesk.retrievers.text import IndexedTextRetriever

# The bare arms under names that say what they are (no guard, no version resolution).
HybridArmsRetriever = HybridRetriever
DenseArmRetriever = PermissionScopedRetriever
TextArmRetriever = IndexedTextRetriever

__all__ = [
    "HybridRetriever", "HybridRetrievalEvent", "RetrievalResult", "PermissionScopedRetriever", "EmbeddingUnavailable",
    "HybridArmsRetriever", "DenseArmRetriever", "TextArmRetriever", "IndexedTextRetriever",
    "chunk_vector_store", "reciprocal_rank_fusion", "deterministic_rerank", "split_question",
]
