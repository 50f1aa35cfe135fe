"""The child process that runs a user's kernel for :mod:`kernels.sandbox.usercode` (never imported
by the inspector's own process): ``python -m kernels.sandbox.usercode_child PATH FUNCTION
MEMORY_LIMIT_BYTES``. The
sanitizer's child (:mod:`inspector.check.sanitize_child`, a process of its own) runs the kernel the
same way through :func:`load_launcher` and :func:`run_guarded`.

The user's file is arbitrary code, so it runs here, in a process of its own: a crash, a hang or
a store past its buffers ends or corrupts this process only. The protocol runs over the stdout
file descriptor this process started with; the user's prints (Python's and C's) go to stderr.
Each message is one JSON line, then the raw ``.npy`` bytes of the arrays it announces
(``np.load(..., allow_pickle=False)`` on the other side: no pickle crosses the boundary).
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np


def _send(channel: BinaryIO, header: dict[str, Any], arrays: tuple[np.ndarray, ...] = ()) -> None:
    blobs = []
    for array in arrays:
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
        blobs.append(buffer.getvalue())
    header = {**header, "array_bytes": [len(b) for b in blobs]}
    channel.write(json.dumps(header).encode("utf-8") + b"\n")
    for blob in blobs:
        channel.write(blob)
    channel.flush()


def _receive(channel: BinaryIO) -> tuple[dict[str, Any], list[np.ndarray]] | None:
    line = channel.readline()
    if not line:
        return None
    header = json.loads(line)
    arrays = [
        np.load(io.BytesIO(channel.read(int(size))), allow_pickle=False)
        for size in header.get("array_bytes", [])
    ]
    return header, arrays


def load_launcher(path: str, function: str) -> Any:
    """The callable ``function`` of the file ``path``, imported as a module of its own."""
    # The file's folder first on the path, so that it imports its siblings as when run itself.
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("rmsnorm_inspector_user_kernel", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    launcher = getattr(module, function, None)
    if launcher is None:
        raise LookupError(f"{path} defines no {function!r}")
    if not callable(launcher):
        raise TypeError(f"{path}:{function} is a {type(launcher).__name__}, not a function")
    _check_signature(launcher, f"{path}:{function}")
    return launcher


def _check_signature(launcher: Any, name: str) -> None:
    """Refuse a launcher that cannot be called as ``FUNCTION(x, weight, eps)``: a kernel that
    takes one argument fails here, once, not on every fixture. A launcher whose signature
    Python cannot read (a builtin, a C extension) is let through."""
    import inspect

    try:
        signature = inspect.signature(launcher)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(object(), object(), 1e-6)
    except TypeError as err:
        raise TypeError(
            f"{name}{signature} cannot be called as FUNCTION(x, weight, eps, out=None): {err}"
        ) from None


def run_guarded(launcher: Any, header: dict[str, Any], x: np.ndarray, weight: np.ndarray) -> tuple:
    """One run in poison-filled guarded buffers (``header``: dtype, eps, strides, guard,
    poison): ``(y, (output, x, weight buffers as raw bits), what it returned, why out= was
    refused, reads out of bounds)``. Judging the buffers is the inspector's
    (:mod:`kernels.sandbox.judge`), never this process's. What it returned is
    ``{"dtype", "column_stride", "aliases"}``; the reads (under the interpreter:
    :mod:`kernels.instruments.guarded_reads`) are ``{"x" | "weight" | "out": [count, first
    element indices into that buffer]}``."""
    import torch

    import kernels
    from kernels.instruments import guarded_reads
    from kernels.instruments.guarded_reads import strided_valid
    from kernels.mode import COMPILED
    from kernels.sandbox.judge import bits, guarded_buffers

    device = torch.device("cuda" if kernels.MODE == COMPILED else "cpu")
    rows, width, x_stride, y_stride = x.shape[0], x.shape[1], header["x_stride"], header["y_stride"]
    guard = int(header["guard"])
    x_buffer, w_buffer, y_buffer = guarded_buffers(
        x, weight, dtype=header["dtype"], guard=guard, poison=float(header["poison"]),
        x_stride=x_stride, y_stride=y_stride, device=device,
    )  # fmt: skip
    x_view = x_buffer[guard:].as_strided((rows, width), (x_stride, 1))
    y_view = y_buffer[guard:].as_strided((rows, width), (y_stride, 1))
    w = w_buffer[guard : guard + width]
    refused_out = ""
    watch = guarded_reads.Watch()
    if kernels.MODE != COMPILED:  # on a GPU, compute-sanitizer sees reads past allocations
        size = x_buffer.element_size()
        watch.add("x", x_buffer.data_ptr(), size, strided_valid(guard, rows, width, x_stride))
        watch.add("weight", w_buffer.data_ptr(), size, strided_valid(guard, 1, width, width))
        watch.add("out", y_buffer.data_ptr(), size, strided_valid(guard, rows, width, y_stride))
    with guarded_reads.watching(watch):
        try:
            result = launcher(x_view, w, float(header["eps"]), out=y_view)
        except TypeError as err:  # a launcher without out=: checked on its output alone
            refused_out = f"{type(err).__name__}: {err}"
            result = launcher(x_view, w, float(header["eps"]))
    if device.type == "cuda":
        torch.cuda.synchronize()
    if not isinstance(result, torch.Tensor):
        raise TypeError(f"the launcher returned {type(result).__name__}, not a tensor")
    if tuple(result.shape) != (rows, width):
        raise ValueError(f"the launcher returned shape {tuple(result.shape)}; x is {(rows, width)}")
    if not refused_out and result.data_ptr() != y_view.data_ptr():
        # The launcher took out= but wrote elsewhere: its output is what it returned.
        refused_out = "out= accepted, but the result is another tensor"
    returned = {
        "dtype": str(result.dtype).removeprefix("torch."),
        "column_stride": int(result.stride(1)),
        "aliases": [name for name, buffer in (("x", x_buffer), ("the weight", w_buffer))
                    if _overlaps(result, buffer)],
    }  # fmt: skip
    y = result.detach().to("cpu", torch.float64).numpy()
    raw = (bits(y_buffer), bits(x_buffer), bits(w_buffer))
    reads = {name: [watch.counts[name], watch.found[name][:64]] for name in watch.counts}
    return y, raw, returned, refused_out, reads


def _overlaps(tensor: Any, buffer: Any) -> bool:
    """Whether any element ``tensor`` views lies in ``buffer``'s memory."""
    if tensor.numel() == 0 or tensor.device != buffer.device:
        return False
    size = tensor.element_size()
    low = tensor.data_ptr() + size * sum(
        min(0, (n - 1) * s) for n, s in zip(tensor.shape, tensor.stride(), strict=True)
    )
    high = tensor.data_ptr() + size * (
        1 + sum(max(0, (n - 1) * s) for n, s in zip(tensor.shape, tensor.stride(), strict=True))
    )
    start = buffer.data_ptr()
    return low < start + buffer.numel() * buffer.element_size() and start < high  # fmt: skip


