"""An ``@triton.autotune`` kernel proven one config at a time.

A config is a launch layout (block sizes, warps, stages): a proof of an autotuned kernel must
hold for each, since the GPU may pick any of them for a shape. Autotuning itself benchmarks,
which the interpreter cannot (it has no driver) and which would make the proof depend on timing.
So :func:`variants` pins each autotuner of the user's file to one config in turn (the others to
their first); the kernel's child runs the launcher once per variant, and every output is judged.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: Most variants one run makes (a file whose autotuners list more is refused by name).
MAX_VARIANTS = 64


def find(launcher: Any, folder: Path) -> list[tuple[str, Any]]:
    """``(name, autotuner)`` of every ``triton.autotune`` kernel at the top level of the
    launcher's module or of a module loaded from ``folder`` (the user's file's siblings)."""
    from triton.runtime.autotuner import Autotuner

    namespaces = [getattr(launcher, "__globals__", {})]
    folder = folder.resolve()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and Path(path).resolve().parent == folder:
            namespaces.append(vars(module))
    found: dict[int, tuple[str, Any]] = {}
    for namespace in namespaces:
        for name, value in list(namespace.items()):
            if isinstance(value, Autotuner) and id(value) not in found:
                found[id(value)] = (name, value)
    return sorted(found.values(), key=lambda item: item[0])


def describe(config: Any) -> str:
    """A config in one line: its keyword arguments, then warps, stages and CTAs."""
    parts = [f"{k}={v}" for k, v in sorted(getattr(config, "kwargs", {}).items())]
    for attribute in ("num_warps", "num_stages", "num_ctas"):
        value = getattr(config, attribute, None)
        if value is not None:
            parts.append(f"{attribute}={value}")
    return ", ".join(parts)


def variants(tuners: list[tuple[str, Any]]) -> list[tuple[str, dict[int, Any]]]:
    """``(label, {id(tuner): config})`` of each variant to run: every config of every autotuner,
    the other autotuners at their first config; ``[("", {})]`` when there is none.

    Raises:
        ValueError: more than :data:`MAX_VARIANTS` variants.
    """
    if not tuners:
        return [("", {})]
    first = {id(tuner): tuner.configs[0] for _, tuner in tuners if tuner.configs}
    chosen: list[tuple[str, dict[int, Any]]] = []
    seen: set[tuple[int, ...]] = set()
    for name, tuner in tuners:
        for config in tuner.configs:
            pins = {**first, id(tuner): config}
            key = tuple(id(pins[k]) for k in sorted(pins))
            if key in seen:
                continue
            seen.add(key)
            chosen.append((f"{name}: {describe(config)}", pins))
    if len(chosen) > MAX_VARIANTS:
        raise ValueError(
            f"autotune: {len(chosen)} configs over {len(tuners)} autotuned kernel(s); "
            f"the check runs at most {MAX_VARIANTS}"
        )
    return chosen


@contextlib.contextmanager
def pinned(tuners: list[tuple[str, Any]], pins: dict[int, Any]) -> Iterator[None]:
    """Each autotuner runs only its pinned config inside the block (no benchmark, no cache)."""
    saved = [(tuner, tuner.configs) for _, tuner in tuners]
    try:
        for _, tuner in tuners:
            if id(tuner) in pins:
                tuner.configs = [pins[id(tuner)]]
        yield
    finally:
        for tuner, configs in saved:
            tuner.configs = configs
