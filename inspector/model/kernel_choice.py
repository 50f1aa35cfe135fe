"""Which kernel the window proves, Qt-free: the bundled one or a user's ``FILE.py:FUNCTION``.

A user's file is untrusted code, so nothing here imports it: the launcher names offered for a
file are read from its syntax tree (:func:`launcher_names`), and whether the file really loads
is answered by ``inspector.check.user_kernel.check_loadable`` in a child process (the window runs
it on its worker). What the status bar says about the kernel, and whether a check saved
in a session is of the loaded kernel, are decided here too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # kernels imports torch: loaded only when a kernel file is read
    from kernels.sandbox.usercode import KernelSpec

#: Characters of a sha256 the status bar shows.
SHORT_SHA = 12


def _is_jit(decorator: ast.expr) -> bool:
    """``@triton.jit``, ``@jit``, ``@triton.jit(...)``, ``@triton.autotune(...)`` and the like:
    a device function, never a launcher."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name in ("jit", "autotune", "heuristics")


def launcher_names(path: str | Path) -> list[str]:
    """The file's top-level functions that could be its launcher, likeliest first: plain
    ``def``s (not ``@triton.jit`` device functions), public names before ``_private`` ones.

    Raises:
        KernelSpecError: the file cannot be read, is not valid Python (with the line), or
            defines no top-level function outside ``@triton.jit``.
    """
    from kernels.sandbox.source_file import KernelFileError, read_kernel_source
    from kernels.sandbox.usercode import KernelSpecError

    path = Path(path)
    try:
        data = read_kernel_source(path, "kernel file")
    except KernelFileError as err:
        raise KernelSpecError(str(err)) from None
    try:
        tree = ast.parse(data, filename=str(path))
    except (SyntaxError, ValueError) as err:
        where = f" line {err.lineno}" if getattr(err, "lineno", None) else ""
        message = getattr(err, "msg", str(err))
        raise KernelSpecError(f"{path}:{where} is not valid Python ({message})") from None
    names = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and not any(_is_jit(d) for d in node.decorator_list)
    ]
    if not names:
        raise KernelSpecError(
            f"{path} defines no top-level function outside @triton.jit: a kernel file needs a "
            "launcher FUNCTION(x, weight, eps, out=None)"
        )
    return sorted(dict.fromkeys(names), key=lambda n: (n.startswith("_"), names.index(n)))


def spec_text(spec: KernelSpec) -> str:
    """``FILE.py:FUNCTION`` of a spec (what ``--kernel`` and the recent-kernels list hold)."""
    return f"{spec.path}:{spec.function}"


def reread(spec: KernelSpec) -> KernelSpec:
    """The spec with its file hashed again (the file may have been edited since it was loaded).

    Raises:
        KernelSpecError: the file is gone or unreadable now.
    """
    from kernels.sandbox.usercode import parse_kernel_spec

    return parse_kernel_spec(spec_text(spec))


def kernel_source(spec: KernelSpec | None) -> dict[str, str]:
    """The kernel as a receipt names it (``CheckResult.kernel_source``)."""
    if spec is None:
        return {"kind": "bundled"}
    return {
        "kind": "user",
        "path": str(spec.path),
        "function": spec.function,
        "file_sha256": spec.sha256,
    }


@dataclass(frozen=True)
class KernelLabel:
    """The status bar's words for the loaded kernel: ``text`` short, ``tooltip`` in full."""

    text: str
    tooltip: str


def kernel_label(spec: KernelSpec | None, bundled_sha256: str = "") -> KernelLabel:
    """ "kernel: tutorial.py:rms_norm · sha256 0123456789ab" or "kernel: bundled kernel · source
    sha256 ..." (the bundled kernel's ``@triton.jit`` source hash, when it is known)."""
    if spec is None:
        sha = f" · source sha256 {bundled_sha256[:SHORT_SHA]}" if bundled_sha256 else ""
        return KernelLabel(
            f"kernel: bundled kernel{sha}",
            "the inspector's own kernel (kernels/)"
            + (f"\nsource sha256 {bundled_sha256}" if bundled_sha256 else "")
            + "\nFile → Open kernel… proves your own",
        )
    return KernelLabel(
        f"kernel: {spec.path.name}:{spec.function} · sha256 {spec.sha256[:SHORT_SHA]}",
        f"your kernel, run in a child process\n{spec.path}\nlauncher {spec.function}\n"
        f"file sha256 {spec.sha256}",
    )


def kernel_name(spec: KernelSpec | None) -> str:
    """A few words for messages: "the bundled kernel" or "tutorial.py:rms_norm"."""
    return "the bundled kernel" if spec is None else f"{spec.path.name}:{spec.function}"


def saved_results_match(kernel_note: str, spec: KernelSpec | None) -> bool:
    """Whether a check saved in a session (its ``kernel_note``) ran the loaded kernel: a user
    kernel's note names its file, function and hash (``KernelSpec.describe``)."""
    note = str(kernel_note or "")
    if spec is None:
        return not note.startswith("user kernel ")
    return note.startswith(f"user kernel {spec.describe()}")


def recent_kernels(value: Any) -> list[str]:
    """The recent-kernels list as QSettings hands it back (None, one string, or a list)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    return [str(v) for v in value if str(v)]


def receipt_kernel(receipt_json: str | None, loaded: KernelSpec | None) -> tuple[str, str]:
    """What to do about the user kernel a session's receipt names: ``("offer", FILE:FN)`` when
    its file is here with the recorded sha256 and it is not the kernel loaded now,
    ``("missing" | "changed", why)`` when it is not, ``("", "")`` otherwise (the bundled
    kernel, the loaded one, no receipt). The file is never imported here: the caller asks the
    user, then loads it like any kernel (in a child process)."""
    import hashlib

    from inspector.records.receipts.format import parse_receipt_json
    from kernels.sandbox.source_file import KernelFileError, read_kernel_source

    try:
        receipt = parse_receipt_json(receipt_json or "null", "the session's receipt")
        source = (receipt or {}).get("kernel", {}).get("source") or {}
    except (ValueError, AttributeError, RecursionError):
        return "", ""
    if not isinstance(source, dict) or source.get("kind") != "user":
        return "", ""
    path, function = Path(str(source.get("path", ""))), str(source.get("function", ""))
    if loaded is not None and loaded.path == path and loaded.function == function:
        return "", ""
    text = f"{path}:{function}"
    try:
        digest = hashlib.sha256(
            read_kernel_source(path, "the receipt's kernel.source.path")
        ).hexdigest()
    except KernelFileError:  # gone, not a regular file, or over the bound: not offered
        digest = ""
    if not digest:
        return "missing", f"its kernel {text} is not on this machine"
    if digest != source.get("file_sha256"):
        return "changed", f"its kernel {text} changed since the receipt"
    return "offer", text
