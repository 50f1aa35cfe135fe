"""The ``candidate`` implementation: the user's kernel of ``bench --kernel FILE.py:FUNCTION``,
timed beside the bundled kernel and the peers under the same protocol.

The launcher's contract is ``FUNCTION(x, weight, eps, out=None) -> y``
(:mod:`kernels.sandbox.usercode`); the benchmark calls it as ``FUNCTION(x, weight, eps)``, like
``ours`` and the peers, each call allocating its output.

Timing needs CUDA events and graph capture around calls made in this process, so, unlike
``check`` and ``mutate``, the benchmark imports the user's file into its own process. Before
that, :func:`prepare_candidate` runs a preflight in a child process
(:class:`kernels.sandbox.usercode.UserKernel`): the file must import and name a callable, and for
each benchmarked dtype the launcher must return, on a small input with a masked tail, an output that
passes the float64 parity check, with no store outside its rows (guarded ``out=`` buffer) and
none into ``x``. A kernel that crashes, hangs, raises, is wrong or stores out of bounds there
fails with one line and nothing is timed. What the preflight cannot see: a fault at a benchmark
shape it did not run (a wider row, another launch layout). Such a fault happens in the
benchmark's process: an illegal memory access ends the run (``results.partial.jsonl`` keeps what
was measured), a hang hangs it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kernels.bench.impls import Prepared
from kernels.bench.parity import check_parity, make_parity_input, make_weight
from kernels.bench.shapes import DTYPES, Shape
from kernels.sandbox.usercode import RUN_TIMEOUT_S, KernelSpec, KernelSpecError, UserKernel

CANDIDATE = "candidate"
#: The preflight's input: a few rows, the last tile's lanes partly masked (200 of 256).
PREFLIGHT_SHAPE = Shape(4, 200)
#: The guard and padding fill of the preflight's buffers (as
# ``kernels.instruments.checked.POISON``).
PREFLIGHT_POISON = -3072.0
# Characters of a child's error kept on the one line a refusal prints.
_DETAIL_CHARS = 400


class CandidateError(RuntimeError):
    """The candidate cannot be timed; ``exit_code`` 2 (not a kernel) or 1 (it failed)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= _DETAIL_CHARS else line[: _DETAIL_CHARS - 3] + "..."


def _spec_label(spec: KernelSpec) -> str:
    return f"--kernel {spec.path}:{spec.function}"


def _preflight_one(
    kernel: UserKernel, spec: KernelSpec, dtype_key: str, eps: float
) -> dict[str, Any]:
    """One child-process run of the kernel on the preflight input in ``dtype_key``.

    Raises:
        CandidateError: (exit 1) it crashed, hung, raised, stored out of bounds or is wrong.
    """
    shape = PREFLIGHT_SHAPE
    dtype = DTYPES[dtype_key]
    generator = torch.Generator().manual_seed(20_260_101)
    x = make_parity_input(shape, dtype, "cpu", generator=generator)
    weight = make_weight(shape.width, dtype, "cpu", generator=generator)
    block = 1 << max(0, (shape.width - 1).bit_length())
    run = kernel.run(
        x.to(torch.float64).numpy(),  # exact: every value is one of dtype's
        weight.to(torch.float64).numpy(),
        eps=eps,
        dtype=dtype_key,
        x_stride=shape.width,
        y_stride=shape.width + block,
        poison=PREFLIGHT_POISON,
        guard=block,
    )
    where = f"{_spec_label(spec)} failed the preflight ({dtype_key}, {shape.rows}x{shape.width})"
    if run.outcome != "ok" or run.y is None:
        raise CandidateError(f"{where}: {run.outcome}: {_one_line(run.detail)}", 1)
    if run.oob_writes or run.x_writes:
        raise CandidateError(
            f"{where}: {len(run.oob_writes)} store(s) outside its output rows and "
            f"{len(run.x_writes)} into x; not run in the benchmark's process",
            1,
        )
    y = torch.from_numpy(np.ascontiguousarray(run.y)).to(dtype)  # exact: the child's dtype values
    parity = check_parity(y, x, weight, eps)
    if not parity.passed:
        raise CandidateError(f"{where}: wrong result: {parity.reason}", 1)
    return {
        "dtype": dtype_key,
        "rows": shape.rows,
        "width": shape.width,
        "outcome": run.outcome,
        "out_refused": run.refused_out,
        "parity": parity.as_dict(),
    }


