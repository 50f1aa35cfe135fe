"""The one record the window's evidence is drawn from, Qt-free: the last check of this
inspection (or the check a session file saved), with its identity (the input's hash, the
kernel it proved, when, by which run) and whether it still holds for what is loaded now.

Every view that shows evidence (the verdict, the check log, the kill matrix, the captions of
the grid, stepper and row table, the coverage map) draws from :func:`shown_record` and names
its :attr:`Record.tag`; a record whose input or kernel is not the current one is *stale* and
says why in every view, so no verdict pairs one kernel's result with another kernel's name. A
saved check is paired with the session's receipt only when that receipt is of the same input,
kernel and verdict (:func:`receipt_pairs`): then the receipt is the saved check's proof, which
Export receipts writes again byte for byte.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from inspector.check.results import StoresOutOfBounds
from inspector.model import kernel_choice, launch

#: ``inspector.model.state.InspectionState`` (the state builds its record from this module).
InspectionState = Any

#: Hex digits of the input hash the views show.
SHORT_ID = 12
#: The kernel field of a record whose check ran no kernel (the lane model only).
MODEL_ONLY = "model only (no kernel ran)"


def input_id(problem: Any) -> str:
    """The input's identity: sha256 over the x and weight hashes a receipt records
    (``values_sha256``), dtype, eps and row stride; the first :data:`SHORT_ID` digits."""
    from inspector.records.receipts.format import values_sha256

    return _input_digest(
        values_sha256(problem.x, problem.dtype),
        values_sha256(problem.weight, problem.dtype),
        problem.dtype,
        float(problem.eps),
        int(problem.row_stride),
    )


def _input_digest(x_sha: str, weight_sha: str, dtype: str, eps: float, stride: int) -> str:
    digest = hashlib.sha256(f"{x_sha}|{weight_sha}|{dtype}|{eps!r}|{stride}".encode())
    return digest.hexdigest()[:SHORT_ID]


def receipt_input_id(receipt: dict[str, Any]) -> str | None:
    """:func:`input_id` of the input a parsed receipt records (None: it records none)."""
    try:
        section = receipt["input"]
        return _input_digest(
            str(section["x_sha256"]),
            str(section["weight_sha256"]),
            str(section["dtype"]),
            float(section["eps"]),
            int(section["row_stride"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def kernel_words(source: dict[str, Any] | None) -> str:
    """A kernel as a receipt names it (``kernel.source``), in a few words."""
    if source is None:
        return MODEL_ONLY
    if source.get("kind") == "user":
        return f"{Path(str(source.get('path', '?'))).name}:{source.get('function', '?')}"
    return "the bundled kernel"


def note_source(kernel_note: str) -> dict[str, Any]:
    """The kernel a saved check's ``kernel_note`` names, as a receipt would (its path and
    function parsed from ``user kernel PATH:FUNCTION (sha256 ...)``)."""
    note = str(kernel_note or "")
    if not note.startswith("user kernel "):
        return {"kind": "bundled"}
    named = note.removeprefix("user kernel ").split(" (sha256", 1)[0]
    path, _, function = named.rpartition(":")
    return {"kind": "user", "path": path, "function": function}


@dataclass(frozen=True)
class Record:
    """One check's evidence and what it is of.

    Attributes:
        origin: "check" (run in this window) or "saved" (a session file's).
        input_id: :func:`input_id` of the input it ran on.
        kernel: the kernel it proved, as a receipt names it (None: model only).
        when: the local time it was taken ("HH:MM:SS") or the receipt's UTC stamp.
        run: which run made it ("Run check (with the kernel, interpreter)", ...).
        verdict: "passed", "failed" or "not judged".
        stale: "" while it is of the current input and the loaded kernel, else why not.
        check: the ``CheckResult`` (origin "check").
        saved: the ``SessionResults`` (origin "saved").
        receipt: (JSON, CSV) texts of its receipt, when known.
        receipt_data: the parsed receipt (a saved check's, when it pairs).
        batch_invariant: the launch mode of its kernel run (``inspector.model.launch``): a
            check proves the default launch (False); None where no mode applies (no kernel
            ran, or a user's kernel ran with its own launcher).
    """

    origin: str
    input_id: str
    kernel: dict[str, Any] | None
    when: str
    run: str
    verdict: str
    stale: str = ""
    check: Any = None
    saved: Any = None
    receipt: tuple[str, str] | None = None
    receipt_data: dict[str, Any] | None = None
    batch_invariant: bool | None = None

    @property
    def current(self) -> bool:
        """Whether it is evidence about the input and kernel loaded now."""
        return not self.stale

    @property
    def kernel_name(self) -> str:
        return kernel_words(self.kernel)

    @property
    def tag(self) -> str:
        """The identity every view that shows it names: input, kernel, run, when."""
        return f"input {self.input_id} · {self.kernel_name} · {self.run} at {self.when}"

    @property
    def of_other_kernel(self) -> bool:
        """Whether it is stale because it proved another kernel (its input still holds)."""
        return self.stale.startswith("of ")

    def caption(self) -> str:
        """The tag, with "STALE: why" in front when it does not hold for what is loaded."""
        return f"STALE ({self.stale}): {self.tag}" if self.stale else self.tag


def _stale(
    state: InspectionState,
    record_input: str,
    kernel: dict[str, Any] | None,
    batch_invariant: bool | None = None,
) -> str:
    """Why a record of ``record_input`` and ``kernel``, launched in the ``batch_invariant``
    mode, is not evidence about what is loaded and chosen."""
    if state.problem is None:
        return "the input is invalid now; this is the evidence of the last valid input"
    if record_input != state.input_id:
        return "the input changed since"
    loaded = kernel_choice.kernel_source(state.kernel)
    if kernel is not None and kernel_words(kernel) != kernel_words(loaded):
        return f"of {kernel_words(kernel)}, not the loaded kernel ({kernel_words(loaded)})"
    if (
        kernel is not None
        and kernel.get("kind") == "user"
        and "file_sha256" in kernel
        and kernel.get("file_sha256") != loaded.get("file_sha256")
    ):
        return (
            f"of {kernel_words(kernel)} with sha256 {str(kernel['file_sha256'])[:12]}, "
            f"which is now {str(loaded.get('file_sha256'))[:12]}"
        )
    return launch.stale_reason(batch_invariant, state.batch_invariant)


def _mode(kernel: dict[str, Any] | None, batch_invariant: bool | None) -> bool | None:
    """A record's launch mode: None without a bundled kernel run."""
    if kernel is None or kernel.get("kind") == "user":
        return None
    return bool(batch_invariant)


def saved_mode(saved: Any) -> bool | None:
    """The launch mode of a session file's kernel run (None: no bundled kernel ran); a file
    written before the mode was recorded ran the default launch."""
    if getattr(saved, "kernel_y", None) is None:
        return None
    if str(getattr(saved, "kernel_note", "")).startswith("user kernel "):
        return None
    return bool(getattr(saved, "kernel_batch_invariant", None) or False)


def check_record(state: InspectionState, result: Any) -> Record:
    """The record of a check run in this window."""
    kernel = None
    if result.kernel is not None:
        kernel = dict(getattr(result, "kernel_source", None) or {"kind": "bundled"})
    where = (
        "with the kernel" if getattr(result, "kernel_matrix", None) is not None else "model only"
    )
    record_input = state.input_id_of(result.problem)
    passed = getattr(result, "passed", False)
    mode = _mode(kernel, launch.check_mode(result))
    return Record(
        origin="check",
        input_id=record_input,
        kernel=kernel,
        when=state.stamps.get("check_result", "?"),
        run=f"Run check ({where}, {getattr(result, 'mode', '?')})",
        verdict=str(getattr(result, "verdict", "passed" if passed else "failed")),
        stale=_stale(state, record_input, kernel, mode),
        check=result,
        receipt=state.check_receipt(result),
        batch_invariant=mode,
    )


def receipt_pairs(receipt: dict[str, Any] | None, saved: Any, saved_input: str) -> bool:
    """Whether ``receipt`` (parsed) is the proof of the saved check ``saved``: of the same
    input, kernel note and verdict."""
    if not isinstance(receipt, dict):
        return False
    kernel = receipt.get("kernel") or {}
    verdict = receipt.get("verdict") or {}
    return (
        receipt_input_id(receipt) == saved_input
        and kernel.get("note") == getattr(saved, "kernel_note", None)
        and bool(verdict.get("passed")) == bool(getattr(saved, "passed", None))
        and bool(kernel.get("ran")) == (getattr(saved, "kernel_y", None) is not None)
    )


def saved_record(state: InspectionState, saved: Any, provenance: Any = None) -> Record:
    """The record of the check a session file saved, paired with the session's receipt when
    that receipt is its proof; ``provenance`` (``records.provenance.KernelProvenance``) marks
    it stale when the kernel it proved changed on disk since."""
    session = state.session
    texts = None
    parsed = None
    if session is not None and session.receipt_json and session.receipt_csv:
        parsed = parse_receipt(session.receipt_json)
        if receipt_pairs(parsed, saved, state.saved_input_id):
            texts = (session.receipt_json, session.receipt_csv)
        else:
            parsed = None
    ran = getattr(saved, "kernel_y", None) is not None
    kernel = None
    if ran:
        source = (parsed or {}).get("kernel", {}).get("source")
        kernel = (
            dict(source)
            if isinstance(source, dict)
            else note_source(getattr(saved, "kernel_note", ""))
        )
    mode = _mode(kernel, saved_mode(saved))
    stale = _stale(state, state.saved_input_id, kernel, mode)
    if not stale and not kernel_choice.saved_results_match(
        getattr(saved, "kernel_note", ""), state.kernel
    ):
        stale = f"of {kernel_words(kernel)}, not the loaded kernel"
    if not stale and provenance is not None and provenance.changed:
        stale = "kernel changed since this receipt"
    created = (parsed or {}).get("created")
    return Record(
        origin="saved",
        input_id=state.saved_input_id,
        kernel=kernel,
        when=f"{created} (saved)" if created else "an unrecorded time (saved)",
        run=f"the session file's check ({getattr(saved, 'mode', '?')})",
        verdict=str(
            getattr(saved, "verdict", "") or ("passed" if getattr(saved, "passed", 0) else "failed")
        ),
        stale=stale,
        saved=saved,
        receipt=texts,
        receipt_data=parsed,
        batch_invariant=mode,
    )


def parse_receipt(text: str | None) -> dict[str, Any] | None:
    """A receipt's JSON text parsed by the receipt files' own strict reader (None: unreadable)."""
    from inspector.records.receipts.format import parse_receipt_json

    try:
        parsed = parse_receipt_json(text or "null", "the session's receipt")
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def write_receipt_pair(receipt: tuple[str, str], folder: str) -> Any:
    """Write a record's receipt pair into ``folder`` exactly as held (byte for byte), published
    as one change like every receipt pair, then verify it independently.

    Returns:
        The ``records.receipts.verify.VerifyReport`` of the written files.

    Raises:
        OSError: the folder cannot be made or written (the previous pair stays).
    """
    import contextlib

    from inspector.records.atomic import publish_pair, recover_pair, stage_text
    from inspector.records.receipts.receipt import CSV_NAME, JSON_NAME
    from inspector.records.receipts.verify import verify_receipts

    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    recover_pair(target)
    json_path, csv_path = target / JSON_NAME, target / CSV_NAME
    staged: list[Path] = []
    try:
        staged.append(stage_text(csv_path, receipt[1]))
        staged.append(stage_text(json_path, receipt[0]))
        publish_pair({csv_path: staged[0], json_path: staged[1]})
    finally:
        for temp in staged:
            with contextlib.suppress(OSError):
                temp.unlink()
    return verify_receipts(json_path, csv_path)


def saved_stores(saved: Any, problem: Any) -> StoresOutOfBounds:
    """The out-of-bounds stores of a session's saved kernel output, in the frame the lane grid
    draws (``StoresOutOfBounds``): its ``kernel_oob_addresses`` (indices into the guarded
    output buffer) less the leading guard the file records, or, in a file that records none, the
    guard the run had (a user kernel's one tile, with a tile between output rows; the bundled
    kernel's tile)."""
    buffer = getattr(saved, "kernel_oob_addresses", None)
    if buffer is None or len(buffer) == 0 or problem is None:
        return StoresOutOfBounds()
    guard = getattr(saved, "kernel_oob_guard", None)
    row_stride = int(getattr(saved, "kernel_oob_row_stride", 0) or 0)
    if guard is None:
        block = 1 << max(0, int(problem.width - 1).bit_length())
        if str(getattr(saved, "kernel_note", "")).startswith("user kernel "):
            guard, row_stride = block, problem.width + block
        else:
            guard = int(getattr(saved, "kernel_block", None) or block)
    addresses = tuple(int(a) for a in np.asarray(buffer, dtype=np.int64))
    return StoresOutOfBounds(
        output=tuple(a - int(guard) for a in addresses), row_stride=row_stride, buffer=addresses
    )


def compile_caption(state: InspectionState) -> str:
    """The Compiler tab's line: where its output is from and the shape it was compiled
    for, with "STALE" in front when that is not the current input's dtype and width."""
    shape = state.compile_shape
    named = f"{shape[0]}, width {shape[1]}" if shape is not None else "an unrecorded shape"
    source = f"{state.compile_source}, " if state.compile_source else ""
    text = f"{source}compiled for {named}"
    problem = state.problem
    now = (problem.dtype, problem.width) if problem is not None else None
    if state.compile_info and now != shape:
        is_now = f"{now[0]}, width {now[1]}" if now is not None else "invalid"
        text = f"STALE: {text}; the input is {is_now} now (Compile for it)"
    return text


def saved_provenance(state: InspectionState) -> Any:
    """The session receipt's kernel against the loaded kernel on disk
    (``records.provenance.KernelProvenance``)."""
    from inspector.records.provenance import kernel_provenance

    session = state.session
    return kernel_provenance(
        session.receipt_json if session is not None else None,
        kernel_choice.kernel_source(state.kernel),
    )
