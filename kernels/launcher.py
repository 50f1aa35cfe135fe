"""The checked launcher of the RMSNorm kernels: argument checks, mutant codes, the launch.

:func:`validate` holds every check of the public door ``kernels.rms_norm`` (:mod:`kernels.api`),
in order, and raises a ``TypeError`` / ``ValueError`` that names the argument and the bound;
:func:`launch` is the door for already validated 2-D views (the check mode, the tests and the
benchmark). Semantics are
``torch.nn.functional.rms_norm``'s: the output dtype is the input dtype, also when the weight is
float32, and the result is rounded to it once. Import through ``kernels`` (``kernels.mode``
decides interpreter or compiled first).
"""

from __future__ import annotations

import contextlib
import math
import numbers
import threading
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np
import torch

from kernels import jit
from kernels.geometry import kernel_constexprs, peel_elements, settled, vector_width
from kernels.layout import LaunchConfig, choose_config, sm_count_for
from kernels.mode import INTERPRETER, MODE

# Widest row the launcher accepts: every transformer hidden size in use (<= 16384) with 4x
# margin. Rows wider than 8192 lanes run in the column loop (kernels.layout), which would take
# wider rows too; nothing wider is measured.
MAX_WIDTH = 65536

EPS_MIN = 1e-12
EPS_MAX = 1e-2

SUPPORTED_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}

# Names shared by value with oracle.mutants (docs/INTERFACES.md); order is display order.
KERNEL_MUTANTS: tuple[str, ...] = (
    "sum_instead_of_mean",
    "missing_square",
    "missing_epsilon",
    "masked_tail_inclusion",
    "missing_weight",
    "wrong_row_stride",
    "half_accumulation",
    "eps_outside_root",
    "unmasked_store",
)

# half_accumulation squares and sums in the launch's input dtype: one code per half dtype, and
# a float32 launch (where the input dtype is float32) runs the real kernel.
HALF_ACCUMULATION_CODES: dict[torch.dtype, int] = {
    torch.float16: jit.HALF_ACCUMULATION_FLOAT16.value,
    torch.bfloat16: jit.HALF_ACCUMULATION_BFLOAT16.value,
}

# The kernels' MUTANT code of each other name (kernels.jit's constant of the same name, upper
# case).
MUTANT_CODES: dict[str, int] = {
    name: getattr(jit, name.upper()).value for name in KERNEL_MUTANTS if name != "half_accumulation"
}

# CUDA's grid x dimension limit (at most one program per row).
MAX_ROWS = 2**31 - 1

# Largest row stride (elements) of x and out: the kernels take a stride as a 32-bit integer
# divided by the vector width and multiply it back in 32 bits, so a stride of 2**31 or more
# (with a vector width dividing it) would wrap and address another row.
MAX_ROW_STRIDE = 2**31 - 1

# The interpreter is not thread-safe (it patches triton.language while a launch runs), so every
# interpreted launch goes through this lock. Compiled launches are enqueued without it.
_INTERPRETER_LOCK = threading.Lock()


def mutant_code(mutant: str | None, dtype: torch.dtype = torch.float32) -> int:
    """The kernels' ``MUTANT`` constexpr for ``mutant`` on a launch of ``dtype``.

    Args:
        mutant: one of ``KERNEL_MUTANTS``, or None for the real kernel.
        dtype: the launch's input dtype (``half_accumulation``'s code depends on it).

    Returns:
        The mutant's code; ``jit.FAITHFUL`` (0) for None.

    Raises:
        ValueError: an unknown name.
    """
    if mutant is None:
        return jit.FAITHFUL.value
    if mutant not in KERNEL_MUTANTS:
        raise ValueError(
            f"mutant must be None or one of {', '.join(KERNEL_MUTANTS)}; got {mutant!r}"
        )
    if mutant == "half_accumulation":
        return HALF_ACCUMULATION_CODES.get(dtype, jit.FAITHFUL.value)
    return MUTANT_CODES[mutant]


