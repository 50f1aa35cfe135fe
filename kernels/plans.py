"""Launch plans: what a launch of one argument signature needs, worked out once.

A user's model calls ``kernels.rms_norm`` with the same few shapes again and again. Everything the
checks and the layout depend on is a function of the arguments' *signature*: their types, dtypes,
devices, shapes and strides, ``out``'s too (``eps`` is checked on its own, and so is whether
``out`` shares x's storage: the one check that depends on more than the signature). The key holds
``get_device()``, an int that is cheap to hash; it is -1 for every non-CUDA device, so a plan
checks the device itself before any launch that is not a CUDA direct launch. ``kernels.rms_norm``
looks the signature up in :data:`PLANS` (inline: it is the hot path); a plan exists only for a
signature that passed :func:`kernels.launcher.validate` once, so a hit needs no check again, and a
miss goes to :func:`planned_rms_norm`, which makes the plan or returns None so the caller runs
every check, in order, with its message.

On a CUDA device a plan also holds the compiled kernel that Triton chose for the signature (its
first launch goes through Triton's dispatch and hands it back) and launches it directly
(:mod:`kernels.direct_launch`, the one place past Triton's supported API). The plan's key is at
least as fine as Triton's specialization (integers: from the shape and strides; pointers: only
launches whose three pointers are 16-byte aligned take the direct door), so the kernel launched
is the one Triton would pick. Launch hooks (profilers), another current device or an unaligned
pointer go through Triton's dispatch instead.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any

import torch

from kernels import launcher
from kernels.direct_launch import DIRECT_REFUSED, DirectLaunch, direct_launch
from kernels.layout import RULES, LaunchConfig, block_for, choose_config, problem, sm_count_for

# Plans kept at most; past it the cache starts again (a model uses a handful of signatures).
MAX_PLANS = 1024

PLANS: dict[tuple[Any, ...], LaunchPlan] = {}
# The plans of ``batch_invariant=True`` calls, by the same keys.
INVARIANT_PLANS: dict[tuple[Any, ...], LaunchPlan] = {}
_PLANS_LOCK = threading.Lock()

# The batch-invariant mode's reference batch: its layout for a width is the one the rule gives
# this many rows on INVARIANT_SMS SMs (an H100's and an H200's count).
INVARIANT_ROWS = 1 << 24
INVARIANT_SMS = 132


@functools.lru_cache(maxsize=4096)
def invariant_config(width: int, itemsize: int) -> LaunchConfig:
    """The layout of ``batch_invariant=True``: a function of the width and the element size
    alone, so each row is reduced in one order whatever the batch.

    It is the rule's layout for a batch of INVARIANT_ROWS rows, which is the rule's layout for
    every batch of at least 64 MiB too (its row thresholds lie below that; a test holds it for
    every width), with a column loop's peel ordered, a tile unpeeled, and without splitting a
    row in two tiles: large batches pay nothing for the mode but on those widths, small ones
    run the large batch's layout. Inside a launch a row's place does not move its order: every
    row of a multi-row tile is reduced by the same lanes in the same tree, phantom rows are
    masked, and an unpeeled row's lanes hold the same elements wherever it starts. A peeled
    row's head runs to the next 16-byte boundary, so its length, and which lanes sum which
    elements, follows the row's place in the batch: the column loop's peel is ``ordered``
    (:class:`kernels.layout.LaunchConfig`: its elements go back to the lanes an unpeeled row
    sums them in, a gather of one chunk's accumulator per row; every row of every batch runs
    the one compiled variant, since :func:`launch_canonical` launches packed rows from aligned
    bases, so the gather and the tree are the same code for each), a tile keeps narrow accesses
    (there the same gathers cost more than the narrow loads: 1.3-3.0x the default's time on
    odd widths of 999-4103 against 1.0-1.6x unpeeled, H100 sweep of 2026-12-07). A split
    row's first tile is read unmasked, and on rows that do not start on 16-byte boundaries the
    certificate found such rows differing between batches by up to 4 ulp (H100, compiled): the
    mode skips the rule's split rows and wide split rows (``Rule.invariant`` False: the next
    row of the table gives the layout, as it did before those rows existed) and holds a peeled
    split body in one masked power-of-two tile.
    """
    p = problem(INVARIANT_ROWS, width, itemsize, INVARIANT_SMS)
    rule = next(rule for rule in RULES if rule.invariant and rule.applies(p))
    config = rule.layout(p)
    block = block_for(width) if config.block2 else config.block
    peel = config.peel and config.loop
    return dataclasses.replace(config, peel=peel, ordered=peel, block=block, block2=0)


def _packed_aligned(tensor: torch.Tensor, width: int) -> bool:
    """Rows back to back (row stride == width: one row's stride sets VEC too) from a
    16-byte-aligned base."""
    return tensor.stride(0) == width and not tensor.data_ptr() & 15


def launch_canonical(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    y2d: torch.Tensor,
    eps: float,
    *,
    config: LaunchConfig,
) -> tuple[launcher.Launched, bool]:
    """The batch-invariant mode's launch: always on packed rows from 16-byte-aligned bases.

    Triton compiles a kernel per vector width of the row strides (``VEC``) and per 16-byte
    alignment of the three base pointers, and the variants may lay the row's reduction out
    differently: for the mode's multi-row tiles they do (the TTGIR of sm_90 gives the tree's
    operand another elements-per-thread and warp split for a padded row stride, or for x and y
    both off a 16-byte boundary), and another tree can change a row's last bit. So x, weight
    or y that is not packed and aligned is copied into a fresh tensor (torch's allocator
    aligns them) and the result copied back: one compiled variant per width and dtype, and
    the certificate's batches stand for every batch. Returns what was launched and whether it
    copied (a padded or offset batch pays the copies; a packed, aligned one nothing).
    """
    rows, width = int(x2d.shape[0]), int(x2d.shape[1])
    if _packed_aligned(x2d, width) and _packed_aligned(y2d, width) and not weight.data_ptr() & 15:
        return launcher.launch_kernel(x2d, weight, y2d, eps, config=config), False
    xs = torch.empty((rows, width), dtype=x2d.dtype, device=x2d.device)
    xs.copy_(x2d)
    ws = weight
    if weight.data_ptr() & 15:
        ws = torch.empty_like(weight, memory_format=torch.contiguous_format)
        ws.copy_(weight)
    ys = torch.empty((rows, width), dtype=y2d.dtype, device=y2d.device)
    launched = launcher.launch_kernel(xs, ws, ys, eps, config=config, in_place=False)
    y2d.copy_(ys)
    return launched, True


def check_batch_invariant(value: object) -> bool:
    """``batch_invariant`` as given, if it is a bool.

    Raises:
        TypeError: anything but True or False (1, "yes", None...).
    """
    if value is not True and value is not False:
        raise TypeError(f"batch_invariant must be a bool; got {type(value).__name__}")
    return value


# The current CUDA device's index; torch's private getter skips current_device()'s lazy-init
# check (a plan with a direct launch exists only after CUDA is initialized).
current_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


@dataclasses.dataclass
class LaunchPlan:
    """The launch of one argument signature.

    Attributes:
        rows, width: the problem.
        config: the layout (:func:`kernels.layout.choose_config`, or :func:`invariant_config`
            for a ``batch_invariant=True`` plan).
        contiguous: x is contiguous, so ``empty_like(x)`` is the output's layout.
        device: the device of x and weight.
        in_place: a plan of ``out=`` whose out has x's strides: out may be x itself (so its
            config keeps each row in one program: ``row_parts`` 1).
        direct: the direct launch of Triton's compiled kernel for this signature with aligned
            pointers, once Triton's dispatch has launched it; None until then, and always on
            the interpreter.
        canonical: a ``batch_invariant=True`` plan: it launches on packed rows from 16-byte
            aligned bases only (:func:`launch_canonical` copies the others),
            and takes the direct door only for a signature that needs no copy.
    """

    rows: int
    width: int
    config: LaunchConfig
    contiguous: bool
    device: torch.device
    in_place: bool = False
    direct: DirectLaunch | None = None
    canonical: bool = False

    @property
    def device_index(self) -> int:
        """The CUDA device index (-1 on the CPU)."""
        return self.device.index if self.device.type == "cuda" else -1

    def dispatch(self, x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, eps: float) -> bool:
        """Launch through Triton's dispatch; keep its compiled kernel for the direct door when
        the three pointers are 16-byte aligned (Triton specialized it on that).

        Returns False, launching nothing, when ``x`` or ``weight`` is not on the plan's device:
        the key holds ``get_device()``, which is -1 for every non-CUDA device.
        """
        if x.device != self.device or weight.device != self.device:
            return False
        x2d = x.view(self.rows, self.width)
        y2d = launcher.rows_view("out", y, self.width)
        if self.canonical:
            launched, copied = launch_canonical(x2d, weight, y2d, eps, config=self.config)
            if copied:  # the signature's own strides or pointers never reach the kernel
                return True
        else:
            launched = launcher.launch_kernel(
                x2d, weight, y2d, eps, config=self.config, in_place=self.in_place
            )
        aligned = not (x.data_ptr() | weight.data_ptr() | y.data_ptr()) & 15
        if self.direct is None and self.device_index >= 0 and aligned and not DIRECT_REFUSED:
            self.direct = direct_launch(launched, self.device_index)
        return True


def _new_plan(
    x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor | None, batch_invariant: bool
) -> LaunchPlan | None:
    """A plan for arguments that pass every check; None if they do not (the caller reports)."""
    try:
        checked = launcher.validate(x, weight, 1e-6, out)
    except (TypeError, ValueError):
        return None
    if checked.rows == 0:
        return None
    if batch_invariant:
        config = invariant_config(checked.width, x.element_size())
    else:
        config = choose_config(
            checked.rows, checked.width, x.element_size(), sm_count_for(x.device)
        )
    in_place = out is not None and out.stride() == x.stride()
    if in_place:  # out may be x itself: a row's parts would overwrite what the others read
        config = dataclasses.replace(config, row_parts=1)
    return LaunchPlan(
        rows=checked.rows,
        width=checked.width,
        config=config,
        contiguous=x.is_contiguous(),
        device=x.device,
        in_place=in_place,
        canonical=batch_invariant,
    )


def out_allowed(plan: LaunchPlan, x: torch.Tensor, out: torch.Tensor) -> bool:
    """What :func:`kernels.launcher.validate` checks of ``out`` beyond its signature: it is x
    itself (same offset; the plan says whether the strides agree) or shares no storage."""
    if out.data_ptr() == x.data_ptr():
        return plan.in_place
    return out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def planned_rms_norm(
    x: object, weight: object, eps: object, out: object = None, batch_invariant: bool = False
) -> torch.Tensor | None:
    """``rms_norm(x, weight, eps, out=out, batch_invariant=...)`` through a plan, made now if the
    signature has none; None where the full checks must run (``eps`` not a float in range,
    ``x``, ``weight`` or a given ``out`` not tensors, a signature that fails a check, an ``out``
    sharing x's storage but not x itself, or no rows). ``batch_invariant`` (a bool, checked by
    the caller) picks the plans of :func:`invariant_config`'s layouts.

    ``kernels.rms_norm`` runs the hit path of this inline; this is its miss path (and the
    door of callers that want a plan without the public function's other doors).
    """
    if not (
        type(eps) is float
        and launcher.EPS_MIN <= eps <= launcher.EPS_MAX
        and isinstance(x, torch.Tensor)
        and isinstance(weight, torch.Tensor)
        and (out is None or isinstance(out, torch.Tensor))
    ):
        return None
    key: tuple[Any, ...] = (
        x.shape, x.stride(), x.dtype, x.get_device(), weight.shape, weight.stride(),
        weight.dtype, weight.get_device(),
    )  # fmt: skip
    if out is not None:
        key += (out.shape, out.stride(), out.dtype, out.get_device())
    plans = INVARIANT_PLANS if batch_invariant else PLANS
    plan = plans.get(key)
    if plan is None:
        plan = _new_plan(x, weight, out, batch_invariant)
        if plan is None:
            return None
        with _PLANS_LOCK:
            if len(plans) >= MAX_PLANS:
                plans.clear()
            plans[key] = plan
    if out is not None:
        if not out_allowed(plan, x, out):
            return None
        y = out
    elif plan.contiguous:
        y = torch.empty_like(x)
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return y if plan.dispatch(x, weight, y, eps) else None


def refuse_direct(plan: LaunchPlan, err: Exception) -> None:
    """Turn the direct door off for good: Triton's compiled kernel refused its arguments
    (another Triton's launcher); ``plan`` and every later one use Triton's dispatch."""
    DIRECT_REFUSED.append(f"{type(err).__name__}: {err}")
    plan.direct = None


def clear_plans() -> None:
    """Forget every plan (tests; a process that changes Triton's cache)."""
    with _PLANS_LOCK:
        PLANS.clear()
        INVARIANT_PLANS.clear()


def plan_count() -> int:
    """Plans held now (both modes)."""
    return len(PLANS) + len(INVARIANT_PLANS)


__all__ = [
    "INVARIANT_PLANS",
    "INVARIANT_ROWS",
    "MAX_PLANS",
    "PLANS",
    "LaunchPlan",
    "check_batch_invariant",
    "clear_plans",
    "current_device",
    "current_stream",
    "invariant_config",
    "launch_canonical",
    "out_allowed",
    "plan_count",
    "planned_rms_norm",
    "refuse_direct",
]
