"""The clearance guard credits each dropped chunk to the arm that returned it, also when extension
arms are guarded at the same time (the async path guards them in parallel threads).

Regression: each guard pass read "its" drops by position in the shared report, so a pass that ran
beside another's also credited the other's drop to its own component (seen in
tests/test_extension_point.py about one run in three once query embedding got faster)."""

from __future__ import annotations

import asyncio

from policydesk.access import clearance_for
from policydesk.extensions.registry import Extensions
from policydesk.extensions.stack import RequestStack
from policydesk.retrievers import chunk_vector_store
from tests import extension_helpers as helpers
from tests.conftest import WEB_TODAY

QUESTION = "What is the timely filing limit?"


def test_parallel_arm_guards_credit_each_drop_to_its_own_arm(demo_db, settings, embed_model):
    s = settings.model_copy(update={"RETRIEVERS": [
        helpers.spec("notes", "CountingRetriever", prefix="CN-05"),  # returns only what a rep may read
        helpers.spec("foreign", "ForeignRetriever"),  # returns a chunk nobody ingested
    ]})
    for _ in range(12):  # the overlap is a matter of timing: give it many chances
        stack = RequestStack(Extensions.from_settings(s), db=demo_db, store=chunk_vector_store(demo_db),
                             embed_model=embed_model, settings=s, clearance=clearance_for("rep"), dates={},
                             today=WEB_TODAY)
        asyncio.run(stack.aretrieve(QUESTION))
        assert stack.summary()["dropped"] == [
            {"chunk_id": "EXT-STORE:v1:notes", "reason": "not_readable", "component": "foreign", "stage": "retrieval"}]
