"""What each adapter's store classes share, with no framework imported: how a store is
recognised by its class (`is_a`), and the shape of a store's plan for a reader (`StorePlan`)."""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from typing import Generic, TypeVar

Store = TypeVar("Store")
Narrowing = TypeVar("Narrowing")


def is_a(store: object, module: str, name: str) -> bool:
    """Whether `store` is an instance of the class `module` exports as `name`, without importing
    `module`: a package nobody has imported cannot have made the store, and a user of one store
    installs no other.

    The class is looked up where its package exports it, not matched by name along the store's
    bases, so a class of the same name elsewhere is not taken for it, and the class moving
    between the package's own modules changes nothing."""
    kind = getattr(sys.modules.get(module), name, None)
    return isinstance(kind, type) and isinstance(store, kind)


class StorePlan(ABC, Generic[Store, Narrowing]):
    """How one kind of store is asked for a reader's items: what narrows its query for the
    reader's scope ids (`filter_for`), in the store's own filter language.

    A plan depends on the reader's size, so it lives here, in the store's class, not in the
    pager: a filter may name only so many values, and past them the plan asks for no filter and
    the store is paged. Each subclass's docstring says how exact its filter is: exactly "every
    scope of the item is the reader's", or a condition every readable item meets, which the
    exact check after the query completes.
    """

    def __init__(self, store: Store, scopes_key: str) -> None:
        self._store, self._key = store, scopes_key

    @abstractmethod
    def filter_for(self, scope_ids: frozenset[str]) -> Narrowing: ...
