"""A postprocessor under test whose last call's findings a test reads back as `.report`.

The product returns findings from `VersionResolver.resolve` and `ConflictFlagger.flag` and
keeps nothing between calls; tests written against `postprocess_nodes` wrap the component in
`Remembering` to read what the last call found."""

from __future__ import annotations


class Remembering:
    def __init__(self, component) -> None:
        self.component = component
        self.report = None

    def _call(self, nodes):
        found = (self.component.resolve if hasattr(self.component, "resolve") else self.component.flag)(list(nodes))
        self.report = found.report
        return found.nodes

    def postprocess_nodes(self, nodes, query_bundle=None):
        return self._call(nodes)

    async def apostprocess_nodes(self, nodes, query_bundle=None):
        return self._call(nodes)
