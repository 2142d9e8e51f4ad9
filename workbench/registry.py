"""A registry by name: tasks, positional encodings and mixers are all chosen this way."""
from __future__ import annotations

from typing import Callable, Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, field: str):
        self.kind, self.field = kind, field
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def add(item: T) -> T:
            if name in self._items:
                raise KeyError(f"{self.kind} {name!r} registered twice")
            self._items[name] = item
            return item

        return add

    def register_class(self, name: str) -> Callable[[type], type]:
        """A class decorator that registers the class and gives it its `name` (mixers, probes)."""
        def add(cls: type) -> type:
            cls.name = name
            return self.register(name)(cls)

        return add

    def get(self, name: str) -> T:
        if name not in self._items:
            raise ConfigError(self.field, name, f"unknown {self.kind}; choose one of: {', '.join(self.names())}")
        return self._items[name]

    def names(self) -> list[str]:
        return list(self._items)

    def __contains__(self, name: str) -> bool:
        return name in self._items
