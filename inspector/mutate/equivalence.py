"""Equivalent mutants: the ones whose compiled TTIR equals the original's, and the ones proven
unable to act.

The launch signatures come from the original kernel (:func:`record_launches`): its launcher is
dry-run in its child process (:meth:`kernels.sandbox.usercode.UserKernel.record`) on the layout of
every runnable fixture and of a sweep of problems (:data:`SWEEP_WIDTHS` x rows x dtypes x
contiguous and padded strides), so a mutant in a branch that only shapes outside the fixture
matrix take still compiles differently there and is not called equivalent for the fixtures'
blindness. Each signature is compiled to TTIR for sm_90 in a child
(:func:`kernels.sandbox.user_ttir.compile_ttir`), and compared by
:func:`kernels.instruments.ttir.canonical_digest` (locations, value names and the order of pure ops
do not count).

One more class is proven rather than compared (:func:`fill_unobserved`): a changed ``other=``
on a load whose every use is lane-wise arithmetic ending in stores masked by the load's own
mask. The fill value then only ever sits in lanes no store writes.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path
from typing import Any

from inspector.coverage import parsing
from kernels.instruments.ttir import strip_locations
from kernels.sandbox.user_ttir import compile_ttir
from kernels.sandbox.usercode import KernelSpec, UserKernel
from oracle import fixtures

# Widths of the sweep: tile sizes on both sides of each power of two, widths no 16-byte vector
# divides, aligned rows just past a power of two (two tiles: 576, 1152, 2176), rows past 8192
# lanes (the column loop) and the widest row; 4096 rows packs 576-wide 2-byte rows two a program.
SWEEP_WIDTHS = (1, 3, 8, 64, 70, 128, 500, 512, 513, 576, 1000, 1024, 1152, 2050, 2176, 3000,
                4096, 6001, 8192, 8193, 12001, 16384, 24577, 65536)  # fmt: skip
SWEEP_ROWS = (1, 3, 64, 4096, 20000)
SWEEP_DTYPES = ("float32", "float16", "bfloat16")
# Problems past this many bytes are left out of the sweep (the dry run allocates them).
SWEEP_MAX_BYTES = 128 << 20
COMPILE_TIMEOUT_S = 600.0


@dataclasses.dataclass(frozen=True)
class Baseline:
    """The original kernel's launch signatures and their TTIR, or why there are none.

    Attributes:
        launches: distinct launch signatures (``kernels.instruments.launches`` records).
        ttir: the original's TTIR per launch, with locations (for :func:`fill_unobserved`).
        digests: :func:`kernels.instruments.ttir.canonical_digest` of each.
        unsupported: why equivalence is not judged ("" when it is).
    """

    launches: tuple[dict[str, Any], ...] = ()
    ttir: tuple[str, ...] = ()
    digests: tuple[str, ...] = ()
    unsupported: str = ""


def _layouts() -> list[dict[str, Any]]:
    """(rows, width, dtype, strides, guard) of every fixture and of the sweep, in that order."""
    found = []
    for fixture in fixtures.FIXTURES:
        if fixture.check == "rejection":
            continue
        problem = fixture.build()
        block = problem.block
        found.append(
            {
                "rows": problem.rows,
                "width": problem.width,
                "dtype": problem.dtype,
                "x_stride": problem.row_stride,
                "y_stride": problem.width + block,
                "guard": block,
                "eps": problem.eps,
            }
        )
    for dtype in SWEEP_DTYPES:
        itemsize = 4 if dtype == "float32" else 2
        for width in SWEEP_WIDTHS:
            block = 1 << max(0, (width - 1).bit_length())
            for rows in SWEEP_ROWS:
                for stride in (width, width + 3):
                    if rows * (stride + block) * itemsize > SWEEP_MAX_BYTES:
                        continue
                    found.append(
                        {
                            "rows": rows,
                            "width": width,
                            "dtype": dtype,
                            "x_stride": stride,
                            "y_stride": stride,
                            "guard": block,
                        }
                    )
    # Problems of 64 MiB and more switch rows of 8 KiB and more to the column loop.
    for dtype, width in (("float32", 4096), ("bfloat16", 4096), ("bfloat16", 8192)):
        found.append(
            {
                "rows": 8192,
                "width": width,
                "dtype": dtype,
                "x_stride": width,
                "y_stride": width,
                "guard": width,
            }
        )
    return found


def record_launches(spec: KernelSpec, *, pythonpath_first: str = "") -> list[dict[str, Any]]:
    """The distinct launch signatures of the kernel over :func:`_layouts` (dry runs).

    Raises:
        RuntimeError: the launcher failed on a layout the fixtures use (the message says).
    """
    launches: list[dict[str, Any]] = []
    with UserKernel(spec, pythonpath_first=pythonpath_first) as kernel:
        for layout in _layouts():
            try:
                found = kernel.record(**layout)
            except RuntimeError:
                if "eps" in layout:  # a fixture's layout: the kernel must take it
                    raise
                continue  # a sweep layout the launcher refuses: not one it launches
            launches.extend(launch for launch in found if launch not in launches)
    return launches


def baseline(spec: KernelSpec, *, pythonpath_first: str = "") -> Baseline:
    """Record the original's launches and compile each to TTIR; never raises."""
    try:
        launches = record_launches(spec, pythonpath_first=pythonpath_first)
    except RuntimeError as err:
        return Baseline(unsupported=f"launches not recorded ({str(err)[:200]})")
    odd = [launch for launch in launches if "unsupported" in launch]
    if odd:
        return Baseline(unsupported=f"a launch Triton's binder cannot describe ({odd[0]})"[:300])
    if not launches:
        return Baseline(unsupported="the launcher launched no @triton.jit function")
    try:
        results = compile_ttir(
            spec.path, launches, pythonpath_first=pythonpath_first, timeout_s=COMPILE_TIMEOUT_S
        )
    except RuntimeError as err:
        return Baseline(unsupported=f"the original does not compile to TTIR ({err})"[:300])
    errors = [r["error"] for r in results if "text" not in r]
    if errors or len(results) != len(launches):
        why = errors[0] if errors else "a launch without a result"
        return Baseline(unsupported=f"the original does not compile to TTIR ({why})"[:300])
    return Baseline(
        tuple(launches), tuple(r["text"] for r in results), tuple(r["digest"] for r in results)
    )