def _record(launcher: Any, header: dict[str, Any]) -> list[dict]:
    """The launch signatures of one dry run (nothing is launched) on a problem's layout: x and
    the output as views into uninitialised buffers with the problem's strides and guard."""
    import torch

    import kernels
    from kernels.instruments.launches import recording
    from kernels.mode import COMPILED

    dtype = getattr(torch, header["dtype"])
    device = torch.device("cuda" if kernels.MODE == COMPILED else "cpu")
    rows, width, guard = int(header["rows"]), int(header["width"]), int(header["guard"])

    def view(stride: int) -> torch.Tensor:
        buffer = torch.empty((2 * guard + rows * stride,), dtype=dtype, device=device)
        return buffer[guard:].as_strided((rows, width), (stride, 1))

    x, y = view(int(header["x_stride"])), view(int(header["y_stride"]))
    w = torch.empty((width,), dtype=dtype, device=device)
    with recording() as found:
        try:
            launcher(x, w, float(header["eps"]), out=y)
        except TypeError:  # a launcher without out=
            launcher(x, w, float(header["eps"]))
    return found


def _probe_machine() -> tuple[tuple[Any, ...], str]:
    """Under the interpreter, what it gets wrong (:mod:`kernels.sandbox.interpreter_probe`),
    recorded from here on; ``((), why)`` when the probe itself could not run."""
    import kernels
    from kernels.mode import INTERPRETER

    if kernels.MODE != INTERPRETER:
        return (), ""
    from kernels.sandbox import interpreter_probe

    try:
        faults = interpreter_probe.probe()
        interpreter_probe.RECORDER.keep_only(faults)
        return faults, ""
    except Exception as err:  # a probe that cannot run tells nothing: say so, judge as before
        return (), f"the interpreter probe failed: {type(err).__name__}: {err}"[:500]


