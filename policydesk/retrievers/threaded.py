"""Async retrieval as the sync body in a worker thread: one implementation per retriever.

Every read on the retrieval path is a sync pipelined read (`storage/pipelined.py`); `aretrieve`
runs that same `_retrieve` off the event loop instead of a second, async SQL path. The thread
runs in a copy of the caller's context, so the active trace and scope reach it.
"""

from __future__ import annotations

import asyncio

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle


class ThreadedRetriever(BaseRetriever):
    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)