def judge(
    base: Baseline, path: Path, *, pythonpath_first: str = "", timeout_s: float = COMPILE_TIMEOUT_S
) -> tuple[bool, str]:
    """(the mutant file ``path`` compiles to the original's TTIR for every launch signature,
    why not or for how many). A mutant that does not compile is not equivalent (its fixture
    run says what it does)."""
    if base.unsupported:
        return False, f"TTIR not compared: {base.unsupported}"
    try:
        results = compile_ttir(
            path,
            list(base.launches),
            expect=list(base.digests),
            pythonpath_first=pythonpath_first,
            timeout_s=timeout_s,
        )
    except RuntimeError as err:
        return False, f"TTIR not compared: {str(err)[:200]}"
    for index, result in enumerate(results):
        if "digest" not in result:
            return False, f"the mutant does not compile to TTIR: {result.get('error', '')[:300]}"
        if result["digest"] != base.digests[index]:
            return False, f"TTIR differs for launch signature {index + 1} of {len(base.launches)}"
    if len(results) != len(base.launches):
        return False, "TTIR not compared: the compile stopped early"
    return True, f"TTIR identical to the original for {len(results)} launch signature(s)"


def judge_fill(
    base: Baseline,
    path: Path,
    site: Any,
    source: str,
    file_name: str,
    *,
    pythonpath_first: str = "",
    timeout_s: float = COMPILE_TIMEOUT_S,
) -> tuple[bool, str]:
    """(a mutant that only changes a load's ``other=`` cannot act, why): every launch signature
    whose TTIR differs from the original's has that load's fill unobserved
    (:func:`fill_unobserved`) in the original's TTIR."""
    lines = fill_site(source, site)
    if lines is None or base.unsupported:
        return False, ""
    try:
        results = compile_ttir(
            path,
            list(base.launches),
            texts=False,
            pythonpath_first=pythonpath_first,
            timeout_s=timeout_s,
        )
    except RuntimeError:
        return False, ""
    if len(results) != len(base.launches) or any("digest" not in r for r in results):
        return False, ""
    differ = [i for i, r in enumerate(results) if r["digest"] != base.digests[i]]
    why = ""
    for index in differ:
        proven, why = fill_unobserved(base.ttir[index], file_name, lines)
        if not proven:
            return False, f"fill not proven unobserved ({why})"
    return True, (
        f"{why}; the TTIR differs only in that fill, for {len(differ)} of "
        f"{len(base.launches)} launch signature(s)"
    )