def run_variants(
    launcher: Any,
    header: dict[str, Any],
    x: np.ndarray,
    weight: np.ndarray,
    tuners: list[tuple[str, Any]],
    faults: tuple[Any, ...],
) -> tuple[list[tuple[str, tuple]], list[str]]:
    """One guarded run per autotune variant (one in all for a kernel without autotune):
    ``([(label, run_guarded's result)], faults hit)``; a run that raised re-raises with the
    faults it hit attached as ``machine_faults``."""
    from kernels.sandbox import autotuned, interpreter_probe

    results = []
    with interpreter_probe.RECORDER.recording() as seen:
        try:
            for label, pins in autotuned.variants(tuners):
                with autotuned.pinned(tuners, pins):
                    results.append((label, run_guarded(launcher, header, x, weight)))
        except Exception as err:
            text = "".join(traceback.format_exception_only(type(err), err))
            cause = err.__cause__
            if cause is not None:
                text += f" {type(cause).__name__}: {cause}"
            err.machine_faults = [  # type: ignore[attr-defined]
                f"{f.name}: {f.cause}" for f in interpreter_probe.faults_hit(faults, seen, text)
            ]
            raise
    hit = interpreter_probe.faults_hit(faults, seen)
    return results, [f"{f.name}: {f.cause}" for f in hit]


def main(argv: list[str]) -> int:
    """Serve run requests for the kernel ``argv[0]:argv[1]`` until the input closes, under a
    reaper (:mod:`kernels.sandbox.reaper`) holding the tree to ``argv[2]`` bytes (0: no limit)."""
    from kernels.sandbox import reaper

    reaper.supervise(int(argv[2]) if len(argv) > 2 else 0)
    os.environ["TMPDIR"] = os.getcwd()  # the fresh folder the inspector made for this process
    protocol_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the user's prints (and C's) land on stderr
    sys.stdout = sys.stderr
    protocol_in = sys.stdin.buffer
    try:
        import kernels
        from kernels.sandbox import autotuned

        faults, probe_note = _probe_machine()  # before the user's file binds libdevice
        launcher = load_launcher(argv[0], argv[1])
        tuners = autotuned.find(launcher, Path(argv[0]).parent)
        labels = [label for label, _ in autotuned.variants(tuners) if label]
    except BaseException as err:  # the user's module failed to import: report it
        _send(protocol_out, {"ok": False, "error": f"{type(err).__name__}: {err}"})
        return 2
    declared = getattr(launcher, "inspector_domain", None)  # kernels.sandbox.domain checks it
    try:
        json.dumps(declared)
    except (TypeError, ValueError):
        declared = repr(declared)[:200]
    _send(
        protocol_out,
        {
            "ok": True,
            "mode": kernels.MODE,
            "domain": declared,
            "machine_faults": [f.as_dict() for f in faults],
            "probe_note": probe_note,
            "configs": labels,
        },
    )
    while (message := _receive(protocol_in)) is not None:
        header, arrays = message
        if "record" in header:
            try:
                _send(protocol_out, {"ok": True, "launches": _record(launcher, header["record"])})
            except Exception as err:  # the launcher raised on the dry run
                lines = traceback.format_exception_only(type(err), err)
                _send(protocol_out, {"ok": False, "error": "".join(lines).strip()[:2000]})
            continue
        x, weight = arrays
        try:
            results, hit = run_variants(launcher, header, x, weight, tuners, faults)
            refused_out = next((r[3] for _, r in results if r[3]), "")
            reads: dict[str, list[Any]] = {}
            for _, r in results:  # every config's reads, counted together
                for name, (count, first) in r[4].items():
                    kept = reads.setdefault(name, [0, []])
                    kept[0] += count
                    kept[1] = sorted(set(kept[1]) | set(first))[:64]
            _send(
                protocol_out,
                {
                    "ok": True,
                    "refused_out": refused_out,
                    "not_judged": hit,
                    "configs": [label for label, _ in results],
                    "returned": [r[2] for _, r in results],
                    "oob_reads": reads,
                },
                tuple(array for _, r in results for array in (r[0], *r[1])),
            )
        except Exception as err:  # the user's kernel raised: a finding (or the machine's)
            lines = traceback.format_exception_only(type(err), err)
            _send(
                protocol_out,
                {
                    "ok": False,
                    "error": "".join(lines).strip()[:2000],
                    "not_judged": getattr(err, "machine_faults", []),
                },
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
