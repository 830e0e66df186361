"""How a setting names one extension component (POLICYDESK_RETRIEVERS, POLICYDESK_POSTPROCESSORS);
the registry that builds them is `policydesk.extensions`."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Built-in names an extension may not take: they already label arms and stages in the trace.
RESERVED_NAMES = frozenset({"dense", "text", "version_resolver", "conflict_flagger", "clearance_guard"})
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
_FACTORY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class ComponentSpec(BaseModel):
    """One component: `factory(context, **options)` must return a LlamaIndex `BaseRetriever`
    (for POLICYDESK_RETRIEVERS) or `BaseNodePostprocessor` (for POLICYDESK_POSTPROCESSORS)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Shown in the trace, the guard's counter and its log; lower_snake_case.")
    factory: str = Field(description="'package.module:attribute', a class or a callable.")
    options: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments for the factory.")

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"component name {value!r} must be lower_snake_case, at most 48 characters")
        if value in RESERVED_NAMES:
            raise ValueError(f"component name {value!r} is taken by a built-in")
        return value

    @field_validator("factory")
    @classmethod
    def _check_factory(cls, value: str) -> str:
        if not _FACTORY.match(value):
            raise ValueError(f"factory {value!r} must look like 'package.module:attribute'")
        return value