# Lane-wise ops: each result lane depends on the same lane of the operands only.
_LANEWISE = ("arith.", "math.", "tt.fp_to_fp", "tt.bitcast", "tt.precise_sqrt",
             "tt.precise_divf", "tt.clampf", "tt.mulhiui")  # fmt: skip
_LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$")
_FILE_LINE = re.compile(r'^"([^"]*)":(\d+):\d+')
_NAMED = re.compile(r'^"[^"]*"\((.*)\)$')
_SSA = re.compile(r"%[A-Za-z0-9_$.\-]+(?:#\d+)?")
_DIMS = re.compile(r"tensor<((?:\d+x)+)")


def fill_site(source: str, site: Any) -> tuple[int, int] | None:
    """The source lines of the ``tl.load`` whose ``other=`` value ``site`` changes (the whole
    fill, or a constant inside it), when that value is a plain expression (no call); else
    None."""
    for node in ast.walk(parsing.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "load":
            continue
        for keyword in node.keywords:
            if keyword.arg != "other" or any(
                isinstance(n, ast.Call) for n in ast.walk(keyword.value)
            ):
                continue
            value = keyword.value
            whole = site.operator.startswith("load other=") and site.start == (
                node.lineno,
                node.col_offset,
            )
            inside = site.operator.startswith("constant") and (
                (value.lineno, value.col_offset) <= site.start
                and site.end <= (value.end_lineno, value.end_col_offset)
            )
            if whole or inside:
                return node.lineno, node.end_lineno or node.lineno
    return None


def _op_location(line: str, defs: dict[str, str]) -> tuple[str, int] | None:
    """(file name, line) of a TTIR op's ``loc(...)``: a callsite's callee, a name's target."""
    start = line.rfind(" loc(")
    if start < 0:
        return None
    text = line[start + 5 : line.rindex(")")]
    for _ in range(64):
        text = text.strip()
        if text.startswith("#loc"):
            text = defs.get(text, "")
        elif text.startswith("callsite("):
            text = text[len("callsite(") : text.rindex(" at ")]
        elif match := _FILE_LINE.match(text):
            return Path(match.group(1)).name, int(match.group(2))
        elif match := _NAMED.match(text):
            text = match.group(1)
        else:
            return None
    return None


def _parse_ops(
    ttir: str,
) -> tuple[dict[str, str], list[tuple[str, str, list[str], list[str], str]]]:
    """The ``#loc`` definitions and each op as (result, op name, operands, shapes, raw line)."""
    defs = {}
    ops = []
    for raw in ttir.splitlines():
        if match := _LOC_DEF.match(raw):
            defs[match.group(1)] = match.group(2)
            continue
        text = strip_locations(raw).strip()
        if not text:
            continue
        results, _, body = text.partition(" = ") if re.match(r"^%\S+ = ", text) else ("", "", text)
        op_match = re.match(r'"?([\w.]+)', body)
        op = op_match.group(1) if op_match else ""
        names = _SSA.findall(body)
        dims = _DIMS.findall(body.rpartition(" : ")[2])
        ops.append((results.split(":")[0].strip(), op, names, dims, raw))
    return defs, ops


_AXIS = re.compile(r"axis = (\d+)")


def fill_unobserved(ttir: str, file_name: str, lines: tuple[int, int]) -> tuple[bool, str]:
    """Whether every ``tt.load`` of ``file_name`` at ``lines`` in ``ttir`` (with locations)
    has its value used only lane-wise, and stored only under a mask that implies its own on
    the same lanes, so that the fill of its masked lanes never reaches memory; (proven, the
    reason or the use that breaks it). No such load found: not proven.

    A value may change shape on the way by ``tt.expand_dims`` and ``tt.broadcast`` (a row's
    weight spread over a tile of rows): its mask is then the load's mask taken through the
    same ops, and a store's mask implies it when it is that mask or an ``arith.andi`` with it
    (``rows_ok & cols_ok``)."""
    defs, ops = _parse_ops(ttir)
    defined = {results: (op, names, dims, raw) for results, op, names, dims, raw in ops if results}

    def key(name: str, depth: int = 0) -> Any:
        """A mask's meaning up to expand_dims and broadcast: equal keys, equal lanes."""
        op, names, dims, raw = defined.get(name, ("", [], [], ""))
        if depth < 64 and op == "tt.expand_dims" and names and (axis := _AXIS.search(raw)):
            return ("expand", key(names[0], depth + 1), axis.group(1))
        if depth < 64 and op == "tt.broadcast" and names and dims:
            return ("broadcast", key(names[0], depth + 1), dims[-1])
        return name

    def implies(name: str, wanted: Any, depth: int = 0) -> bool:
        if key(name) == wanted:
            return True
        op, names, _, _ = defined.get(name, ("", [], [], ""))
        if depth < 64 and op == "arith.andi" and len(names) == 2:
            return any(implies(n, wanted, depth + 1) for n in names)
        if depth < 64 and op == "tt.broadcast" and names and wanted[:1] == ("broadcast",):
            return implies(names[0], wanted[1], depth + 1)
        return False

    loads = []
    for results, op, names, dims, raw in ops:
        where = _op_location(raw, defs)
        if op == "tt.load" and where and where[0] == file_name and lines[0] <= where[1] <= lines[1]:
            if len(names) != 3 or not dims:
                return False, "a load at that line has no mask and fill"
            loads.append((results, names[1]))
    if not loads:
        return False, "no load of that line found in the TTIR"
    for result, mask in loads:
        derived, changed = {result: key(mask)}, True
        while changed:
            changed = False
            for results, op, names, dims, raw in ops:
                inputs = [n for n in names if n in derived]
                if not inputs or results in derived:
                    continue
                if op == "tt.store":
                    if len(names) != 3 or names[1] not in derived:
                        return False, "its value reaches a store that is not under its mask"
                    if names[0] in derived or names[2] in derived:
                        return False, "its value reaches a store's address or mask"
                    if not implies(names[2], derived[names[1]]):
                        return False, "its value reaches a store that is not under its mask"
                    continue
                masks = {repr(derived[n]) for n in inputs}
                if len(masks) != 1:
                    return False, f"{op} joins values of different masks"
                wanted = derived[inputs[0]]
                if op == "tt.expand_dims" and (axis := _AXIS.search(raw)):
                    derived[results] = ("expand", wanted, axis.group(1))
                elif op == "tt.broadcast" and dims:
                    derived[results] = ("broadcast", wanted, dims[-1])
                elif op.startswith(_LANEWISE) and dims and len(set(dims)) == 1:
                    derived[results] = wanted
                else:
                    return False, f"its value reaches {op}"
                changed = True
    return True, (
        f"the load's fill (other=) is never observed: its {len(loads)} load(s) feed only "
        "lane-wise arithmetic (and expand_dims/broadcast) stored under a mask that implies the "
        "load's own"
    )
