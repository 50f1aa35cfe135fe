"""HDF5 session files: one inspection (input, results, toggles, timings, receipts) per ``.h5``.

Layout (``SCHEMA_VERSION`` 1)::

    /                     attrs: format, schema_version, created, tool
    /problem              attrs: dtype, eps, row_stride, rows, width, name
      x, weight           stored in the declared dtype, exactly: float32 / float16 datasets, or
                          for bfloat16 the uint16 bit patterns; attr ``dtype`` names it
    /mutants              model_names, model_on, kernel_names, kernel_on (the GUI's toggles)
    /results              (optional) attrs: mode, device, kernel_note, errors_source, passed,
                          failures (JSON list)
      scalar/             sum_squares, mean_square, rrms (float64), y
      tiled/              sum_squares, mean_square, rrms (float32), y; attrs block, poison
      kernel/             (optional) y, oob_addresses int64; attrs mode, device, block,
                          num_warps
                          (every y is stored in the problem's dtype like x when that is exact,
                          else float64; its attr ``dtype`` says which)
      row_max_abs, row_max_rel          per row, the implementation under test vs scalar
      kill_matrix/<target>/             mutants, fixtures, categories, expected,
                                        baseline_actual, baseline_passed, detected (M x F)
    /bench                samples: one dataset per key (attr ``key``), raw distributions;
                          attr ``meta`` (JSON)
    /compile              dataset ``json`` (compile facts and IR texts)
    /versions             dataset ``json``
    /receipts             datasets ``json``, ``csv``: the receipts exactly as written
                          (long texts are gzip-compressed UTF-8 byte datasets, attr encoding)
      history/NNNN        attrs kind ("first_pass" | "counterexample"), created, reason;
                          datasets json, csv

The first 512 bytes are the HDF5 user block (HDF5 ignores it); it holds the *seal*: a magic
line, ``schema_version``, ``payload_bytes`` and ``payload_sha256`` of everything after it. A
reader checks the seal before HDF5 parses anything: a truncated or corrupted file is refused
with a clear message instead of reaching HDF5 (which can hang on damaged metadata).

Writes are atomic: a temp file in the same folder, sealed, fsynced, then ``os.replace``.
Reads open the file read-only and refuse (with :class:`SessionError`) anything that is not a
complete session of a schema this code knows; they never modify the file.

Qt-free: numpy, h5py and the oracle only.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from oracle.compare import max_errors
from oracle.dtypes import DTYPES, bfloat16_bits, from_bfloat16_bits
from oracle.spec import Problem, ValidationError, make_problem

if TYPE_CHECKING:  # pragma: no cover - typing only
    import h5py

    from inspector.pipeline import CheckResult
    from oracle.matrix import KillMatrix

SESSION_FORMAT = "rmsnorm-inspector session"
#: Written by this code. Readers accept MIN_SCHEMA_VERSION..SCHEMA_VERSION and refuse newer
#: files. Version 1 is the first layout; when it changes, bump this, keep a reader for the old
#: layout (a migration step) and commit an old file for the migration test.
SCHEMA_VERSION = 1
MIN_SCHEMA_VERSION = 1
TOOL = "rmsnorm-inspector"
AUTOSAVE_SUFFIX = ".autosave.h5"
#: HDF5 user block (ignored by HDF5) holding the seal: magic, schema version, payload size and
#: sha256. Checked before HDF5 parses a byte, so a truncated or corrupted file is refused
#: cleanly; HDF5 itself can hang on some corrupted metadata.
USERBLOCK_SIZE = 512
SEAL_MAGIC = b"RMSNORM-INSPECTOR-SESSION\n"


class SessionError(Exception):
    """A session file could not be opened or saved; the message says which file and why."""


# ----------------------------------------------------------------------------- data


@dataclass(eq=False)
class KillTable:
    """A kill matrix as plain arrays (what a table view and the file need).

    Attributes:
        target: "model" or "kernel".
        mutants: row labels.
        fixtures: column labels, every fixture in matrix order.
        categories, expected, baseline_actual: per fixture.
        baseline_passed: (F,) bool, the faithful implementation behaved on that fixture.
        detected: (M, F) bool, the mutant failed that fixture (False on rejection fixtures,
            which never run an implementation).
    """

    target: str
    mutants: tuple[str, ...]
    fixtures: tuple[str, ...]
    categories: tuple[str, ...]
    expected: tuple[str, ...]
    baseline_actual: tuple[str, ...]
    baseline_passed: np.ndarray
    detected: np.ndarray

    @classmethod
    def from_kill_matrix(cls, kill_matrix: KillMatrix) -> KillTable:
        fixture_names = tuple(kill_matrix.fixtures)
        column = {name: i for i, name in enumerate(fixture_names)}
        detected = np.zeros((len(kill_matrix.mutants), len(fixture_names)), dtype=bool)
        for row, mutant in enumerate(kill_matrix.mutants):
            for outcome in kill_matrix.cells[mutant]:
                detected[row, column[outcome.fixture]] = not outcome.passed
        baseline = {o.fixture: o for o in kill_matrix.baseline}
        return cls(
            target=kill_matrix.target,
            mutants=tuple(kill_matrix.mutants),
            fixtures=fixture_names,
            categories=tuple(baseline[n].category for n in fixture_names),
            expected=tuple(baseline[n].expected for n in fixture_names),
            baseline_actual=tuple(baseline[n].actual for n in fixture_names),
            baseline_passed=np.array([baseline[n].passed for n in fixture_names], dtype=bool),
            detected=detected,
        )

    @property
    def killed(self) -> np.ndarray:
        """(M, F) bool: detected by a fixture the faithful implementation passes."""
        return self.detected & self.baseline_passed[None, :]

    def killed_by(self, mutant: str) -> tuple[str, ...]:
        row = self.mutants.index(mutant)
        return tuple(n for n, hit in zip(self.fixtures, self.killed[row], strict=False) if hit)

    @property
    def survivors(self) -> tuple[str, ...]:
        return tuple(m for m, row in zip(self.mutants, self.killed, strict=False) if not row.any())


@dataclass(eq=False)
class SessionResults:
    """Arrays derived from a :class:`~inspector.pipeline.CheckResult` (no oracle objects)."""

    mode: str
    device: str
    kernel_note: str
    errors_source: str
    passed: bool
    failures: tuple[str, ...]
    scalar_sum_squares: np.ndarray
    scalar_mean_square: np.ndarray
    scalar_rrms: np.ndarray
    scalar_y: np.ndarray
    tiled_sum_squares: np.ndarray
    tiled_mean_square: np.ndarray
    tiled_rrms: np.ndarray
    tiled_y: np.ndarray
    tiled_block: int
    poison: float
    row_max_abs: np.ndarray
    row_max_rel: np.ndarray
    model_matrix: KillTable
    kernel_matrix: KillTable | None = None
    kernel_y: np.ndarray | None = None
    kernel_oob_addresses: np.ndarray | None = None
    kernel_block: int | None = None
    kernel_num_warps: int | None = None

    @classmethod
    def from_check(cls, result: CheckResult) -> SessionResults:
        kernel = result.kernel
        if kernel is not None:
            row_max_abs, row_max_rel = result.row_max_abs, result.row_max_rel
        else:  # one pass over the outputs, not one per property (4M elements: ~0.13 s each)
            row_max_abs, row_max_rel = max_errors(result.tiled.y, result.scalar.y)
        return cls(
            mode=result.mode,
            device=result.device,
            kernel_note=result.kernel_note,
            errors_source=result.errors_source,
            passed=bool(result.passed),
            failures=tuple(result.failures),
            scalar_sum_squares=np.array(result.scalar.sum_squares, dtype=np.float64),
            scalar_mean_square=np.array(result.scalar.mean_square, dtype=np.float64),
            scalar_rrms=np.array(result.scalar.rrms, dtype=np.float64),
            scalar_y=np.array(result.scalar.y, dtype=np.float64),
            tiled_sum_squares=np.array(result.tiled.sum_squares, dtype=np.float32),
            tiled_mean_square=np.array(result.tiled.mean_square, dtype=np.float32),
            tiled_rrms=np.array(result.tiled.rrms, dtype=np.float32),
            tiled_y=np.array(result.tiled.y, dtype=np.float64),
            tiled_block=int(result.tiled.block),
            poison=float(result.tiled.poison),
            row_max_abs=np.array(row_max_abs, dtype=np.float64),
            row_max_rel=np.array(row_max_rel, dtype=np.float64),
            model_matrix=KillTable.from_kill_matrix(result.model_matrix),
            kernel_matrix=(
                KillTable.from_kill_matrix(result.kernel_matrix)
                if result.kernel_matrix is not None
                else None
            ),
            kernel_y=np.array(kernel.y, dtype=np.float64) if kernel is not None else None,
            kernel_oob_addresses=(
                np.array([w.address for w in kernel.oob_writes], dtype=np.int64)
                if kernel is not None
                else None
            ),
            kernel_block=int(kernel.block) if kernel is not None else None,
            kernel_num_warps=int(kernel.num_warps) if kernel is not None else None,
        )


@dataclass(eq=False)
class ReceiptRecord:
    """A receipt kept in the session's history (the first pass and every counterexample)."""

    kind: str
    created: str
    reason: str
    json_text: str
    csv_text: str


