"""The groups of a session file: each field of a :class:`Session` to its dataset and back.

The layout is documented in :mod:`inspector.records.sessions.session`, which writes and checks
the root attributes and the seal around these groups.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from bounded_json import JsonBounds, JsonRefused, loads
from inspector.check.stages import COMPILE_STAGES
from inspector.records.sessions.data import (
    KillTable,
    ReceiptRecord,
    Session,
    SessionResults,
    jsonable,
)
from inspector.records.sessions.hdf5 import (
    Damaged,
    attr,
    node,
    read_array,
    read_output,
    read_strings,
    read_text,
    read_values,
    write_output,
    write_strings,
    write_text,
    write_values,
)
from inspector.records.sessions.scan import (
    MAX_BENCH_BYTES,
    MAX_BENCH_DATASET_BYTES,
    MAX_DATASET_BYTES,
    VERSIONS_BYTES,
)
from oracle.dtypes import DTYPES

if TYPE_CHECKING:  # pragma: no cover - typing only
    import h5py

# Benchmark rows a session holds at most: ``kernels.bench.report.MAX_RESULTS``, the rows of
# a record the window opens (one samples dataset each; a test holds the two equal).
MAX_BENCH_ROWS = 8192
# What a session's JSON texts hold at most: versions a flat object of a dozen names; the
# compile facts ~25 fields and five IR texts; bench meta a record the window opened
# (``kernels.bench.report.RECORD_BOUNDS``; a test holds them equal); failures a flat list.
VERSIONS_JSON = JsonBounds(size=VERSIONS_BYTES, containers=16, values=1024, strings=2048)
COMPILE_JSON = JsonBounds(size=MAX_DATASET_BYTES, containers=256, values=4096, strings=8192)
BENCH_META_JSON = JsonBounds(
    size=64 * 2**20,
    containers=16 * MAX_BENCH_ROWS + 4096,
    values=64 * 2**20 // 8,
    strings=128 * MAX_BENCH_ROWS + 65_536,
)
FAILURES_JSON = JsonBounds(size=MAX_DATASET_BYTES, containers=1, values=100_001, strings=100_000)


def bench_rows_problem(count: int) -> str | None:
    """Why ``count`` benchmark rows are more than a session holds (None when they are not):
    the writer and the reader refuse by this one bound, so a file the reader opens can be
    saved again."""
    if count <= MAX_BENCH_ROWS:
        return None
    return f"bench rows: a session holds at most {MAX_BENCH_ROWS}; this one has {count}"


def write_layout(root: h5py.File, session: Session) -> None:
    """Every group and dataset of ``session`` into the (new, empty but for its attributes) file.

    Raises:
        ValueError: more benchmark rows or samples than a session holds
            (:data:`MAX_BENCH_ROWS`, the scan's bench bounds), before anything is written: the
            reader would refuse the file.
    """
    rows = (session.bench_meta or {}).get("rows") or []
    too_many = bench_rows_problem(max(len(rows), len(session.bench_samples)))
    if too_many:
        raise ValueError(too_many)
    sizes = [np.asarray(values).nbytes for values in session.bench_samples.values()]
    if max(sizes, default=0) > MAX_BENCH_DATASET_BYTES or sum(sizes) > MAX_BENCH_BYTES:
        raise ValueError(
            f"bench samples: a session holds at most {MAX_BENCH_DATASET_BYTES} bytes a row and "
            f"{MAX_BENCH_BYTES} in all; this one has {max(sizes)} and {sum(sizes)}"
        )
    problem = root.create_group("problem")
    for key in ("dtype", "name"):
        problem.attrs[key] = str(getattr(session, key))
    problem.attrs["eps"] = float(session.eps)
    problem.attrs["row_stride"] = int(session.row_stride or session.width)
    problem.attrs["rows"] = session.rows
    problem.attrs["width"] = session.width
    write_values(problem, "x", session.x, session.dtype)
    write_values(problem, "weight", session.weight, session.dtype)

    mutants = root.create_group("mutants")
    for target, toggles in (("model", session.model_mutants), ("kernel", session.kernel_mutants)):
        write_strings(mutants, f"{target}_names", toggles.keys())
        mutants.create_dataset(f"{target}_on", data=np.array(list(toggles.values()), dtype=bool))
    mutants.attrs["batch_invariant"] = bool(session.batch_invariant)

    if session.results is not None:
        _write_results(root, session.results, session.dtype)

    bench = root.create_group("bench")
    bench.attrs["meta"] = json.dumps(jsonable(session.bench_meta))
    for index, (key, values) in enumerate(session.bench_samples.items()):
        dataset = bench.create_dataset(f"{index:04d}", data=np.asarray(values))
        dataset.attrs["key"] = str(key)

    if session.compile_info is not None:
        write_text(root.create_group("compile"), "json", json.dumps(jsonable(session.compile_info)))
    write_text(root.create_group("versions"), "json", json.dumps(session.versions))

    receipts = root.create_group("receipts")
    if session.receipt_json is not None:
        write_text(receipts, "json", session.receipt_json)
    if session.receipt_csv is not None:
        write_text(receipts, "csv", session.receipt_csv)
    history = receipts.create_group("history")
    for index, record in enumerate(session.receipt_history):
        entry = history.create_group(f"{index:04d}")
        entry.attrs["kind"] = record.kind
        entry.attrs["created"] = record.created
        entry.attrs["reason"] = record.reason
        write_text(entry, "json", record.json_text)
        write_text(entry, "csv", record.csv_text)


def _write_results(root: h5py.File, results: SessionResults, dtype: str) -> None:
    group = root.create_group("results")
    group.attrs["mode"] = results.mode
    group.attrs["device"] = results.device
    group.attrs["kernel_note"] = results.kernel_note
    group.attrs["errors_source"] = results.errors_source
    group.attrs["passed"] = bool(results.passed)
    group.attrs["verdict"] = results.verdict
    group.attrs["failures"] = json.dumps(list(results.failures))
    scalar = group.create_group("scalar")
    for name in ("sum_squares", "mean_square", "rrms"):
        scalar.create_dataset(name, data=np.asarray(getattr(results, f"scalar_{name}"), np.float64))
    write_output(scalar, "y", results.scalar_y, dtype)
    tiled = group.create_group("tiled")
    tiled.attrs["block"] = int(results.tiled_block)
    tiled.attrs["poison"] = float(results.poison)
    for name in ("sum_squares", "mean_square", "rrms"):
        tiled.create_dataset(name, data=np.asarray(getattr(results, f"tiled_{name}"), np.float32))
    write_output(tiled, "y", results.tiled_y, dtype)
    group.create_dataset("row_max_abs", data=np.asarray(results.row_max_abs, np.float64))
    group.create_dataset("row_max_rel", data=np.asarray(results.row_max_rel, np.float64))
    if results.kernel_y is not None:
        kernel = group.create_group("kernel")
        write_output(kernel, "y", results.kernel_y, dtype)
        oob = results.kernel_oob_addresses
        kernel.create_dataset(
            "oob_addresses", data=np.asarray(oob if oob is not None else [], dtype=np.int64)
        )
        if results.kernel_block is not None:
            kernel.attrs["block"] = int(results.kernel_block)
        if results.kernel_num_warps is not None:
            kernel.attrs["num_warps"] = int(results.kernel_num_warps)
        if results.kernel_oob_guard is not None:
            kernel.attrs["oob_guard"] = int(results.kernel_oob_guard)
            kernel.attrs["oob_row_stride"] = int(results.kernel_oob_row_stride)
        # A run read from a file older than the attribute launched the default layout.
        kernel.attrs["batch_invariant"] = bool(results.kernel_batch_invariant)
    matrices = group.create_group("kill_matrix")
    _write_kill_table(matrices, results.model_matrix)
    if results.kernel_matrix is not None:
        _write_kill_table(matrices, results.kernel_matrix)


def _write_kill_table(group: h5py.Group, table: KillTable) -> None:
    sub = group.create_group(table.target)
    sub.attrs["target"] = table.target
    write_strings(sub, "mutants", table.mutants)
    write_strings(sub, "fixtures", table.fixtures)
    write_strings(sub, "categories", table.categories)
    write_strings(sub, "expected", table.expected)
    write_strings(sub, "baseline_actual", table.baseline_actual)
    sub.create_dataset("baseline_passed", data=np.asarray(table.baseline_passed, dtype=bool))
    sub.create_dataset(
        "detected",
        data=np.asarray(table.detected, dtype=bool).reshape(
            len(table.mutants), len(table.fixtures)
        ),
    )


def read_layout(root: Any) -> Session:
    """The session stored in an open file whose format and version are already checked.

    Raises:
        Damaged: a group, dataset or attribute is missing or inconsistent.
    """
    problem = node(root, "problem")
    dtype = str(attr(problem, "dtype"))
    if dtype not in DTYPES:
        raise Damaged(f"problem dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    rows, width = int(attr(problem, "rows")), int(attr(problem, "width"))
    x = read_values(problem, "x", dtype, (rows, width))
    weight = read_values(problem, "weight", dtype, (width,))
    mutants = node(root, "mutants")
    toggles: dict[str, dict[str, bool]] = {}
    for target in ("model", "kernel"):
        names = read_strings(mutants, f"{target}_names")
        states = read_array(mutants, f"{target}_on", (len(names),)).astype(bool)
        toggles[target] = {n: bool(s) for n, s in zip(names, states, strict=False)}
    bench = node(root, "bench")
    too_many = bench_rows_problem(len(bench))
    if too_many:
        raise Damaged(too_many)
    samples = {str(attr(bench[k], "key")): _bench_samples(bench[k], k) for k in sorted(bench)}
    receipts = node(root, "receipts")
    history_group = node(receipts, "history")
    history = [
        ReceiptRecord(
            kind=str(attr(history_group[k], "kind")),
            created=str(attr(history_group[k], "created")),
            reason=str(attr(history_group[k], "reason")),
            json_text=read_text(history_group[k], "json"),
            csv_text=read_text(history_group[k], "csv"),
        )
        for k in sorted(history_group)
    ]
    return Session(
        x=x,
        weight=weight,
        eps=float(attr(problem, "eps")),
        dtype=dtype,
        row_stride=int(attr(problem, "row_stride")),
        name=str(attr(problem, "name")),
        model_mutants=toggles["model"],
        kernel_mutants=toggles["kernel"],
        results=_read_results(root, rows, width),
        bench_samples=samples,
        bench_meta=_bench_meta(_parsed(attr(bench, "meta"), "/bench meta", BENCH_META_JSON)),
        compile_info=(
            _compile_info(
                _parsed(read_text(root["compile"], "json"), "/compile/json", COMPILE_JSON)
            )
            if "compile" in root
            else None
        ),
        versions=_parsed(
            read_text(node(root, "versions"), "json"), "/versions/json", VERSIONS_JSON
        ),
        receipt_json=read_text(receipts, "json") if "json" in receipts else None,
        receipt_csv=read_text(receipts, "csv") if "csv" in receipts else None,
        receipt_history=history,
        batch_invariant=_flag(mutants, "batch_invariant"),
    )


def _flag(group: Any, name: str) -> bool:
    """A boolean attribute of ``group``; False in a file written before it.

    Raises:
        Damaged: a value that is not a boolean.
    """
    if group is None or name not in group.attrs:
        return False
    value = attr(group, name)
    if not isinstance(value, (bool, np.bool_)):
        raise Damaged(f"{group.name} attribute {name} must be a boolean; got {value!r}")
    return bool(value)


def _parsed(text: Any, where: str, bounds: JsonBounds) -> Any:
    """One of the session's JSON texts, parsed within ``bounds`` (counted before it is built).

    Raises:
        Damaged: past a bound or not JSON, named.
    """
    try:
        return loads(str(text), where, bounds)
    except JsonRefused as exc:
        raise Damaged(str(exc)) from None


def _bench_samples(dataset: Any, name: str) -> np.ndarray:
    """One benchmark row's samples: an array of real numbers, in its stored dtype.

    Raises:
        Damaged: another type (text, records, references, complex numbers).
    """
    if dataset.dtype.kind not in "fiu":
        raise Damaged(
            f"bench/{name} must hold an array of real numbers; got {dataset.dtype} {dataset.shape}"
        )
    return np.array(dataset[...])


def _bench_meta(meta: Any) -> Any:
    """The ``bench`` group's ``meta``: an object whose ``rows`` are at most
    :data:`MAX_BENCH_ROWS` objects, ``dtypes`` a list of names and ``source`` text. Each
    row's fields are the window's to check (``kernels.bench.report.check_row``, which needs
    torch; the session reader does not load it).

    Raises:
        Damaged: the first part that is not so, named.
    """
    if not isinstance(meta, dict):
        raise Damaged(f"bench meta must be a JSON object; got {type(meta).__name__}")
    rows = meta.get("rows", [])
    if not isinstance(rows, list) or len(rows) > MAX_BENCH_ROWS:
        raise Damaged(f"bench meta rows must be a list of at most {MAX_BENCH_ROWS} result rows")
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            raise Damaged(f"bench meta rows[{index}] must be an object; got {type(row).__name__}")
    dtypes = meta.get("dtypes", [])
    if not isinstance(dtypes, list) or not all(isinstance(d, str) for d in dtypes):
        raise Damaged("bench meta dtypes must be a list of dtype names")
    source = meta.get("source")
    if source is not None and not isinstance(source, str):
        raise Damaged(f"bench meta source must be text; got {type(source).__name__}")
    return meta


def _compile_info(info: Any) -> dict[str, Any]:
    """The ``compile`` group's JSON: an object whose compiler texts (each stage's and
    ``texts``'s) and ``error`` are text.

    Raises:
        Damaged: the first part that is not so, named.
    """
    if not isinstance(info, dict):
        raise Damaged(f"compile json must be a JSON object; got {type(info).__name__}")
    texts = info.get("texts", {})
    if texts is None:
        texts = {}
    if not isinstance(texts, dict):
        raise Damaged(f"compile texts must be an object; got {type(texts).__name__}")
    for key, value in [*((s, info.get(s)) for s in (*COMPILE_STAGES, "error")), *texts.items()]:
        if value is not None and not isinstance(value, str):
            raise Damaged(f"compile {key} must be text; got {type(value).__name__}")
    return info


#: A saved check's verdicts (``CheckResult.verdict``).
VERDICTS = ("passed", "failed", "not judged")


def _verdict(group: Any) -> str:
    """The saved check's verdict; "" for a file written before the attribute (its passed and
    failures tell it).

    Raises:
        Damaged: a verdict that is none of :data:`VERDICTS`, or that contradicts ``passed``.
    """
    if "verdict" not in group.attrs:
        return ""
    verdict = attr(group, "verdict")
    if verdict not in VERDICTS:
        raise Damaged(f"results verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
    if (verdict == "passed") != bool(attr(group, "passed")):
        raise Damaged(f"results verdict {verdict!r} contradicts passed={attr(group, 'passed')}")
    return str(verdict)


def _read_results(root: Any, rows: int, width: int) -> SessionResults | None:
    if "results" not in root:
        return None
    group = root["results"]
    scalar = node(group, "scalar")
    tiled = node(group, "tiled")
    matrices = node(group, "kill_matrix")
    kernel = group.get("kernel", None)
    failures = _parsed(attr(group, "failures"), "/results failures", FAILURES_JSON)
    if not isinstance(failures, list):
        raise Damaged("results failures is not a list")
    return SessionResults(
        mode=str(attr(group, "mode")),
        device=str(attr(group, "device")),
        kernel_note=str(attr(group, "kernel_note")),
        errors_source=str(attr(group, "errors_source")),
        passed=bool(attr(group, "passed")),
        failures=tuple(str(f) for f in failures),
        verdict=_verdict(group),
        scalar_sum_squares=read_array(scalar, "sum_squares", (rows,)),
        scalar_mean_square=read_array(scalar, "mean_square", (rows,)),
        scalar_rrms=read_array(scalar, "rrms", (rows,)),
        scalar_y=read_output(scalar, "y", (rows, width)),
        tiled_sum_squares=read_array(tiled, "sum_squares", (rows,)),
        tiled_mean_square=read_array(tiled, "mean_square", (rows,)),
        tiled_rrms=read_array(tiled, "rrms", (rows,)),
        tiled_y=read_output(tiled, "y", (rows, width)),
        tiled_block=int(attr(tiled, "block")),
        poison=float(attr(tiled, "poison")),
        row_max_abs=read_array(group, "row_max_abs", (rows,)),
        row_max_rel=read_array(group, "row_max_rel", (rows,)),
        model_matrix=_read_kill_table(matrices, "model"),
        kernel_matrix=_read_kill_table(matrices, "kernel") if "kernel" in matrices else None,
        kernel_y=read_output(kernel, "y", (rows, width)) if kernel is not None else None,
        kernel_oob_addresses=(
            read_array(kernel, "oob_addresses").astype(np.int64) if kernel is not None else None
        ),
        kernel_block=(
            int(attr(kernel, "block")) if kernel is not None and "block" in kernel.attrs else None
        ),
        kernel_num_warps=(
            int(attr(kernel, "num_warps"))
            if kernel is not None and "num_warps" in kernel.attrs
            else None
        ),
        kernel_oob_guard=(
            int(attr(kernel, "oob_guard"))
            if kernel is not None and "oob_guard" in kernel.attrs
            else None
        ),
        kernel_oob_row_stride=(
            int(attr(kernel, "oob_row_stride"))
            if kernel is not None and "oob_row_stride" in kernel.attrs
            else 0
        ),
        kernel_batch_invariant=(
            _flag(kernel, "batch_invariant")
            if kernel is not None and "batch_invariant" in kernel.attrs
            else None
        ),
    )


def _read_kill_table(group: Any, target: str) -> KillTable:
    sub = node(group, target)
    if str(attr(sub, "target")) != target:
        # Saved again, it would be written under its target's name twice.
        raise Damaged(f"kill_matrix/{target} says its target is {str(attr(sub, 'target'))!r}")
    mutants = read_strings(sub, "mutants")
    fixture_names = read_strings(sub, "fixtures")
    count = len(fixture_names)
    per_fixture = {
        name: read_strings(sub, name) for name in ("categories", "expected", "baseline_actual")
    }
    for name, values in per_fixture.items():
        if len(values) != count:
            raise Damaged(
                f"kill_matrix/{target}/{name} has {len(values)} entries; its fixtures are {count}"
            )
    return KillTable(
        target=str(attr(sub, "target")),
        mutants=mutants,
        fixtures=fixture_names,
        categories=per_fixture["categories"],
        expected=per_fixture["expected"],
        baseline_actual=per_fixture["baseline_actual"],
        baseline_passed=read_array(sub, "baseline_passed", (count,)).astype(bool),
        detected=read_array(sub, "detected", (len(mutants), count)).astype(bool),
    )