def preflight(
    spec: KernelSpec, dtypes: list[str], eps: float, *, run_timeout_s: float = RUN_TIMEOUT_S
) -> tuple[str, list[dict[str, Any]]]:
    """Run the kernel in a child process on the preflight input, once per dtype.

    Returns:
        The child's mode ("compiled" or "interpreter") and one record per dtype.

    Raises:
        CandidateError: exit 2 when the file does not import or names no callable (the
            child's message), exit 1 when a run fails (crash, hang, exception, a store outside
            the output, a wrong result).
    """
    try:
        with UserKernel(spec, run_timeout_s=run_timeout_s) as kernel:
            records = [_preflight_one(kernel, spec, key, eps) for key in dtypes]
            return kernel.mode, records
    except KernelSpecError as err:
        raise CandidateError(_one_line(str(err)), 2) from None


def load_launcher(spec: KernelSpec) -> Callable[..., Any]:
    """Import the kernel file into this process and return its launcher.

    The file's folder goes first on ``sys.path`` (so it imports its siblings, as in the child);
    the file is hashed again after the import, so the code timed is the code named.

    Raises:
        CandidateError: (exit 2) the import fails, the name is not callable, or the file's
            bytes changed since it was named.
    """
    label = _spec_label(spec)
    folder = str(spec.path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module_spec = importlib.util.spec_from_file_location("rmsnorm_bench_candidate", spec.path)
    if module_spec is None or module_spec.loader is None:
        raise CandidateError(f"{label}: cannot import it as a Python module", 2)
    module = importlib.util.module_from_spec(module_spec)
    # Registered before it runs, as an import would (dataclasses and pickling look it up).
    sys.modules[module_spec.name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as err:
        del sys.modules[module_spec.name]
        raise CandidateError(f"{label}: {type(err).__name__}: {_one_line(str(err))}", 2) from None
    launcher = getattr(module, spec.function, None)
    if not callable(launcher):
        raise CandidateError(f"{label}: {spec.function!r} is not a function of the file", 2)
    now = hashlib.sha256(Path(spec.path).read_bytes()).hexdigest()
    if now != spec.sha256:
        raise CandidateError(
            f"{label}: the file changed since it was named (sha256 {spec.sha256[:12]}... then, "
            f"{now[:12]}... now)",
            2,
        )
    return launcher


class CandidatePreparer:
    """The :data:`~kernels.bench.impls.Preparer` of ``candidate``; ``label`` leads every note
    of its rows (the harness keeps it there whatever else the note says)."""

    def __init__(self, spec: KernelSpec, launcher: Callable[..., Any]) -> None:
        self.launcher = launcher
        self.label = f"{spec.path}:{spec.function} sha256 {spec.sha256}"

    def __call__(
        self, shape: Shape, dtype: torch.dtype, eps: float, device: torch.device
    ) -> Prepared:
        launcher = self.launcher

        def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
            return launcher(x, weight, eps)

        return Prepared(call=call, note=self.label, time_if_wrong=False)


@dataclasses.dataclass
class Candidate:
    """A user kernel that passed its preflight and is imported, ready to be timed."""

    spec: KernelSpec
    mode: str
    preflight: list[dict[str, Any]]
    launcher: Callable[..., Any]

    def preparer(self) -> CandidatePreparer:
        return CandidatePreparer(self.spec, self.launcher)

    def info(self) -> dict[str, Any]:
        """The ``implementations.candidate`` entry of ``results.json``."""
        return {
            "name": CANDIDATE,
            "available": True,
            **kernel_record(self.spec),
            "preflight_mode": self.mode,
            "preflight": self.preflight,
            "isolation": "preflight in a child process; timed in the benchmark's process",
        }


def kernel_record(spec: KernelSpec) -> dict[str, str]:
    """``{"path", "function", "sha256"}`` of the kernel file (the record names it so)."""
    return {"path": str(spec.path), "function": spec.function, "sha256": spec.sha256}


def prepare_candidate(
    spec: KernelSpec, dtypes: list[str], eps: float, *, run_timeout_s: float = RUN_TIMEOUT_S
) -> Candidate:
    """The preflight in a child process, then the import into this one.

    Raises:
        CandidateError: see :func:`preflight` and :func:`load_launcher`.
    """
    mode, records = preflight(spec, dtypes, eps, run_timeout_s=run_timeout_s)
    return Candidate(spec, mode, records, load_launcher(spec))
