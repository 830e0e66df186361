"""Which extension components exist: from settings and from Python entry points.

Two ways to register (docs/extending.md):

- settings: `POLICYDESK_RETRIEVERS` / `POLICYDESK_POSTPROCESSORS`, JSON lists of
  `{"name": ..., "factory": "package.module:attribute", "options": {...}}`;
- entry points in the groups `policydesk.retrievers` / `policydesk.postprocessors` of an installed
  distribution: the entry point's name is the component's name, its options come from
  `POLICYDESK_COMPONENT_OPTIONS` (`{"name": {...}}`). `POLICYDESK_ENTRY_POINT_COMPONENTS=false`
  ignores them.

Factories are imported once, when the pipeline is built, so a typo stops start-up instead of a
request. Each request then calls `factory(context, **options)` with that request's
`ComponentContext`: components are built per request and keep no caller's data between them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.postprocessor.types import BaseNodePostprocessor

from policydesk.extensions.context import ComponentContext
from policydesk.config.components import ComponentSpec

Kind = Literal["retriever", "postprocessor"]
GROUPS: dict[Kind, str] = {"retriever": "policydesk.retrievers", "postprocessor": "policydesk.postprocessors"}
BASES: dict[Kind, type] = {"retriever": BaseRetriever, "postprocessor": BaseNodePostprocessor}


class ExtensionError(ValueError):
    """A component that can't be registered or built; names the component and the fix."""


def import_factory(path: str) -> Callable[..., Any]:
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ExtensionError(f"cannot import {path!r}: {exc}") from exc
    if not callable(obj):
        raise ExtensionError(f"{path!r} is not a class or a callable")
    return obj


@dataclass(frozen=True)
class Registered:
    name: str
    kind: Kind
    factory: Callable[..., Any] = field(repr=False)
    options: dict[str, Any] = field(default_factory=dict)
    origin: str = "settings"  # "settings" or "entry point <distribution>"

    def build(self, context: ComponentContext) -> Any:
        """This request's instance; refused unless it is the LlamaIndex base type of its kind."""
        component = self.factory(context, **self.options)
        if not isinstance(component, BASES[self.kind]):
            raise ExtensionError(f"{self.kind} {self.name!r} ({self.origin}) built a {type(component).__name__}, "
                                 f"not a {BASES[self.kind].__name__}")
        return component


def _from_settings(specs: list, kind: Kind) -> list[Registered]:
    out = []
    for raw in specs:
        spec = raw if isinstance(raw, ComponentSpec) else ComponentSpec.model_validate(raw)
        try:
            factory = import_factory(spec.factory)
        except ExtensionError as exc:
            raise ExtensionError(f"{kind} {spec.name!r} (settings): {exc}") from None
        out.append(Registered(spec.name, kind, factory, dict(spec.options), "settings"))
    return out


def _from_entry_points(kind: Kind, options: dict[str, dict[str, Any]]) -> list[Registered]:
    out = []
    for ep in sorted(entry_points(group=GROUPS[kind]), key=lambda e: e.name):
        dist = getattr(ep.dist, "name", None) or "?"
        try:
            ComponentSpec(name=ep.name, factory=ep.value)  # the same name and shape rules as settings
            factory = ep.load()
        except Exception as exc:  # noqa: BLE001 - any failure to load is a start-up error, named
            raise ExtensionError(f"{kind} {ep.name!r} (entry point of {dist}): {exc}") from None
        out.append(Registered(ep.name, kind, factory, dict(options.get(ep.name, {})), f"entry point {dist}"))
    return out


@dataclass(frozen=True)
class Extensions:
    retrievers: tuple[Registered, ...] = ()
    postprocessors: tuple[Registered, ...] = ()

    @classmethod
    def from_settings(cls, settings) -> "Extensions":
        use_eps = getattr(settings, "ENTRY_POINT_COMPONENTS", True)
        options = getattr(settings, "COMPONENT_OPTIONS", {}) or {}
        found: dict[Kind, list[Registered]] = {}
        for kind, setting in (("retriever", "RETRIEVERS"), ("postprocessor", "POSTPROCESSORS")):
            found[kind] = _from_settings(list(getattr(settings, setting, []) or []), kind)
            if use_eps:
                found[kind] += _from_entry_points(kind, options)
        names = [r.name for regs in found.values() for r in regs]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ExtensionError(f"component name(s) registered twice: {', '.join(duplicates)}")
        return cls(tuple(found["retriever"]), tuple(found["postprocessor"]))

    def __bool__(self) -> bool:
        return bool(self.retrievers or self.postprocessors)
