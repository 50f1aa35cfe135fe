"""One patch of ``triton.language`` per interpreter launch, not one per device-function call.

Under ``TRITON_INTERPRET=1`` a launch (``GridExecutor.__call__``) patches the ``triton.language``
modules its kernel's globals hold (``tl``, ``tl.core``) with interpreter builtins, and restores
them when the launch ends. Every call of a ``@triton.jit`` helper from inside the kernel
(``InterpretedFunction.__call__``) runs the same ``_patch_lang`` again, on modules already
patched: it walks them with ``inspect.getmembers`` and finds nothing left to wrap. On a kernel
built from helpers (the column loop calls them once per chunk) that re-walk is most of the
launch's time, for nothing.

:func:`install` wraps the interpreter's ``_patch_lang``: a call made while a launch's patch is in
place, for a function whose ``triton.language`` modules that launch already patched, returns an
empty scope and changes nothing; any other call (the launch itself, or a helper that holds a
language module the kernel does not) patches as before. Kernels compute what they computed:
``tests/kernels/test_interpreter_calls.py`` runs launches both ways and compares every bit.
Nothing is installed in compiled mode, or when the interpreter lacks the names this relies on
(``_patch_lang``, ``_LangPatchScope``; triton 3.6 and 3.7 have both).
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

_state = threading.local()
_seen: dict[tuple[Any, int], frozenset[int]] = {}
#: Calls answered without a patch since :func:`install` (read by the tests).
skipped = 0


def _languages(fn: Any) -> frozenset[int]:
    """The ids of the ``triton.language`` modules ``fn``'s globals hold (as ``_patch_lang``
    finds them), remembered per function while its module's globals keep their size."""
    import triton.language as tl

    names = fn.__globals__
    key = (fn, len(names))
    found = _seen.get(key)
    if found is None:
        wanted = (tl, tl.core)
        found = frozenset(
            id(value)
            for value in names.values()
            if inspect.ismodule(value) and any(value is w for w in wanted)
        )
        _seen[key] = found
    return found


class _LaunchScope:
    """The launch's real scope; restoring it also ends the launch's record of patched modules."""

    def __init__(self, scope: Any, previous: frozenset[int] | None) -> None:
        self._scope = scope
        self._previous = previous

    def set_attr(self, obj: object, name: str, value: object) -> None:
        self._scope.set_attr(obj, name, value)

    def restore(self) -> None:
        try:
            self._scope.restore()
        finally:
            _state.patched = self._previous


def install() -> bool:
    """Wrap the interpreter's ``_patch_lang`` once; True when the wrapper is in place."""
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - every supported triton has it
        return False
    real = getattr(interpreter, "_patch_lang", None)
    if real is None or not hasattr(interpreter, "_LangPatchScope"):
        return False
    if getattr(real, "_once_per_launch", False):
        return True
    empty_scope = interpreter._LangPatchScope

    def patch_lang(fn: Any) -> Any:
        global skipped
        patched: frozenset[int] | None = getattr(_state, "patched", None)
        languages = _languages(fn)
        if patched is not None and languages and languages <= patched:
            skipped += 1
            return empty_scope()
        scope = real(fn)
        _state.patched = languages | (patched or frozenset())
        return _LaunchScope(scope, patched)

    patch_lang._once_per_launch = True  # type: ignore[attr-defined]
    patch_lang.__wrapped__ = real  # type: ignore[attr-defined]
    interpreter._patch_lang = patch_lang
    return True


def uninstall() -> None:
    """Put the interpreter's own ``_patch_lang`` back (the tests compare both)."""
    from triton.runtime import interpreter

    current = interpreter._patch_lang
    if getattr(current, "_once_per_launch", False):
        interpreter._patch_lang = current.__wrapped__
