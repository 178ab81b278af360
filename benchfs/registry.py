"""Classes registered by name: the launchers (``benchfs.launchers``) and the
workload modes (``benchfs.run.workloads``). A new one is one class with a
``name`` and the registry's decorator; nothing else names it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, Protocol, TypeVar


class Named(Protocol):
    """A class with a ``name`` (the class itself, not its instances)."""

    @property
    def name(self) -> str: ...


C = TypeVar("C", bound=Named)


class Registry(Generic[C]):
    """The classes of one kind (``what``: "launcher"), by their ``name``."""

    def __init__(self, what: str, error: type[Exception] = ValueError) -> None:
        self.what = what
        self.error = error
        self._classes: dict[str, C] = {}

    def register(self, cls: C) -> C:
        """Class decorator: make ``cls`` available by its name."""
        name = cls.name
        if name in self._classes and self._classes[name] is not cls:
            raise ValueError(
                f"{self.what} name {name!r} is already registered by {self._classes[name]}"
            )
        self._classes[name] = cls
        return cls

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self._classes)

    def get(self, name: str) -> C:
        """The class registered as ``name``; ``error`` naming the known ones otherwise."""
        try:
            return self._classes[name]
        except KeyError:
            known = ", ".join(self.names())
            raise self.error(f"unknown {self.what} {name!r}; known: {known}") from None

    def __iter__(self) -> Iterator[C]:
        return iter(self._classes.values())
