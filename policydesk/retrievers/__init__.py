"""LlamaIndex retrievers that carry the caller's access predicate into every SQL statement.

The predicate itself is built in `policydesk.storage.predicate`, the one place for every scoped read.
"""

from policydesk.retrievers.fusion import reciprocal_rank_fusion, deterministic_rerank
from policydesk.retrievers.hybrid import HybridRetrievalEvent, HybridRetriever, RetrievalResult
from policydesk.retrievers.scoped import EmbeddingUnavailable, PermissionScopedRetriever
from policydesk.retrievers.split import split_question
from policydesk.retrievers.store import chunk_vector_store

__all__ = [
    "HybridRetriever", "HybridRetrievalEvent", "RetrievalResult", "PermissionScopedRetriever", "EmbeddingUnavailable",
    "chunk_vector_store", "reciprocal_rank_fusion", "deterministic_rerank", "split_question",
]
