"""The retriever a developer composes with: the pipeline's retrieval for one caller, guard and versions included.

`PolicyRetriever` runs what `AskPipeline` runs between the refusal gate and the prompt: the
dense and text arms (and any registered extension arms) under the caller's predicate and RLS,
one fusion, the clearance guard, version resolution for the entered dates (today's version
without one), conflict flagging, extension and given postprocessors, and the guard again. So
it never returns two versions of one policy section, nor a chunk above the clearance. It is
built from a `Clearance` and the dates and refuses to be built without them; the bare arms are
`policydesk.retrievers.HybridArmsRetriever` / `DenseArmRetriever` / `TextArmRetriever`.

No version in force on the date for the policy the question is about raises
`NoVersionInForce`, exactly where the pipeline refuses (nothing in force is left, or the
question names that policy): an answer is never built from a rule that did not apply. Every
node carries `metadata["doc_id"]`. The refusal gate is not part of retrieval: `policydesk.query_engine`
runs the whole pipeline, gate included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from policydesk.entry.configured import entered_dates, open_configured, user_clearance
from policydesk.extensions.registry import Extensions
from policydesk.config.components import RESERVED_NAMES
from policydesk.extensions.stack import RequestStack
from policydesk.reading.language import names_source_in_context
from policydesk.postprocessors import ConflictFlagger, VersionResolver
from policydesk.retrievers import chunk_vector_store
from policydesk.retrievers.threaded import ThreadedRetriever
from policydesk.storage.chunk_ids import doc_id_of
from policydesk.accounts.access import UnknownRoleError, clearance_for
from policydesk.storage.clearance import Clearance
from policydesk.storage.guard_read import CallerChunks
from policydesk.versions import VersionLookup

MISSING_CLEARANCE = ("PolicyRetriever needs the caller's Clearance (policydesk.accounts.access.clearance_for(role), or "
                     "policydesk.retriever(user) to read it from the user's stored role); got {got}. Without one "
                     "nothing limits what it ranks.")


HAND_BUILT_CLEARANCE = ("PolicyRetriever takes a Clearance only as policydesk.accounts.access.clearance_for({role!r}) grants "
                        "it (optionally limited to a product); a hand-built one is refused. policydesk.retriever(user) "
                        "reads it from the user's stored role.")


def _granted(clearance: Clearance) -> Clearance | None:
    try:
        return clearance_for(clearance.role).for_product(clearance.line_of_business)
    except UnknownRoleError:
        return None


class PolicyRetriever(ThreadedRetriever):
    def __init__(self, db, embed_model, settings, *, clearance: Clearance,
                 dates: Mapping[str, date | str | None] | None, today: date | None = None,
                 postprocessors: Sequence[BaseNodePostprocessor] | Mapping[str, BaseNodePostprocessor] = (),
                 extensions: Extensions | None = None, owns_database: bool = False, **kwargs: Any) -> None:
        """`dates`: the entered dates by basis (`{}` for the versions in force today), required so
        a caller decides which rule applies. `postprocessors` run after the built-in ones and
        before the last guard pass (a mapping names them in the trace and the guard's log)."""
        if not isinstance(clearance, Clearance):
            raise TypeError(MISSING_CLEARANCE.format(got=type(clearance).__name__))
        if clearance != _granted(clearance):  # hand-built: wider (or other) than any role's grant
            raise TypeError(HAND_BUILT_CLEARANCE.format(role=clearance.role))
        self.clearance = clearance
        self.chunks = CallerChunks(db.app, clearance)  # for the synthesizer: re-reads nodes under this clearance
        self.dates = entered_dates(dates)
        self._db, self._embed_model, self._settings = db, embed_model, settings
        self._today = today  # pinned in tests and evals; otherwise read per retrieval
        self._store = chunk_vector_store(db)
        self._lookup = VersionLookup(db)
        self._extensions = extensions if extensions is not None else Extensions.from_settings(settings)
        self._postprocessors = _named(postprocessors)
        self._owns_database = owns_database
        super().__init__(**kwargs)

    def close(self) -> None:
        if self._owns_database:
            self._db.dispose()

    def __enter__(self) -> "PolicyRetriever":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def today(self) -> date:
        return self._today or self._settings.today()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        today = self.today
        stack = RequestStack(self._extensions, db=self._db, store=self._store, embed_model=self._embed_model,
                             settings=self._settings, clearance=self.clearance, dates=self.dates, today=today,
                             postprocessors=self._postprocessors)
        resolver = VersionResolver(lookup=self._lookup, clearance=self.clearance, dates=self.dates, today=today,
                                   recent_change_days=self._settings.RECENT_CHANGE_DAYS)
        resolved = resolver.resolve(stack.retrieve(query_bundle).nodes)
        nodes = stack.finish(ConflictFlagger().flag(resolved.nodes).nodes)
        held = resolved.report.held_back  # the first policy reached had no version in force on its date
        if held is not None and (not nodes or names_source_in_context(query_bundle.query_str, held.title, nodes)):
            raise held  # where `ask` refuses: the question is about that policy
        for n in nodes:
            # The store keeps a chunk's document id as its source relationship, not in metadata.
            n.node.metadata.setdefault("doc_id", doc_id_of(n.node))
        return nodes


def retriever(user: str, *, dates: Mapping[str, date | str | None] | None, line_of_business: str | None = None,
              settings=None, db=None, embed_model=None,
              postprocessors: Sequence[BaseNodePostprocessor] | Mapping[str, BaseNodePostprocessor] = ()
              ) -> PolicyRetriever:
    """A `PolicyRetriever` with `user`'s clearance as stored now (their role and the product);
    the configured database and embedding model unless given. Build a new one after a role change."""
    if settings is None:
        from policydesk.config import get_settings

        settings = get_settings()
    owns = db is None
    db = db or open_configured(settings)
    try:
        if embed_model is None:
            from policydesk.providers import embedding_for

            embed_model = embedding_for(settings)
        return PolicyRetriever(db, embed_model, settings, clearance=user_clearance(db, user, line_of_business),
                               dates=dates, postprocessors=postprocessors, owns_database=owns)
    except BaseException:
        if owns:
            db.dispose()
        raise


def _named(postprocessors) -> list[tuple[str, BaseNodePostprocessor]]:
    pairs = list(postprocessors.items()) if isinstance(postprocessors, Mapping) else [
        (type(p).__name__.lower(), p) for p in postprocessors]
    for name, p in pairs:
        if not isinstance(p, BaseNodePostprocessor):
            raise TypeError(f"postprocessor {name!r} is a {type(p).__name__}, not a BaseNodePostprocessor")
        if name in RESERVED_NAMES:
            raise ValueError(f"postprocessor name {name!r} is taken by a built-in")
    return pairs
