"""Every rejection of the public launcher: the exception type and a message naming the bound."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest
import torch

import kernels

DEVICE = "cuda" if kernels.MODE == "compiled" else "cpu"
W = 8


def _x(rows: int = 2, width: int = W, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.ones(rows, width, dtype=dtype, device=DEVICE)


def _w(width: int = W, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.ones(width, dtype=dtype, device=DEVICE)


REJECTIONS = [
    # (case id, callable arguments, exception, message pattern)
    ("x_not_tensor", lambda: ([[1.0] * W], _w()), TypeError, r"x must be a torch\.Tensor"),
    ("weight_not_tensor", lambda: (_x(), [1.0] * W), TypeError, r"weight must be a torch\.Tensor"),
    (
        "x_int32",
        lambda: (_x().int(), _w()),
        TypeError,
        r"x\.dtype must be one of float32, float16, bfloat16; got int32",
    ),
    ("x_float64", lambda: (_x().double(), _w()), TypeError, r"x\.dtype .* got float64"),
    (
        "weight_other_half_dtype",
        lambda: (_x(dtype=torch.bfloat16), _w(dtype=torch.float16)),
        TypeError,
        r"weight\.dtype must be x\.dtype \(bfloat16\) or float32; got float16",
    ),
    ("x_0d", lambda: (torch.tensor(1.0, device=DEVICE), _w(1)), ValueError, r"at least 1 dim"),
    (
        "width_zero",
        lambda: (_x(width=0), _w(0)),
        ValueError,
        r"x\.shape\[-1\] \(width\) must be in \[1, 65536\]; got 0",
    ),
    (
        "width_over_max",
        lambda: (
            _x(1, kernels.MAX_WIDTH + 1, torch.float16),
            _w(kernels.MAX_WIDTH + 1, torch.float16),
        ),
        ValueError,
        r"width\) must be in \[1, 65536\]; got 65537",
    ),
    (
        "weight_wrong_length",
        lambda: (_x(), _w(W + 1)),
        ValueError,
        r"weight\.shape must be \(width,\) = \(8,\); got \(9,\)",
    ),
    ("weight_2d", lambda: (_x(), _w().reshape(2, 4)), ValueError, r"weight\.shape must be"),
    (
        "weight_strided",
        lambda: (_x(), _w(2 * W)[::2]),
        ValueError,
        r"weight must be contiguous \(stride 1\); got stride 2",
    ),
    (
        "x_strided_columns",
        lambda: (_x(2, 2 * W)[:, ::2], _w()),
        ValueError,
        r"x\.stride\(-1\) must be 1 \(contiguous columns\); got 2",
    ),
    (
        "x_leading_dims_not_flattenable",
        lambda: (torch.ones(3, 4, W, device=DEVICE).transpose(0, 1), _w()),
        ValueError,
        r"x's leading dimensions must flatten to one row stride",
    ),
    (
        "x_on_meta_device",
        lambda: (torch.ones(2, W, device="meta"), torch.ones(W, device="meta")),
        ValueError,
        r"x must be on a cuda",
    ),
    (
        "weight_on_other_device",
        lambda: (_x(), torch.ones(W, device="meta")),
        ValueError,
        r"weight must be on x's device",
    ),
]


@pytest.mark.parametrize(
    ("make_args", "error", "pattern"),
    [pytest.param(make, err, pat, id=case) for case, make, err, pat in REJECTIONS],
)
def test_launcher_rejects(make_args, error: type[Exception], pattern: str) -> None:
    x, weight = make_args()
    with pytest.raises(error, match=pattern):
        kernels.rms_norm(x, weight)


@pytest.mark.parametrize(
    ("eps", "error", "pattern"),
    [
        pytest.param(
            "1e-6", TypeError, r"eps must be a real number in \[1e-12, 0\.01\]", id="text"
        ),
        pytest.param(None, TypeError, r"eps must be a real number", id="none"),
        pytest.param(True, TypeError, r"eps must be a real number", id="bool"),
        pytest.param(math.nan, ValueError, r"eps must be finite", id="nan"),
        pytest.param(math.inf, ValueError, r"eps must be finite", id="inf"),
        pytest.param(0.0, ValueError, r"eps must be in \[1e-12, 0\.01\]; got 0\.0", id="zero"),
        pytest.param(-1e-6, ValueError, r"eps must be in \[1e-12, 0\.01\]", id="negative"),
        pytest.param(1e-13, ValueError, r"eps must be in \[1e-12, 0\.01\]; got 1e-13", id="tiny"),
        pytest.param(0.02, ValueError, r"eps must be in \[1e-12, 0\.01\]; got 0\.02", id="large"),
    ],
)
def test_launcher_rejects_eps(eps: object, error: type[Exception], pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        kernels.rms_norm(_x(), _w(), eps)


OUT_REJECTIONS = [
    ("out_not_tensor", lambda x: [0.0], TypeError, r"out must be a torch\.Tensor or None"),
    (
        "out_wrong_shape",
        lambda x: torch.empty(2, W + 1, device=DEVICE),
        ValueError,
        r"out\.shape must equal x\.shape \(2, 8\)",
    ),
    (
        "out_wrong_dtype",
        lambda x: torch.empty(2, W, dtype=torch.float16, device=DEVICE),
        TypeError,
        r"out\.dtype must equal x\.dtype \(float32\); got float16",
    ),
    (
        "out_other_device",
        lambda x: torch.empty(2, W, device="meta"),
        ValueError,
        r"out must be on x's device",
    ),
    (
        "out_strided_columns",
        lambda x: torch.empty(2, 2 * W, device=DEVICE)[:, ::2],
        ValueError,
        r"out\.stride\(-1\) must be 1",
    ),
    (
        "out_overlapping_rows",
        lambda x: torch.empty(1, W, device=DEVICE).expand(2, W),
        ValueError,
        r"out's row stride must be >= width \(8\) so rows do not overlap; got 0",
    ),
    (
        "out_partial_alias_of_x",
        lambda x: torch.as_strided(x, (2, W), (W, 1), 1),
        ValueError,
        r"out shares memory with x but is not x itself",
    ),
]


@pytest.mark.parametrize(
    ("make_out", "error", "pattern"),
    [pytest.param(make, err, pat, id=case) for case, make, err, pat in OUT_REJECTIONS],
)
def test_launcher_rejects_out(make_out, error: type[Exception], pattern: str) -> None:
    x = torch.ones(2, 2 * W, device=DEVICE)[:, :W]  # room after x for a shifted alias
    with pytest.raises(error, match=pattern):
        kernels.rms_norm(x, _w(), out=make_out(x))


def test_rejections_happen_before_any_write() -> None:
    out = torch.full((2, W), 5.0, device=DEVICE)
    with pytest.raises(ValueError, match="eps"):
        kernels.rms_norm(_x(), _w(), 1.0, out=out)
    assert torch.all(out == 5.0)


def test_kernels_package_has_no_assert_statements() -> None:
    # Checks must survive `python -O`: the launcher raises, it never asserts.
    package = Path(kernels.__file__).parent
    offenders = []
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        offenders += [
            f"{path.name}:{node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.Assert)
        ]
    assert not offenders, f"assert statements in kernels/: {offenders}"


def test_messages_name_the_argument() -> None:
    # Spot check of the house rule: the first word of each message is the argument.
    with pytest.raises(ValueError, match=re.escape("x.shape[-1] (width)")):
        kernels.rms_norm(_x(width=0), _w(0))


def _rows_with_stride(stride: int, width: int = 64) -> torch.Tensor:
    """Two bfloat16 rows ``stride`` elements apart; the storage (4 GiB here) is allocated but
    never touched, so no page of it is committed (only the checks run)."""
    storage = torch.empty(stride + width, dtype=torch.bfloat16, device=DEVICE)
    return storage.as_strided((2, width), (stride, 1))


def test_row_stride_at_its_bound_passes_and_one_past_is_refused() -> None:
    bound = kernels.launcher.MAX_ROW_STRIDE
    assert bound == 2**31 - 1
    weight = torch.ones(64, dtype=torch.bfloat16, device=DEVICE)
    assert kernels.launcher.validate(_rows_with_stride(bound), weight).rows == 2
    with pytest.raises(
        ValueError, match=r"^x's row stride must be at most 2147483647 elements .*; got 2147483648$"
    ):
        kernels.launcher.validate(_rows_with_stride(bound + 1), weight)
    x = torch.zeros(2, 64, dtype=torch.bfloat16, device=DEVICE)
    kernels.launcher.validate(x, weight, out=_rows_with_stride(bound))
    with pytest.raises(ValueError, match=r"^out's row stride must be at most 2147483647 elements"):
        kernels.launcher.validate(x, weight, out=_rows_with_stride(bound + 1))
    one_row = torch.empty(2**31 + 64, dtype=torch.bfloat16, device=DEVICE)
    # A single row has no row stride to wrap: its stride is never used.
    kernels.launcher.validate(one_row.as_strided((1, 64), (2**31, 1)), weight)
