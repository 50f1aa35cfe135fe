"""The real kernel within the derived error bound (oracle.error_bound) on every kernel path,
on the fixtures that carry numbers: under the interpreter on a CPU (truncating float32 ->
bfloat16), compiled on a GPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_cases import TORCH_DTYPES

import kernels
from kernels import launcher, layout
from oracle import error_bound as eb
from oracle import fixtures, scalar

DEVICE = "cuda" if kernels.MODE == "compiled" else "cpu"
FIXTURES = [
    "hand_checkable", "non_power_of_two_tail", "asymmetric_weights", "float16_rows",
    "bfloat16_rows", "width_255", "extreme_element", "min_eps", "max_eps", "zero_row",
    "padded_row_stride",
]  # fmt: skip


def _run(problem, path: str):
    dtype = TORCH_DTYPES[problem.dtype]
    rows, width, stride = problem.rows, problem.width, problem.row_stride
    storage = torch.zeros(rows * stride, dtype=dtype, device=DEVICE)
    x = storage.as_strided((rows, width), (stride, 1))
    x.copy_(torch.tensor(np.asarray(problem.x)).to(dtype))
    weight = torch.tensor(np.asarray(problem.weight)).to(dtype).to(DEVICE)
    out = torch.empty(rows, width, dtype=dtype, device=DEVICE)
    config = layout.forced_config(path, rows, width, x.element_size())
    checked = kernels.validate(x, weight, problem.eps, out)
    launched = launcher.launch(checked.x2d, weight, out, checked.eps, config=config)
    return out.double().cpu().numpy(), launched


@pytest.mark.parametrize("path", kernels.KERNEL_PATHS)
@pytest.mark.parametrize("name", FIXTURES)
def test_the_kernel_is_within_the_derived_bound(name: str, path: str) -> None:
    problem = fixtures.get(name).build()
    y, config = _run(problem, path)
    chunks = -(-problem.width // config.block) if config.loop else 1
    adds = eb.tree_adds(problem.width, chunks, peeled=bool(config.peel))
    truncating = kernels.MODE == "interpreter" and problem.dtype == "bfloat16"
    exact = scalar.reference(problem).y_exact
    bound = eb.element_bounds(problem, exact, adds, truncating)
    error = np.abs(y - exact)
    worst = np.unravel_index(int(np.argmax(error / bound)), error.shape)
    assert (error <= bound).all(), (
        f"{name} {path}: error {error[worst]:.3g} > bound {bound[worst]:.3g} at {worst}"
    )
