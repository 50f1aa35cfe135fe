"""Run kernel's launch mode, Qt-free: the default launch (the layout ``choose_config`` picks for
the batch's shape) or the batch-invariant one (``kernels.plans.invariant_config``: one layout per
width and dtype, so every row gets the same bits in any batch), and the layout a run launched.

A run of the bundled kernel carries its :class:`Launch` (a :class:`LaunchedRun`); a check proves
the launch of the mode it ran in (``check --batch-invariant``). Evidence of the other mode than
the one chosen now is stale (:func:`stale_reason`), as evidence of another kernel is.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from inspector.check.results import KernelRun

#: What the mode is, for the control's tooltip and the menu.
TOOLTIP = "one layout per width and dtype: every row gets the same bits in any batch"


def mode_name(batch_invariant: bool) -> str:
    """ "batch-invariant" or "default"."""
    return "batch-invariant" if batch_invariant else "default"


@dataclass(frozen=True)
class Launch:
    """The layout one run of the bundled kernel launched.

    Attributes:
        batch_invariant: launched with ``invariant_config`` (True) or the default choice.
        path: "one_row", "multi_row" or "column_loop".
        block: lanes per row (the column loop's chunk).
        num_warps: warps per program.
        rows_per_program: rows each program reduces.
        peel: the tile kernel's peel (elements; 0: not peeled).
    """

    batch_invariant: bool
    path: str
    block: int
    num_warps: int
    rows_per_program: int
    peel: int = 0

    @classmethod
    def of_checked(cls, run: Any, batch_invariant: bool) -> Launch:
        """The layout a ``kernels.CheckedRun`` reports it launched."""
        return cls(
            batch_invariant=bool(batch_invariant),
            path=str(run.path),
            block=int(run.block),
            num_warps=int(run.num_warps),
            rows_per_program=int(run.rows_per_program),
            peel=int(run.peel),
        )

    @property
    def mode(self) -> str:
        return mode_name(self.batch_invariant)

    def words(self) -> str:
        """ "batch-invariant launch: multi_row, block 64, 4 warps, 16 rows per program"."""
        rows = "1 row" if self.rows_per_program == 1 else f"{self.rows_per_program} rows"
        peel = f", peel {self.peel}" if self.peel else ""
        warps = "1 warp" if self.num_warps == 1 else f"{self.num_warps} warps"
        return (
            f"{self.mode} launch: {self.path}, block {self.block}, {warps}, "
            f"{rows} per program{peel}"
        )


@dataclass(frozen=True)
class LaunchedRun(KernelRun):
    """A ``KernelRun`` of Run kernel with the launch it made."""

    launch: Launch | None = None

    @classmethod
    def of(cls, run: KernelRun, launch: Launch) -> LaunchedRun:
        return cls(**{f.name: getattr(run, f.name) for f in fields(KernelRun)}, launch=launch)


def run_mode(run: Any) -> bool | None:
    """The launch mode of a kernel run: True / False, or None where none applies (a user's
    kernel, whose launcher is its own); a bundled run without a launch ran the default."""
    if run is None or getattr(run, "path", "") == "user":
        return None
    launch = getattr(run, "launch", None)
    return bool(launch.batch_invariant) if launch is not None else False


def check_mode(result: Any) -> bool | None:
    """The launch mode of a check's kernel run (None: no bundled kernel ran): the check's own
    ``batch_invariant`` where it has one, else its run's."""
    mode = run_mode(getattr(result, "kernel", None))
    if mode is None:
        return None
    return bool(getattr(result, "batch_invariant", False)) or mode


def stale_reason(evidence_mode: bool | None, chosen: bool) -> str:
    """Why evidence launched in ``evidence_mode`` does not hold while ``chosen`` is the mode
    ("" when it does, or when no mode applies)."""
    if evidence_mode is None or bool(evidence_mode) == bool(chosen):
        return ""
    return f"of the {mode_name(evidence_mode)} launch, not the {mode_name(chosen)}{_CHOSEN}"


#: The end of every :func:`stale_reason`.
_CHOSEN = " launch chosen now"


def of_other_mode(stale: str) -> bool:
    """Whether a record's ``stale`` reason is :func:`stale_reason`'s (another launch mode)."""
    return stale.startswith("of the ") and stale.endswith(_CHOSEN)
