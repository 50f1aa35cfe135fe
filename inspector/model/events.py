"""Plain change notification for the inspection's state, modelled on napari's ``EmitterGroup``:
one :class:`EventEmitter` per piece of state (:class:`StateEvents`), each calling its callbacks
with an :class:`Event` in the order they were connected. Qt-free: the window connects its views;
tests connect plain functions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Event:
    """What an emitter hands its callbacks: which state changed and its new value."""

    type: str
    value: Any = None


class EventEmitter:
    """The callbacks of one kind of change, called in the order they were connected."""

    def __init__(self, event_type: str) -> None:
        self.type = event_type
        self._callbacks: list[Callable[[Event], Any]] = []

    def connect(self, callback: Callable[[Event], Any]) -> Callable[[Event], Any]:
        """Call ``callback(event)`` on every emit (once, however often it is connected)."""
        if callback not in self._callbacks:
            self._callbacks.append(callback)
        return callback

    def disconnect(self, callback: Callable[[Event], Any] | None = None) -> None:
        """Forget ``callback`` (None: every callback)."""
        if callback is None:
            self._callbacks.clear()
        elif callback in self._callbacks:
            self._callbacks.remove(callback)

    def emit(self, value: Any = None) -> Event:
        """Call every callback with ``Event(type, value)``; returns the event."""
        event = Event(self.type, value)
        for callback in list(self._callbacks):
            callback(event)
        return event


class StateEvents:
    """One emitter per piece of state: ``state.events.problem.connect(callback)``."""

    kernel: EventEmitter
    problem: EventEmitter
    mutant: EventEmitter
    batch_invariant: EventEmitter
    analysis: EventEmitter
    kernel_run: EventEmitter
    check_result: EventEmitter
    session_results: EventEmitter
    bench: EventEmitter
    compile_info: EventEmitter
    session: EventEmitter
    session_path: EventEmitter
    dirty: EventEmitter

    #: The emitters' names, in the order declared above.
    NAMES = tuple(__annotations__)

    def __init__(self) -> None:
        for name in self.NAMES:
            setattr(self, name, EventEmitter(name))

    def emitters(self) -> list[EventEmitter]:
        """Every emitter, in :attr:`NAMES` order."""
        return [getattr(self, name) for name in self.NAMES]
