"""The groups of a session file: each field of a :class:`Session` to its dataset and back.

The layout is documented in :mod:`inspector.records.session`, which writes and checks the root
attributes and the seal around these groups.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from inspector.records.hdf5 import (
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
from inspector.records.session_data import (
    KillTable,
    ReceiptRecord,
    Session,
    SessionResults,
    jsonable,
)
from oracle.dtypes import DTYPES

if TYPE_CHECKING:  # pragma: no cover - typing only
    import h5py


def write_layout(root: h5py.File, session: Session) -> None:
    """Every group and dataset of ``session`` into the (new, empty but for its attributes) file."""
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
    samples = {str(attr(bench[k], "key")): np.array(bench[k][...]) for k in sorted(bench)}
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
        bench_meta=json.loads(attr(bench, "meta")),
        compile_info=(
            json.loads(read_text(root["compile"], "json")) if "compile" in root else None
        ),
        versions=json.loads(read_text(node(root, "versions"), "json")),
        receipt_json=read_text(receipts, "json") if "json" in receipts else None,
        receipt_csv=read_text(receipts, "csv") if "csv" in receipts else None,
        receipt_history=history,
    )


def _read_results(root: Any, rows: int, width: int) -> SessionResults | None:
    if "results" not in root:
        return None
    group = root["results"]
    scalar = node(group, "scalar")
    tiled = node(group, "tiled")
    matrices = node(group, "kill_matrix")
    kernel = group.get("kernel", None)
    failures = json.loads(attr(group, "failures"))
    if not isinstance(failures, list):
        raise Damaged("results failures is not a list")
    return SessionResults(
        mode=str(attr(group, "mode")),
        device=str(attr(group, "device")),
        kernel_note=str(attr(group, "kernel_note")),
        errors_source=str(attr(group, "errors_source")),
        passed=bool(attr(group, "passed")),
        failures=tuple(str(f) for f in failures),
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
    )


def _read_kill_table(group: Any, target: str) -> KillTable:
    sub = node(group, target)
    mutants = read_strings(sub, "mutants")
    fixture_names = read_strings(sub, "fixtures")
    count = len(fixture_names)
    return KillTable(
        target=str(attr(sub, "target")),
        mutants=mutants,
        fixtures=fixture_names,
        categories=read_strings(sub, "categories"),
        expected=read_strings(sub, "expected"),
        baseline_actual=read_strings(sub, "baseline_actual"),
        baseline_passed=read_array(sub, "baseline_passed", (count,)).astype(bool),
        detected=read_array(sub, "detected", (len(mutants), count)).astype(bool),
    )
