"""The PGVectorStore over `data_chunks`, on the application (RLS-bound) engines."""

from __future__ import annotations

from llama_index.vector_stores.postgres import PGVectorStore

from policydesk.storage.models import EMBED_DIM


def chunk_vector_store(db) -> PGVectorStore:
    # Alembic owns the table, the extension and the indexes: no setup from here.
    return PGVectorStore(
        engine=db.app,
        async_engine=db.app_async,
        table_name="chunks",
        hybrid_search=True,
        text_search_config="english",
        embed_dim=EMBED_DIM,
        use_jsonb=True,
        perform_setup=False,
    )


def store_engines(store: PGVectorStore):
    """The (sync, async) engines a chunk store was built with. PGVectorStore keeps them private;
    we passed them in (chunk_vector_store), so reading them back is safe."""
    return store._engine, store._async_engine  # noqa: SLF001