@dataclass(eq=False)
class Session:
    """Everything one inspection holds; what the window keeps and the file stores.

    Attributes:
        x: (rows, width) float64 values, exact in ``dtype``.
        weight: (width,) float64 values, exact in ``dtype``.
        eps, dtype, row_stride, name: the rest of the problem (row_stride None -> width).
        model_mutants, kernel_mutants: mutant name -> toggle state.
        results: arrays from the last check, or None.
        bench_samples: raw timing distributions (or any arrays), name -> array.
        bench_meta: JSON-able facts about the benchmark (protocol, shapes, units...).
        compile_info: JSON-able compiler facts and IR texts, or None.
        versions: tool and library versions.
        receipt_json, receipt_csv: the last receipts exactly as written, or None.
        receipt_history: the first passing receipt and every later counterexample.
    """

    x: np.ndarray
    weight: np.ndarray
    eps: float = 1e-6
    dtype: str = "float32"
    row_stride: int | None = None
    name: str = "input"
    model_mutants: dict[str, bool] = field(default_factory=dict)
    kernel_mutants: dict[str, bool] = field(default_factory=dict)
    results: SessionResults | None = None
    bench_samples: dict[str, np.ndarray] = field(default_factory=dict)
    bench_meta: dict[str, Any] = field(default_factory=dict)
    compile_info: dict[str, Any] | None = None
    versions: dict[str, str] = field(default_factory=dict)
    receipt_json: str | None = None
    receipt_csv: str | None = None
    receipt_history: list[ReceiptRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.x = np.array(self.x, dtype=np.float64)
        if self.x.ndim == 1:
            self.x = self.x.reshape(1, -1)
        self.weight = np.array(self.weight, dtype=np.float64)
        if self.row_stride is None and self.x.ndim == 2:
            self.row_stride = int(self.x.shape[1])

    @property
    def rows(self) -> int:
        return int(self.x.shape[0])

    @property
    def width(self) -> int:
        return int(self.x.shape[1])

    def problem(self) -> Problem:
        """The validated problem this session describes.

        Raises:
            ValidationError: a field is out of bounds.
        """
        # Validating 4M values takes ~0.1 s: reuse the last answer while nothing changed.
        key = (id(self.x), id(self.weight), self.eps, self.dtype, self.row_stride, self.name)
        cached = self.__dict__.get("_problem_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        problem = make_problem(
            self.x,
            self.weight,
            eps=self.eps,
            dtype=self.dtype,
            row_stride=self.row_stride,
            name=self.name,
        )
        self.__dict__["_problem_cache"] = (key, problem, self.x, self.weight)  # keeps ids valid
        return problem

    @classmethod
    def from_problem(cls, problem: Problem) -> Session:
        from oracle.mutants import MODEL_MUTANTS

        return cls(
            x=np.array(problem.x),
            weight=np.array(problem.weight),
            eps=float(problem.eps),
            dtype=problem.dtype,
            row_stride=int(problem.row_stride),
            name=problem.name,
            model_mutants=dict.fromkeys(MODEL_MUTANTS, False),
        )

    @classmethod
    def from_check(cls, result: CheckResult) -> Session:
        """A session holding the problem and the arrays of one check."""
        session = cls.from_problem(result.problem)
        session.results = SessionResults.from_check(result)
        if result.kernel_matrix is not None:
            session.kernel_mutants = dict.fromkeys(result.kernel_matrix.mutants, False)
        session.compile_info = _jsonable(result.compile) if result.compile else None
        session.versions = {str(k): str(v) for k, v in result.versions.items()}
        return session

    def record_receipts(
        self, json_text: str, csv_text: str, *, passed: bool, reason: str = ""
    ) -> None:
        """Keep these receipts as the current ones and in the history.

        The history keeps the first passing receipt and every later counterexample (a failed
        check); later passing receipts only replace the current pair.
        """
        self.receipt_json, self.receipt_csv = json_text, csv_text
        now = _now()
        if not passed:
            self.receipt_history.append(
                ReceiptRecord("counterexample", now, reason or "check failed", json_text, csv_text)
            )
        elif not any(r.kind == "first_pass" for r in self.receipt_history):
            self.receipt_history.append(
                ReceiptRecord(
                    "first_pass", now, reason or "first passing receipt", json_text, csv_text
                )
            )


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# ----------------------------------------------------------------------------- equality


def session_differences(a: Session, b: Session) -> list[str]:
    """Field-by-field differences (arrays bit-exact, NaN equal to NaN); empty when equal."""
    return _differences(a, b, "session")


def _differences(a: Any, b: Any, where: str) -> list[str]:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return [f"{where}: {type(a).__name__} vs {type(b).__name__}"]
        if a.shape != b.shape or a.dtype != b.dtype:
            return [f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"]
        if a.dtype.kind == "f":
            same = np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
        else:
            same = np.array_equal(a, b)
        return [] if same else [f"{where}: values differ"]
    if hasattr(a, "__dataclass_fields__") and type(a) is type(b):
        found = []
        for item in fields(a):
            found += _differences(
                getattr(a, item.name), getattr(b, item.name), f"{where}.{item.name}"
            )
        return found
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if set(a) != set(b):
            return [f"{where}: keys {sorted(a)} vs {sorted(b)}"]
        found = []
        for key in a:
            found += _differences(a[key], b[key], f"{where}[{key!r}]")
        return found
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: length {len(a)} vs {len(b)}"]
        found = []
        for index, (left, right) in enumerate(zip(a, b, strict=False)):
            found += _differences(left, right, f"{where}[{index}]")
        return found
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return []
    return [] if a == b and type(a) is type(b) else [f"{where}: {a!r} vs {b!r}"]


# ----------------------------------------------------------------------------- writing


def _h5py() -> Any:
    import h5py

    return h5py


def _write_strings(group: h5py.Group, name: str, values: Iterable[str]) -> None:
    h5py = _h5py()
    group.create_dataset(name, data=np.array(list(values), dtype=object), dtype=h5py.string_dtype())


def _write_text(group: h5py.Group, name: str, text: str) -> None:
    """Long text (receipts, IR listings) as gzip-compressed UTF-8 bytes."""
    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if raw.size:
        dataset = group.create_dataset(name, data=raw, compression="gzip", compression_opts=6)
    else:
        dataset = group.create_dataset(name, shape=(0,), dtype=np.uint8)
    dataset.attrs["encoding"] = "utf-8"


def _write_values(group: h5py.Group, name: str, values: np.ndarray, dtype: str) -> None:
    """x or weight in the declared dtype, exactly (bfloat16 as its uint16 bits)."""
    if dtype == "bfloat16":
        data = bfloat16_bits(values)
    elif dtype == "float16":
        data = np.asarray(values, dtype=np.float64).astype(np.float16)
    else:
        data = np.asarray(values, dtype=np.float64).astype(np.float32)
    dataset = group.create_dataset(name, data=data)
    dataset.attrs["dtype"] = dtype
    dataset.attrs["storage"] = "uint16 bit patterns" if dtype == "bfloat16" else dtype


def _write_kill_table(group: h5py.Group, table: KillTable) -> None:
    sub = group.create_group(table.target)
    sub.attrs["target"] = table.target
    _write_strings(sub, "mutants", table.mutants)
    _write_strings(sub, "fixtures", table.fixtures)
    _write_strings(sub, "categories", table.categories)
    _write_strings(sub, "expected", table.expected)
    _write_strings(sub, "baseline_actual", table.baseline_actual)
    sub.create_dataset("baseline_passed", data=np.asarray(table.baseline_passed, dtype=bool))
    sub.create_dataset(
        "detected",
        data=np.asarray(table.detected, dtype=bool).reshape(
            len(table.mutants), len(table.fixtures)
        ),
    )


def _encode(values: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "bfloat16":
            return bfloat16_bits(values)
        return values.astype(np.float16 if dtype == "float16" else np.float32)


def _decode(raw: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        if dtype == "bfloat16":
            return from_bfloat16_bits(raw)
        return raw.astype(np.float64)


def _write_output(group: h5py.Group, name: str, values: np.ndarray, dtype: str) -> None:
    """An output array in the declared dtype when that is exact (it is: outputs are stored in
    that dtype), else as float64; attr ``dtype`` says which."""
    array = np.asarray(values, dtype=np.float64)
    encoded = _encode(array, dtype)
    decoded = _decode(encoded, dtype)
    exact = np.array_equal(decoded, array, equal_nan=True) and np.array_equal(
        np.signbit(decoded), np.signbit(array)
    )
    dataset = group.create_dataset(name, data=encoded if exact else array)
    dataset.attrs["dtype"] = dtype if exact else "float64"


def _read_output(group: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    dataset = _node(group, name)
    dtype = str(_attr(dataset, "dtype")) if "dtype" in dataset.attrs else "float64"
    raw = _read_array(group, name, shape)
    storage = {"float64": np.float64, "float32": np.float32, "float16": np.float16}
    expected = storage.get(dtype, np.uint16 if dtype == "bfloat16" else None)
    if expected is None or raw.dtype != expected:
        raise _Damaged(f"{dataset.name} holds {raw.dtype}, its dtype attribute says {dtype!r}")
    return _decode(raw, dtype) if dtype != "float64" else raw


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
    _write_output(scalar, "y", results.scalar_y, dtype)
    tiled = group.create_group("tiled")
    tiled.attrs["block"] = int(results.tiled_block)
    tiled.attrs["poison"] = float(results.poison)
    for name in ("sum_squares", "mean_square", "rrms"):
        tiled.create_dataset(name, data=np.asarray(getattr(results, f"tiled_{name}"), np.float32))
    _write_output(tiled, "y", results.tiled_y, dtype)
    group.create_dataset("row_max_abs", data=np.asarray(results.row_max_abs, np.float64))
    group.create_dataset("row_max_rel", data=np.asarray(results.row_max_rel, np.float64))
    if results.kernel_y is not None:
        kernel = group.create_group("kernel")
        _write_output(kernel, "y", results.kernel_y, dtype)
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


def _write_session(root: h5py.File, session: Session) -> None:
    root.attrs["format"] = SESSION_FORMAT
    root.attrs["schema_version"] = SCHEMA_VERSION
    root.attrs["created"] = _now()
    root.attrs["tool"] = TOOL
    problem = root.create_group("problem")
    for key in ("dtype", "name"):
        problem.attrs[key] = str(getattr(session, key))
    problem.attrs["eps"] = float(session.eps)
    problem.attrs["row_stride"] = int(session.row_stride or session.width)
    problem.attrs["rows"] = session.rows
    problem.attrs["width"] = session.width
    _write_values(problem, "x", session.x, session.dtype)
    _write_values(problem, "weight", session.weight, session.dtype)

    mutants = root.create_group("mutants")
    for target, toggles in (("model", session.model_mutants), ("kernel", session.kernel_mutants)):
        _write_strings(mutants, f"{target}_names", toggles.keys())
        mutants.create_dataset(f"{target}_on", data=np.array(list(toggles.values()), dtype=bool))

    if session.results is not None:
        _write_results(root, session.results, session.dtype)

    bench = root.create_group("bench")
    bench.attrs["meta"] = json.dumps(_jsonable(session.bench_meta))
    for index, (key, values) in enumerate(session.bench_samples.items()):
        dataset = bench.create_dataset(f"{index:04d}", data=np.asarray(values))
        dataset.attrs["key"] = str(key)

    if session.compile_info is not None:
        _write_text(
            root.create_group("compile"), "json", json.dumps(_jsonable(session.compile_info))
        )
    _write_text(root.create_group("versions"), "json", json.dumps(session.versions))

    receipts = root.create_group("receipts")
    if session.receipt_json is not None:
        _write_text(receipts, "json", session.receipt_json)
    if session.receipt_csv is not None:
        _write_text(receipts, "csv", session.receipt_csv)
    history = receipts.create_group("history")
    for index, record in enumerate(session.receipt_history):
        entry = history.create_group(f"{index:04d}")
        entry.attrs["kind"] = record.kind
        entry.attrs["created"] = record.created
        entry.attrs["reason"] = record.reason
        _write_text(entry, "json", record.json_text)
        _write_text(entry, "csv", record.csv_text)


def save_session(path: str | os.PathLike[str], session: Session) -> None:
    """Write ``session`` to ``path`` atomically.

    A temp file in the same folder is written, flushed, fsynced and renamed over ``path``; on
    any failure the temp file is removed and an existing ``path`` is left exactly as it was.

    Args:
        path: the ``.h5`` file to (over)write.
        session: what to save; its problem must be valid.

    Raises:
        SessionError: the session is invalid, or the file cannot be written (and why).
    """
    target = Path(path)
    try:
        session.problem()
    except ValidationError as exc:
        raise SessionError(f"cannot save session to {target}: invalid input: {exc}") from None
    folder = target.parent
    if not folder.is_dir():
        raise SessionError(f"cannot save session to {target}: folder {folder} does not exist")
    if target.is_dir():
        raise SessionError(f"cannot save session to {target}: it is a folder")
    temp_name: str | None = None
    try:
        handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
        os.close(handle)
        h5py = _h5py()
        with h5py.File(temp_name, "w", userblock_size=USERBLOCK_SIZE) as root:
            _write_session(root, session)
            root.flush()
        _seal(Path(temp_name))  # writes the user block and fsyncs the file
        os.chmod(temp_name, _default_file_mode())
        os.replace(temp_name, target)
        temp_name = None
    except (OSError, ValueError, TypeError, RuntimeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        previous = "; the previous file is unchanged" if target.exists() else ""
        raise SessionError(f"cannot save session to {target}: {reason}{previous}") from None
    finally:
        if temp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)
    _fsync_dir(folder)


def _payload_sha256(stream: Any) -> tuple[int, str]:
    stream.seek(USERBLOCK_SIZE)
    digest = hashlib.sha256()
    size = 0
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def _seal(path: Path) -> None:
    """Write the seal (schema version, payload size and sha256) into the user block."""
    with path.open("r+b") as stream:
        size, digest = _payload_sha256(stream)
        header = SEAL_MAGIC + (
            f"schema_version={SCHEMA_VERSION}\npayload_bytes={size}\npayload_sha256={digest}\n"
        ).encode("ascii")
        stream.seek(0)
        stream.write(header.ljust(USERBLOCK_SIZE, b"\0"))
        stream.flush()
        os.fsync(stream.fileno())


def _read_seal(source: Path) -> dict[str, str] | None:
    """The seal's fields, or None when the file does not start with one."""
    with source.open("rb") as stream:
        block = stream.read(USERBLOCK_SIZE)
    if not block.startswith(SEAL_MAGIC):
        return None
    text = block[len(SEAL_MAGIC) :].split(b"\0", 1)[0].decode("ascii", "replace")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _check_seal(source: Path, seal: dict[str, str]) -> None:
    """Refuse a newer/older schema, a truncated or a corrupted file, before HDF5 reads it."""
    where = f"cannot open session {source}"
    try:
        version = int(seal["schema_version"])
        declared = int(seal["payload_bytes"])
        expected = seal["payload_sha256"]
    except (KeyError, ValueError):
        raise SessionError(f"{where}: its header is damaged") from None
    if version > SCHEMA_VERSION:
        raise SessionError(
            f"{where}: written by a newer version (schema {version}; this program reads up to "
            f"{SCHEMA_VERSION}); update the inspector"
        )
    if version < MIN_SCHEMA_VERSION:
        raise SessionError(
            f"{where}: schema {version} is older than any this program reads "
            f"({MIN_SCHEMA_VERSION}..{SCHEMA_VERSION})"
        )
    with source.open("rb") as stream:
        size, digest = _payload_sha256(stream)
    if size != declared:
        state = "truncated" if size < declared else "extended"
        raise SessionError(f"{where}: {state}: {size} bytes of data, the header says {declared}")
    if digest != expected:
        raise SessionError(f"{where}: corrupted: its checksum does not match the header")


def _default_file_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# ----------------------------------------------------------------------------- reading


class _Damaged(Exception):
    """Internal: a structural problem found while reading (becomes a SessionError)."""


def _attr(node: Any, name: str) -> Any:
    if name not in node.attrs:
        raise _Damaged(f"{node.name} has no attribute {name!r}")
    value = node.attrs[name]
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _node(parent: Any, name: str) -> Any:
    if name not in parent:
        raise _Damaged(f"missing {parent.name.rstrip('/')}/{name}")
    return parent[name]


def _read_strings(group: Any, name: str) -> tuple[str, ...]:
    return tuple(str(v) for v in _node(group, name).asstr()[...].tolist())


def _read_text(group: Any, name: str) -> str:
    dataset = _node(group, name)
    if dataset.dtype == np.uint8:
        return np.asarray(dataset[...], dtype=np.uint8).tobytes().decode("utf-8")
    return str(dataset.asstr()[()])


def _read_array(group: Any, name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    array = np.array(_node(group, name)[...])
    if shape is not None and array.shape != shape:
        raise _Damaged(f"{group.name}/{name} has shape {array.shape}, expected {shape}")
    return array


def _read_values(group: Any, name: str, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    dataset = _node(group, name)
    stored = _attr(dataset, "dtype")
    if stored != dtype:
        raise _Damaged(f"{dataset.name} is stored as {stored!r}, the problem says {dtype!r}")
    raw = np.array(dataset[...])
    if raw.shape != shape:
        raise _Damaged(f"{dataset.name} has shape {raw.shape}, expected {shape}")
    expected_kind = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}[dtype]
    if raw.dtype != expected_kind:
        raise _Damaged(f"{dataset.name} holds {raw.dtype}, expected {np.dtype(expected_kind)}")
    if dtype == "bfloat16":
        return from_bfloat16_bits(raw)
    return raw.astype(np.float64)


def _read_kill_table(group: Any, target: str) -> KillTable:
    sub = _node(group, target)
    mutants = _read_strings(sub, "mutants")
    fixture_names = _read_strings(sub, "fixtures")
    count = len(fixture_names)
    return KillTable(
        target=str(_attr(sub, "target")),
        mutants=mutants,
        fixtures=fixture_names,
        categories=_read_strings(sub, "categories"),
        expected=_read_strings(sub, "expected"),
        baseline_actual=_read_strings(sub, "baseline_actual"),
        baseline_passed=_read_array(sub, "baseline_passed", (count,)).astype(bool),
        detected=_read_array(sub, "detected", (len(mutants), count)).astype(bool),
    )


def _read_results(root: Any, rows: int, width: int) -> SessionResults | None:
    if "results" not in root:
        return None
    group = root["results"]
    scalar = _node(group, "scalar")
    tiled = _node(group, "tiled")
    matrices = _node(group, "kill_matrix")
    kernel = group.get("kernel", None)
    failures = json.loads(_attr(group, "failures"))
    if not isinstance(failures, list):
        raise _Damaged("results failures is not a list")
    return SessionResults(
        mode=str(_attr(group, "mode")),
        device=str(_attr(group, "device")),
        kernel_note=str(_attr(group, "kernel_note")),
        errors_source=str(_attr(group, "errors_source")),
        passed=bool(_attr(group, "passed")),
        failures=tuple(str(f) for f in failures),
        scalar_sum_squares=_read_array(scalar, "sum_squares", (rows,)),
        scalar_mean_square=_read_array(scalar, "mean_square", (rows,)),
        scalar_rrms=_read_array(scalar, "rrms", (rows,)),
        scalar_y=_read_output(scalar, "y", (rows, width)),
        tiled_sum_squares=_read_array(tiled, "sum_squares", (rows,)),
        tiled_mean_square=_read_array(tiled, "mean_square", (rows,)),
        tiled_rrms=_read_array(tiled, "rrms", (rows,)),
        tiled_y=_read_output(tiled, "y", (rows, width)),
        tiled_block=int(_attr(tiled, "block")),
        poison=float(_attr(tiled, "poison")),
        row_max_abs=_read_array(group, "row_max_abs", (rows,)),
        row_max_rel=_read_array(group, "row_max_rel", (rows,)),
        model_matrix=_read_kill_table(matrices, "model"),
        kernel_matrix=_read_kill_table(matrices, "kernel") if "kernel" in matrices else None,
        kernel_y=_read_output(kernel, "y", (rows, width)) if kernel is not None else None,
        kernel_oob_addresses=(
            _read_array(kernel, "oob_addresses").astype(np.int64) if kernel is not None else None
        ),
        kernel_block=(
            int(_attr(kernel, "block")) if kernel is not None and "block" in kernel.attrs else None
        ),
        kernel_num_warps=(
            int(_attr(kernel, "num_warps"))
            if kernel is not None and "num_warps" in kernel.attrs
            else None
        ),
    )


def _read_session(root: Any) -> Session:
    problem = _node(root, "problem")
    dtype = str(_attr(problem, "dtype"))
    if dtype not in DTYPES:
        raise _Damaged(f"problem dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    rows, width = int(_attr(problem, "rows")), int(_attr(problem, "width"))
    x = _read_values(problem, "x", dtype, (rows, width))
    weight = _read_values(problem, "weight", dtype, (width,))
    mutants = _node(root, "mutants")
    toggles: dict[str, dict[str, bool]] = {}
    for target in ("model", "kernel"):
        names = _read_strings(mutants, f"{target}_names")
        states = _read_array(mutants, f"{target}_on", (len(names),)).astype(bool)
        toggles[target] = {n: bool(s) for n, s in zip(names, states, strict=False)}
    bench = _node(root, "bench")
    samples = {str(_attr(bench[k], "key")): np.array(bench[k][...]) for k in sorted(bench)}
    receipts = _node(root, "receipts")
    history_group = _node(receipts, "history")
    history = [
        ReceiptRecord(
            kind=str(_attr(history_group[k], "kind")),
            created=str(_attr(history_group[k], "created")),
            reason=str(_attr(history_group[k], "reason")),
            json_text=_read_text(history_group[k], "json"),
            csv_text=_read_text(history_group[k], "csv"),
        )
        for k in sorted(history_group)
    ]
    return Session(
        x=x,
        weight=weight,
        eps=float(_attr(problem, "eps")),
        dtype=dtype,
        row_stride=int(_attr(problem, "row_stride")),
        name=str(_attr(problem, "name")),
        model_mutants=toggles["model"],
        kernel_mutants=toggles["kernel"],
        results=_read_results(root, rows, width),
        bench_samples=samples,
        bench_meta=json.loads(_attr(bench, "meta")),
        compile_info=(
            json.loads(_read_text(root["compile"], "json")) if "compile" in root else None
        ),
        versions=json.loads(_read_text(_node(root, "versions"), "json")),
        receipt_json=_read_text(receipts, "json") if "json" in receipts else None,
        receipt_csv=_read_text(receipts, "csv") if "csv" in receipts else None,
        receipt_history=history,
    )


def load_session(path: str | os.PathLike[str]) -> Session:
    """Open a session file read-only and return its contents.

    Args:
        path: an ``.h5`` file written by :func:`save_session`.

    Returns:
        The session (its problem re-validated).

    Raises:
        SessionError: missing, not HDF5, truncated or corrupted, not ours, written by a newer
            schema, or with datasets missing or inconsistent. The file is never modified.
    """
    source = Path(path)
    if not source.is_file():
        raise SessionError(f"cannot open session {source}: no such file")
    h5py = _h5py()
    try:
        seal = _read_seal(source)
        if seal is None:
            is_hdf5 = h5py.is_hdf5(str(source))
        else:
            _check_seal(source, seal)
    except OSError as exc:
        raise SessionError(f"cannot open session {source}: {exc.strerror or exc}") from None
    if seal is None:
        if not is_hdf5:
            raise SessionError(
                f"cannot open session {source}: not an HDF5 file (foreign, truncated or corrupted)"
            )
        raise SessionError(
            f"cannot open session {source}: an HDF5 file, but not an RMSNorm inspector session "
            "(no session header; foreign, or its header is damaged)"
        )
    try:
        with h5py.File(source, "r", locking=False) as root:
            kind = root.attrs.get("format")
            if isinstance(kind, bytes):
                kind = kind.decode("utf-8", "replace")
            if kind != SESSION_FORMAT:
                raise SessionError(
                    f"cannot open session {source}: an HDF5 file, but not an RMSNorm inspector "
                    f"session (format attribute {kind!r}, expected {SESSION_FORMAT!r})"
                )
            version = root.attrs.get("schema_version")
            if isinstance(version, np.generic):
                version = version.item()
            if not isinstance(version, int) or isinstance(version, bool):
                raise SessionError(
                    f"cannot open session {source}: schema_version {version!r} is not valid"
                )
            if version < MIN_SCHEMA_VERSION:
                raise SessionError(
                    f"cannot open session {source}: schema {version} is older than any this "
                    f"program reads ({MIN_SCHEMA_VERSION}..{SCHEMA_VERSION})"
                )
            if version > SCHEMA_VERSION:
                raise SessionError(
                    f"cannot open session {source}: written by a newer version (schema "
                    f"{version}; this program reads up to {SCHEMA_VERSION}); update the inspector"
                )
            session = _read_session(root)
    except SessionError:
        raise
    except _Damaged as exc:
        raise SessionError(f"cannot open session {source}: damaged session: {exc}") from None
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as exc:
        raise SessionError(
            f"cannot open session {source}: truncated or corrupted ({type(exc).__name__}: {exc})"
        ) from None
    try:
        session.problem()
    except ValidationError as exc:
        raise SessionError(f"cannot open session {source}: invalid stored input: {exc}") from None
    return session


# ----------------------------------------------------------------------------- autosave


def autosave_path(
    path: str | os.PathLike[str] | None, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """Where unsaved work of the session at ``path`` is autosaved.

    Args:
        path: the session's file, or None for an untitled session.
        cache_dir: folder for untitled sessions (default ``$XDG_CACHE_HOME/rmsnorm-inspector``
            or ``~/.cache/rmsnorm-inspector``).

    Returns:
        ``.NAME.autosave.h5`` beside a saved session; ``untitled.autosave.h5`` in the cache
        folder for an untitled one.
    """
    if path is not None:
        target = Path(path)
        return target.with_name(f".{target.stem}{AUTOSAVE_SUFFIX}")
    if cache_dir is None:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        cache_dir = Path(base) / "rmsnorm-inspector"
    return Path(cache_dir) / f"untitled{AUTOSAVE_SUFFIX}"


def write_autosave(
    session: Session,
    path: str | os.PathLike[str] | None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """Save ``session`` atomically to its autosave file (never to ``path`` itself).

    Raises:
        SessionError: as :func:`save_session`.
    """
    target = autosave_path(path, cache_dir)
    if path is None:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SessionError(f"cannot autosave to {target}: {exc.strerror or exc}") from None
    save_session(target, session)
    return target


def recovery_candidate(
    path: str | os.PathLike[str] | None, cache_dir: str | os.PathLike[str] | None = None
) -> Path | None:
    """An autosave worth offering after a crash: it exists and is newer than ``path``.

    Returns:
        The autosave's path, or None. (Opening it can still fail: use :func:`load_session`.)
    """
    candidate = autosave_path(path, cache_dir)
    if not candidate.is_file():
        return None
    saved = Path(path) if path is not None else None
    if saved is not None and saved.is_file():
        newer = candidate.stat().st_mtime_ns > saved.stat().st_mtime_ns
        return candidate if newer else None
    return candidate


def discard_autosave(
    path: str | os.PathLike[str] | None, cache_dir: str | os.PathLike[str] | None = None
) -> None:
    """Remove the autosave (after a successful save, or when the user declines recovery)."""
    with contextlib.suppress(FileNotFoundError):
        autosave_path(path, cache_dir).unlink()


# ----------------------------------------------------------------------------- comparing


def bench_differences(
    first: Mapping[str, np.ndarray], second: Mapping[str, np.ndarray]
) -> list[str]:
    """Timing distributions that moved by more than the spread recorded in their samples.

    A key is flagged when its medians differ by more than the larger of the two interquartile
    ranges (noise as the samples themselves measured it); keys present in one only are listed.

    Returns:
        One line per flagged key, empty when nothing moved beyond its spread.
    """
    found = []
    for key in sorted(set(first) | set(second)):
        if key not in second:
            found.append(f"bench {key}: only in the first")
            continue
        if key not in first:
            found.append(f"bench {key}: only in the second")
            continue
        left = np.asarray(first[key], dtype=np.float64).ravel()
        right = np.asarray(second[key], dtype=np.float64).ravel()
        left, right = left[np.isfinite(left)], right[np.isfinite(right)]
        if not left.size or not right.size:
            if left.size != right.size:
                found.append(f"bench {key}: {left.size} finite samples -> {right.size}")
            continue
        q1_left, median_left, q3_left = np.percentile(left, [25, 50, 75])
        q1_right, median_right, q3_right = np.percentile(right, [25, 50, 75])
        spread = max(q3_left - q1_left, q3_right - q1_right)
        if abs(median_right - median_left) > spread:
            found.append(
                f"bench {key}: median {median_left:.6g} -> {median_right:.6g} "
                f"(beyond the spread {spread:.3g})"
            )
    return found
