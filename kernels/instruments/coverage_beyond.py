"""Launch configurations beyond the layout rule: what the check's forced layouts
(``run_checked(path=...)``) and explicit configs (``config=``) launch that the rule never
chooses. ``main.py mutate`` proves a fixture survivor on them after the rule's map
(:mod:`kernels.instruments.coverage`): code only they compile is still code a caller can run.

Kept apart from :mod:`kernels.instruments.coverage`, whose source is part of the coverage records'
identity (the map's walk): these layouts are not the rule's.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from kernels.instruments.coverage import (
    ITEMSIZES,
    Configuration,
    Witness,
    _cost,
    configuration_of,
    launch_constexprs,
    stride_classes,
)
from kernels.launcher import SUPPORTED_DTYPES
from kernels.layout import (
    KERNEL_PATHS,
    LaunchConfig,
    block_for,
    forced_config,
    next_power_of_2,
    split_body,
)

# Widths of the layouts past the rule: a power of two (EVEN tiles and chunks), a multiple of
# every vector that is not one (masked tails on full vectors), one that no vector of 2-byte
# elements divides (the peel), and one whose peeled body splits in two tiles (128 + 16 lanes).
BEYOND_RULE_WIDTHS: tuple[int, ...] = (64, 96, 70, 130)


def _beyond_rule_configs(width: int, itemsize: int) -> list[LaunchConfig]:
    """The check's forced layouts of each path and the explicit layouts (``config=``) that
    vary what the rule fixes: the column loop unstreamed, on a quarter-row chunk and on one
    chunk; tiles with the other weight timing, one and two rows per program, unpeeled, and a
    split body with the weight early (streaming stores only change cache hints, which the
    rule's own layouts cover)."""
    lanes = block_for(width)
    chunk = max(1, lanes // 4)
    configs = [forced_config(path, 4, width, itemsize) for path in KERNEL_PATHS]
    configs += [LaunchConfig(True, block, 2) for block in (chunk, lanes)]
    for rows_per_program, w_early in itertools.product((1, 2), (False, True)):
        configs.append(LaunchConfig(False, lanes, 2, rows_per_program, w_early=w_early))
    configs.append(LaunchConfig(False, lanes, 2, peel=False))
    block, block2 = split_body(width, itemsize)
    if block2:
        for w_early in (False, True):
            configs.append(LaunchConfig(False, block, 2, w_early=w_early, block2=block2))
    half = lanes // 2  # unpeeled splits: the row's first half-tile, then the rest's power of two
    if half:
        rest = next_power_of_2(width - half)
        for rows_per_program, w_early in itertools.product((1, 2), (False, True)):
            configs.append(
                LaunchConfig(
                    False, half, 2, rows_per_program, w_early=w_early, peel=False, block2=rest
                )
            )
    return configs


def beyond_rule(
    covered: Iterable[Configuration] = (),
    widths: Iterable[int] = BEYOND_RULE_WIDTHS,
    dtypes: Iterable[str] = tuple(SUPPORTED_DTYPES),
) -> dict[Configuration, Witness]:
    """Configurations the kernels run that are not in ``covered`` (the rule's map): those of
    the check's forced layouts (``run_checked(path=...)``) and of explicit layouts
    (``config=``) on small problems of ``widths``, each with its cheapest witness, on the
    widest vector the width allows and on scalar accesses with the strides agreeing and not
    modulo 16 bytes. ``mutate`` proves a change in code that only these launch on them: the
    rule never compiles it, but a caller can.
    """
    skip = set(covered)
    found: dict[Configuration, Witness] = {}
    for dtype in dtypes:
        itemsize = ITEMSIZES[dtype]
        for width in widths:
            for config in _beyond_rule_configs(width, itemsize):
                for rows in (3, 4):  # a row mask for two rows per program, and none
                    classes = stride_classes(width, itemsize)
                    for x_stride, y_stride in dict.fromkeys([classes[0], *classes[-2:]]):
                        try:
                            launched, constexprs = launch_constexprs(
                                config, rows, width, x_stride, y_stride, itemsize
                            )
                        except ValueError:  # a split body whose strides leave it unpeeled
                            continue
                        key = configuration_of(dtype, launched.loop, constexprs)
                        witness = Witness(rows, width, x_stride, y_stride, dtype, launched)
                        if key in skip:
                            continue
                        if key not in found or _cost(witness) < _cost(found[key]):
                            found[key] = witness
    return dict(sorted(found.items()))