@contextlib.contextmanager
def _launch_guard(device: torch.device) -> Iterator[None]:
    """Serialize interpreter launches; select ``device`` for compiled ones."""
    if MODE == INTERPRETER:
        # The interpreter evaluates with numpy: keep its float errors (rsqrt of a negative
        # mean in a mutant, 0 * inf) silent, as they are in compiled code, where they just
        # produce NaN/inf in the output.
        with _INTERPRETER_LOCK, np.errstate(all="ignore"):
            yield
    elif device.type == "cuda":
        with torch.cuda.device(device):
            yield
    else:
        yield


def _check_config(config: object) -> LaunchConfig:
    if not isinstance(config, LaunchConfig):
        raise TypeError(f"config must be a LaunchConfig or None; got {type(config).__name__}")
    for name in ("block", "num_warps", "rows_per_program"):
        value = getattr(config, name)
        if value < 1 or value & (value - 1):
            raise ValueError(f"config.{name} must be a power of two >= 1; got {value}")
    if config.block2 < 0 or config.block2 & (config.block2 - 1):
        raise ValueError(f"config.block2 must be 0 or a power of two; got {config.block2}")
    if not isinstance(config.ordered, bool):
        raise TypeError(f"config.ordered must be a bool; got {type(config.ordered).__name__}")
    if config.loop and config.rows_per_program != 1:
        raise ValueError(
            f"config.rows_per_program must be 1 for the column loop (one program per row); "
            f"got {config.rows_per_program}"
        )
    return config


class Launched(NamedTuple):
    """What :func:`launch_kernel` launched, for :mod:`kernels.plans` to launch again directly."""

    config: LaunchConfig
    rows: int
    compiled: object  # Triton's compiled kernel (None on the interpreter)
    scalars: tuple[int, int, int]  # width_v, x_stride_v, y_stride_v
    tail: tuple[object, ...]  # the constexpr values in the kernel's parameter order
    grid: int
    peel: int  # the tile kernel's PEEL (0: not peeled, and on the column loop)
    # The layout constexprs as launched (MUTANT and the rstd ones aside): the coverage map's key.
    layout: tuple[tuple[str, object], ...] = ()


