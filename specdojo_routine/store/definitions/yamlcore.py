"""YAML 1.2 core typing, shared by both paths of definition loading.

The located slow path (:mod:`.safeyaml`) loads with this resolver, and the fast path
(:mod:`.fastyaml`) types every plain scalar with the very same instance,
so the two cannot read a scalar differently. Kept apart from the slow path so that the fast
path loads without its scanner and constructor.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.resolver import VersionedResolver, implicit_resolvers

__all__ = ["RESOLVER", "CoreResolver"]

_NOT_CORE_IMPLICIT = frozenset({"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value"})


class CoreResolver(VersionedResolver):
    """YAML 1.2 implicit typing without timestamps, whatever a document declares."""

    @property
    def versioned_resolver(self) -> Any:
        version = (1, 2)
        if version not in self._version_implicit_resolver:
            for versions, tag, regexp, first in implicit_resolvers:
                if version in versions and tag not in _NOT_CORE_IMPLICIT:
                    self.add_version_implicit_resolver(version, tag, regexp, first)
        return self._version_implicit_resolver[version]


#: The resolver both paths type scalars with.
RESOLVER = CoreResolver()
