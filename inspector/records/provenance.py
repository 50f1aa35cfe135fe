"""Is the kernel a receipt proved the kernel here now? The receipt's ``kernel.source_sha256``
(and ``kernel.source``) against the kernel on disk.

A receipt of the bundled kernel names the sha256 of its ``@triton.jit`` source
(``kernels.instruments.compile_info.kernel_source_sha256``); a user kernel's names its file and that
file's sha256. A saved "check PASSED" means something only while that hash is still the kernel's:
the window shows "kernel changed since this receipt" instead of the green verdict otherwise.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspector.records.receipts.format import parse_receipt_json

# Largest kernel file hashed for the comparison (a kernel source, not a data file).
MAX_KERNEL_FILE_BYTES = 16 * 2**20


@dataclass(frozen=True)
class KernelProvenance:
    """``status``: "same" (the receipt proved the kernel here), "changed", "other" (it proved
    another kernel than the one loaded in the window), "unknown" (nothing to compare, with the
    reason) or "no kernel" (a model-only receipt); ``message`` in words."""

    status: str
    message: str

    @property
    def changed(self) -> bool:
        return self.status == "changed"

    @property
    def stale(self) -> bool:
        """Whether the receipt's verdict says nothing about the kernel loaded now."""
        return self.status in ("changed", "other")


def _names(source: Any) -> str:
    if isinstance(source, dict) and source.get("kind") == "user":
        return f"{source.get('path')}:{source.get('function')}"
    return "the bundled kernel"


def _short(digest: object) -> str:
    return f"{str(digest)[:12]}..."


def _bundled_sha256() -> str:
    from kernels.instruments.compile_info import kernel_source_sha256

    return kernel_source_sha256()


def _file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        data = handle.read(MAX_KERNEL_FILE_BYTES + 1)
    if len(data) > MAX_KERNEL_FILE_BYTES:
        raise ValueError(f"over {MAX_KERNEL_FILE_BYTES} bytes")
    return hashlib.sha256(data).hexdigest()


def kernel_provenance(
    receipt_json: str | None, loaded: dict[str, str] | None = None
) -> KernelProvenance:
    """The receipt's kernel against the kernel on disk now (never raises).

    Args:
        loaded: the kernel the window has loaded, as a receipt names it (``{"kind":
            "bundled"}`` or ``{"kind": "user", "path", "function", ...}``); a receipt of
            another kernel is "other". None: compare with the kernel the receipt names.
    """
    if not receipt_json:
        return KernelProvenance("unknown", "no receipt saved: the kernel it proved is not known")
    try:
        kernel: Any = parse_receipt_json(receipt_json, "the saved receipt")["kernel"]
        ran = bool(kernel["ran"])
        recorded = kernel.get("source_sha256")
        source = kernel.get("source") or {"kind": "bundled"}
    except (ValueError, KeyError, TypeError, AttributeError):
        return KernelProvenance("unknown", "the saved receipt has no readable kernel section")
    if not ran:
        return KernelProvenance("no kernel", "model only: no kernel ran")
    if not isinstance(recorded, str):
        return KernelProvenance("unknown", "the saved receipt records no kernel hash")
    if loaded is not None and _names(source) != _names(loaded):
        return KernelProvenance(
            "other",
            f"this receipt proved {_names(source)}, not the loaded kernel ({_names(loaded)})",
        )
    if isinstance(source, dict) and source.get("kind") == "user":
        where = f"{source.get('path')}:{source.get('function')}"
        try:
            now = _file_sha256(Path(str(source.get("path"))))
        except (OSError, ValueError) as err:
            return KernelProvenance(
                "changed", f"kernel changed since this receipt: {where} cannot be read ({err})"
            )
        what = where
    else:
        try:
            now = _bundled_sha256()
        except Exception as err:  # torch or triton missing: nothing to compare with
            return KernelProvenance("unknown", f"the bundled kernel is not loadable here ({err})")
        what = "the bundled kernel"
    if now == recorded:
        return KernelProvenance("same", f"{what}: sha256 {_short(now)} as in the receipt")
    return KernelProvenance(
        "changed",
        f"kernel changed since this receipt: it proved {what} with sha256 {_short(recorded)}, "
        f"which is now {_short(now)}",
    )