def launch_kernel(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    y2d: torch.Tensor,
    eps: float,
    *,
    mutant: str | None = None,
    config: LaunchConfig | None = None,
    wrap: Callable[[object], object] | None = None,
    rstd: torch.Tensor | None = None,
    in_place: bool | None = None,
) -> Launched:
    """:func:`launch`, returning what was launched (the compiled kernel among it).

    ``wrap`` wraps the Triton kernel before its launch (``torch.library.wrap_triton``: a launch
    torch.compile can trace). ``rstd``: a float32 ``(rows,)`` tensor on x's device that gets
    each row's rrms as the kernel computed it (None: the kernels store none, compiled out).
    ``in_place``: whether y is x (a row in parts then runs as one program); None reads it from
    the data pointers. A caller tracing on fake tensors, which have none, says it.

    Raises:
        ValueError: an ``rstd`` that is not a contiguous float32 ``(rows,)`` tensor on x's
            device.
    """
    # int(): under torch.compile the sizes can be symbolic; the launch layout is chosen for
    # concrete ones (each shape its own graph).
    rows, width = int(x2d.shape[0]), int(x2d.shape[1])
    itemsize = x2d.element_size()
    if config is None:
        config = choose_config(rows, width, itemsize, sm_count_for(x2d.device))
    config = _check_config(config)
    x_stride, y_stride = int(x2d.stride(0)), int(y2d.stride(0))
    vec = vector_width(width, x_stride, y_stride, itemsize)
    peel = peel_elements(config, width, vec, x_stride, y_stride, itemsize)
    if in_place is None:
        in_place = y2d.data_ptr() == x2d.data_ptr()
    config = settled(config, width, peel, in_place=in_place)
    constexprs = kernel_constexprs(config, width, vec, rows, peel)
    layout = tuple(constexprs.items())
    constexprs["MUTANT"] = mutant_code(mutant, x2d.dtype)
    if rstd is not None:
        _check_rstd(rstd, rows, x2d.device)
    constexprs["rstd_ptr"] = rstd
    constexprs["STORE_RSTD"] = rstd is not None
    kernel = jit.rms_norm_loop_kernel if config.loop else jit.rms_norm_tile_kernel
    runner = kernel if wrap is None else wrap(kernel)
    scalars = (width // vec, x_stride // vec, y_stride // vec)
    grid = config.grid(rows)
    with _launch_guard(x2d.device):
        compiled = runner[(grid,)](
            x2d,
            weight,
            y2d,
            rows,
            *scalars,
            float(eps),
            num_warps=config.num_warps,
            **constexprs,
        )
    tail = ()
    if compiled is not None and wrap is None:
        tail = tuple(constexprs[name] for name in kernel.arg_names[_RUNTIME_ARGS:])
    return Launched(config, rows, compiled, scalars, tail, grid, peel, layout)


# The kernels' runtime parameters (x, w, y, rows, width_v, x_stride_v, y_stride_v, eps); the
# constexprs follow them (and the optional rstd pointer, None but where the caller wants it).
_RUNTIME_ARGS = 8


def _check_rstd(rstd: object, rows: int, device: torch.device) -> None:
    if not (
        isinstance(rstd, torch.Tensor)
        and rstd.dtype == torch.float32
        and tuple(rstd.shape) == (rows,)
        and rstd.is_contiguous()
        and rstd.device == device
    ):
        described = (
            f"{'' if rstd.is_contiguous() else 'non-contiguous '}{rstd.dtype} "
            f"{tuple(rstd.shape)} on {rstd.device}"
            if isinstance(rstd, torch.Tensor)
            else type(rstd).__name__
        )
        raise ValueError(
            f"rstd must be a contiguous float32 tensor of shape ({rows},) on {device}; "
            f"got {described}"
        )


def launch(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    y2d: torch.Tensor,
    eps: float,
    *,
    mutant: str | None = None,
    config: LaunchConfig | None = None,
) -> LaunchConfig:
    """Launch on already validated 2-D views; the internal, testing and benchmarking door.

    Args:
        x2d: ``(rows, width)`` view with unit column stride (any row stride), ``rows >= 1``.
        weight: ``(width,)``, contiguous.
        y2d: the output, a view like ``x2d``.
        eps: passed to the kernel as float32.
        mutant: None for the real kernel, else one of ``KERNEL_MUTANTS``.
        config: the launch layout; None uses :func:`kernels.layout.choose_config`.

    Returns:
        The config launched.

    Raises:
        ValueError / TypeError: an unknown mutant or an unusable ``config``.
    """
    return launch_kernel(x2d, weight, y2d, eps, mutant=mutant, config=config).config


class Validated(NamedTuple):
    """Arguments of :func:`rms_norm` after :func:`validate`."""

    x2d: torch.Tensor  # (rows, width) view of x, no copy
    eps: float
    rows: int
    width: int


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check_device(name: str, tensor: torch.Tensor) -> None:
    if tensor.device.type == "cuda":
        return
    if MODE == INTERPRETER and tensor.device.type == "cpu":
        return
    allowed = "cuda or cpu (Triton interpreter mode)" if MODE == INTERPRETER else "cuda"
    raise ValueError(f"{name} must be on a {allowed} device in {MODE} mode; got {tensor.device}")


def rows_view(name: str, tensor: torch.Tensor, width: int) -> torch.Tensor:
    """``tensor`` as a (rows, width) view with one row stride, or a ValueError (never a copy)."""
    try:
        return tensor.view(-1, width)
    except RuntimeError as err:
        raise ValueError(
            f"{name}'s leading dimensions must flatten to one row stride without a copy; "
            f"got shape {tuple(tensor.shape)} with strides {tensor.stride()} "
            f"(call .contiguous() first)"
        ) from err


def check_eps(eps: object) -> float:
    """``eps`` as a float, or the TypeError / ValueError naming its bounds."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"eps must be a real number in [{EPS_MIN:g}, {EPS_MAX:g}]; got {eps!r}")
    value = float(eps)
    if not math.isfinite(value):
        raise ValueError(f"eps must be finite, in [{EPS_MIN:g}, {EPS_MAX:g}]; got {value!r}")
    if not EPS_MIN <= value <= EPS_MAX:
        raise ValueError(f"eps must be in [{EPS_MIN:g}, {EPS_MAX:g}]; got {value!r}")
    return value


def check_out_shape(out: object, x: torch.Tensor) -> torch.Tensor:
    """``out``'s type, shape, dtype and device against ``x`` (the checks that need no strides)."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor or None; got {type(out).__name__}")
    if out.shape != x.shape:
        raise ValueError(f"out.shape must equal x.shape {tuple(x.shape)}; got {tuple(out.shape)}")
    if out.dtype != x.dtype:
        raise TypeError(
            f"out.dtype must equal x.dtype ({_dtype_name(x.dtype)}); got {_dtype_name(out.dtype)}"
        )
    if out.device != x.device:
        raise ValueError(f"out must be on x's device {x.device}; got {out.device}")
    return out


def _check_row_stride(name: str, tensor2d: torch.Tensor) -> None:
    if tensor2d.shape[0] > 1 and tensor2d.stride(0) > MAX_ROW_STRIDE:
        raise ValueError(
            f"{name}'s row stride must be at most {MAX_ROW_STRIDE} elements (2**31 - 1: the "
            f"kernels hold strides in 32 bits); got {tensor2d.stride(0)}"
        )


def _check_out(out_arg: object, x: torch.Tensor, width: int) -> None:
    out = check_out_shape(out_arg, x)
    if width > 1 and out.stride(-1) != 1:
        raise ValueError(f"out.stride(-1) must be 1 (contiguous columns); got {out.stride(-1)}")
    out2d = rows_view("out", out, width)
    if out2d.shape[0] > 1 and out2d.stride(0) < width:
        raise ValueError(
            f"out's row stride must be >= width ({width}) so rows do not overlap; "
            f"got {out2d.stride(0)}"
        )
    _check_row_stride("out", out2d)
    same_storage = (
        out.numel() > 0
        and x.numel() > 0
        and out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    )
    if same_storage and (out.data_ptr() != x.data_ptr() or out.stride() != x.stride()):
        raise ValueError(
            "out shares memory with x but is not x itself; in-place needs the same "
            "offset and strides, any other overlap would let one row overwrite another's input"
        )


def validate(x: object, weight: object, eps: object = 1e-6, out: object | None = None) -> Validated:
    """Check the arguments of :func:`rms_norm` (every check, in its order); allocate nothing.

    Args and Raises: as :func:`rms_norm`.

    Returns:
        Validated: ``x`` as a ``(rows, width)`` view, eps as a float, rows and width.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor; got {type(x).__name__}")
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"weight must be a torch.Tensor; got {type(weight).__name__}")
    allowed = ", ".join(SUPPORTED_DTYPES)
    if x.dtype not in SUPPORTED_DTYPES.values():
        raise TypeError(f"x.dtype must be one of {allowed}; got {_dtype_name(x.dtype)}")
    if weight.dtype not in (x.dtype, torch.float32):
        raise TypeError(
            f"weight.dtype must be x.dtype ({_dtype_name(x.dtype)}) or float32; "
            f"got {_dtype_name(weight.dtype)}"
        )
    eps_value = check_eps(eps)
    _check_device("x", x)
    if weight.device != x.device:
        raise ValueError(f"weight must be on x's device {x.device}; got {weight.device}")
    if x.dim() < 1:
        raise ValueError("x must have at least 1 dimension (..., width); got a 0-d tensor")
    width = x.shape[-1]
    if not 1 <= width <= MAX_WIDTH:
        raise ValueError(f"x.shape[-1] (width) must be in [1, {MAX_WIDTH}]; got {width}")
    if tuple(weight.shape) != (width,):
        raise ValueError(f"weight.shape must be (width,) = ({width},); got {tuple(weight.shape)}")
    if width > 1 and weight.stride(0) != 1:
        raise ValueError(f"weight must be contiguous (stride 1); got stride {weight.stride(0)}")
    if width > 1 and x.stride(-1) != 1:
        raise ValueError(
            f"x.stride(-1) must be 1 (contiguous columns); got {x.stride(-1)} "
            f"(call x.contiguous() first)"
        )
    rows = x.numel() // width
    if rows > MAX_ROWS:
        raise ValueError(f"x has {rows} rows; at most {MAX_ROWS} (grid limit)")
    x2d = rows_view("x", x, width)
    _check_row_stride("x", x2d)
    if out is not None:
        _check_out(out, x, width)
    return Validated(x2d=x2d, eps=eps_value, rows=rows, width=width)
