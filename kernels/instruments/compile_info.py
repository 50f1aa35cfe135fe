"""What the Triton compiler makes of the kernel: TTIR, TTGIR, LLIR, PTX, SASS and resources.

``compiler_output(dtype, width, target, rows=1)`` compiles the kernel and launch layout the
launcher would choose for a contiguous ``rows x width`` input (``choose_config``; or a forced
``path``), for one signature, with
``triton.compile(ASTSource(...), target=GPUTarget("cuda", cc, 32))``. That works without a GPU
(PTX and cubin come from LLVM and ptxas), so a CPU-only machine can show the code an sm_90 would
run.

Under the interpreter every ``@triton.jit`` function in the process -- including
``triton.language``'s own ``tl.sum`` -- is an ``InterpretedFunction`` that the compiler cannot
lower. So in interpreter mode the compile runs in a child Python with ``TRITON_INTERPRET=0``
(``python -m kernels.instruments.compile_info ...``, JSON on stdout); in compiled mode it runs
in-process. Results are cached per signature (a compile takes ~0.5 s, the child ~2 s).

Registers: from the loaded kernel on the device in hand (the driver's ``n_regs``), otherwise
``cuobjdump --dump-resource-usage`` of the cubin, otherwise ``ptxas -v``. Spills: bytes of spill
stores per thread from ``ptxas -v`` of the PTX (Triton ships ptxas and cuobjdump in its wheel);
None where no tool runs. ``resource_source`` says where each number came from.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import triton

from kernels import jit
from kernels.env import SOURCE_ROOT
from kernels.geometry import kernel_constexprs, peel_elements, settled, vector_width
from kernels.launcher import KERNEL_MUTANTS, MAX_WIDTH, SUPPORTED_DTYPES, mutant_code
from kernels.layout import KERNEL_PATHS, LaunchConfig, choose_config, forced_config
from kernels.mode import COMPILED, MODE

_TRITON_TYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}
_TARGET_RE = re.compile(r"^sm_?(\d{2,3})a?$")
_CHILD_TIMEOUT_S = 300


@dataclass(frozen=True)
class CompileInfo:
    """Compiler output for one kernel signature (all text, JSON-friendly)."""

    ttir: str
    ttgir: str
    llir: str
    ptx: str
    sass: str | None
    num_warps: int
    num_stages: int
    shared_bytes: int
    registers: int | None
    spills: int | None
    source_sha256: str
    triton_version: str
    target: str
    dtype: str = ""
    width: int = 0
    block: int = 0
    mutant: str | None = None
    signature: str = ""
    resource_source: str = ""
    ptxas_info: str = ""
    kernel: str = ""
    path: str = ""
    rows: int = 0
    rows_per_program: int = 0

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def kernel_source() -> str:
    """Source text of every function of ``jit.KERNEL_FUNCTIONS`` (decorators included,
    dedented), in that order."""
    return "\n\n".join(
        textwrap.dedent(inspect.getsource(getattr(fn, "fn", fn))) for fn in jit.KERNEL_FUNCTIONS
    )


def kernel_source_sha256() -> str:
    """sha256 of ``kernel_source()``, the identity of the kernel in receipts."""
    return hashlib.sha256(kernel_source().encode("utf-8")).hexdigest()


def _parse_target(target: str | None) -> int | None:
    if target is None:
        return None
    match = _TARGET_RE.match(str(target).strip().lower())
    if not match:
        raise ValueError(
            f"target must look like 'sm_90' (or None for the device in hand); got {target!r}"
        )
    return int(match.group(1))


def compiler_output(
    dtype: str = "bfloat16",
    width: int = 4096,
    target: str | None = None,
    *,
    mutant: str | None = None,
    rows: int = 1,
    path: str = "auto",
) -> CompileInfo:
    """Compile the kernel for one signature and return every stage of its code.

    Args:
        dtype: input/output/weight dtype name (``"float32" | "float16" | "bfloat16"``).
        width: row width; with ``rows`` it selects the launch layout (``choose_config``: kernel,
            BLOCK or CHUNK, rows per program, num_warps), the VEC the launcher would pass, and
            whether width/VEC and the (contiguous) row strides/VEC get Triton's divisible-by-16
            specialization.
        target: ``"sm_90"``-style CUDA target; None means the current CUDA device (needs one).
        mutant: compile a named mutant instead of the real kernel.
        rows: rows of the (contiguous) problem; the default 1 is the layout of a short problem
            (one row per program), what ``check``'s small fixtures launch.
        path: ``"auto"`` (``choose_config`` for an H200's 132 SMs) or one of ``KERNEL_PATHS``
            (``forced_config``, the layouts ``run_checked(path=...)`` forces).

    Returns:
        CompileInfo (cached per argument tuple).

    Raises:
        TypeError / ValueError: unsupported dtype, width or target.
        RuntimeError: the compile failed (with the compiler's message).
    """
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"dtype must be one of {', '.join(SUPPORTED_DTYPES)}; got {dtype!r}")
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_WIDTH:
        raise ValueError(f"width must be an int in [1, {MAX_WIDTH}]; got {width!r}")
    mutant_code(mutant)  # validates the name
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise ValueError(f"rows must be an int >= 1; got {rows!r}")
    if path != "auto" and path not in KERNEL_PATHS:
        raise ValueError(f"path must be 'auto' or one of {', '.join(KERNEL_PATHS)}; got {path!r}")
    arch = _parse_target(target)
    if arch is None:
        arch = _current_arch()
    return _cached(dtype, width, arch, mutant, rows, path)


def _current_arch() -> int:
    import torch

    if not torch.cuda.is_available():
        raise ValueError(
            "target=None means the CUDA device in hand, and there is none; "
            "pass an explicit target such as 'sm_90'"
        )
    major, minor = torch.cuda.get_device_capability()
    return major * 10 + minor


@functools.lru_cache(maxsize=64)
def _cached(
    dtype: str, width: int, arch: int, mutant: str | None, rows: int, path: str
) -> CompileInfo:
    if MODE == COMPILED:
        fields = compile_fields(dtype, width, arch, mutant, rows, path)
    else:
        fields = _compile_in_child(dtype, width, arch, mutant, rows, path)
    return CompileInfo(**fields)


def _compile_in_child(
    dtype: str, width: int, arch: int, mutant: str | None, rows: int, path: str
) -> dict:
    package_root = str(SOURCE_ROOT)
    env = dict(os.environ)
    env["TRITON_INTERPRET"] = "0"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    command = [
        sys.executable,
        "-m",
        "kernels.instruments.compile_info",
        "--dtype",
        dtype,
        "--width",
        str(width),
        "--arch",
        str(arch),
        "--rows",
        str(rows),
        "--path",
        path,
    ]
    if mutant is not None:
        command += ["--mutant", mutant]
    result = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=_CHILD_TIMEOUT_S, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(
            f"compiling the kernel for {dtype}/{width}/sm_{arch} failed "
            f"(child exit {result.returncode}):\n{result.stderr[-4000:]}"
        )
    return json.loads(result.stdout)


def _tool(name: str) -> str | None:
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    return shutil.which(name)


def _run_tool(args: list[str]) -> str | None:
    try:
        result = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout + result.stderr if result.returncode == 0 else None


def _gpu_name(arch: int) -> str:
    # Triton targets the architecture-specific variant on Hopper/Blackwell (sm_90a, sm_100a).
    return f"sm_{arch}a" if arch >= 90 else f"sm_{arch}"


@dataclass
class _Resources:
    sass: str | None = None
    registers: int | None = None
    register_source: str = "unavailable"
    spills: int | None = None
    spill_source: str = "unavailable"
    ptxas_info: str = ""


def _sass_and_resources(cubin: bytes, ptx: str, arch: int) -> _Resources:
    found = _Resources()
    with tempfile.TemporaryDirectory(prefix="rmsnorm-compile-") as tmp:
        cubin_path = Path(tmp) / "kernel.cubin"
        cubin_path.write_bytes(cubin)
        cuobjdump = _tool("cuobjdump")
        if cuobjdump:
            dump = _run_tool([cuobjdump, "--dump-sass", str(cubin_path)])
            if dump:
                found.sass = "\n".join(
                    line for line in dump.splitlines() if not line.startswith("nvdisasm warning")
                )
            usage = _run_tool([cuobjdump, "--dump-resource-usage", str(cubin_path)])
            match = re.search(r"REG:(\d+)", usage or "")
            if match:
                found.registers = int(match.group(1))
                found.register_source = "cuobjdump --dump-resource-usage (cubin)"
        ptxas = _tool("ptxas")
        if ptxas:
            ptx_path = Path(tmp) / "kernel.ptx"
            ptx_path.write_text(ptx)
            out_path = Path(tmp) / "ptxas-v.cubin"
            log = _run_tool(
                [ptxas, f"-arch={_gpu_name(arch)}", "-v", str(ptx_path), "-o", str(out_path)]
            )
            found.ptxas_info = "\n".join(
                line.strip()
                for line in (log or "").splitlines()
                if "info" in line or "bytes" in line
            )
            match = re.search(r"(\d+) bytes spill stores", log or "")
            if match:
                found.spills = int(match.group(1))
                found.spill_source = "ptxas -v: bytes of spill stores per thread"
            match = re.search(r"Used (\d+) registers", log or "")
            if found.registers is None and match:
                found.registers = int(match.group(1))
                found.register_source = "ptxas -v"
    return found


def launch_config_for(dtype: str, width: int, rows: int = 1, path: str = "auto") -> LaunchConfig:
    """The layout the launcher (or ``run_checked(path=...)``) uses for a contiguous problem."""
    itemsize = 4 if dtype == "float32" else 2
    if path == "auto":
        return choose_config(rows, width, itemsize)
    return forced_config(path, rows, width, itemsize)


def compile_fields(
    dtype: str,
    width: int,
    arch: int,
    mutant: str | None = None,
    rows: int = 1,
    path: str = "auto",
) -> dict:
    """Compile in this process (needs a non-interpreted kernel) and return CompileInfo fields."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if not isinstance(jit.rms_norm_tile_kernel, triton.runtime.jit.JITFunction):
        raise RuntimeError("compile_fields needs the compiled kernel (TRITON_INTERPRET unset or 0)")
    config = launch_config_for(dtype, width, rows, path)
    kernel = jit.rms_norm_loop_kernel if config.loop else jit.rms_norm_tile_kernel
    itemsize = 4 if dtype == "float32" else 2
    vec = vector_width(width, width, width, itemsize)
    element = "*" + _TRITON_TYPES[dtype]
    # Runtime argument types as the launcher passes them for a contiguous (rows, width) input:
    # int32 rows, width/VEC and row strides/VEC (Python ints below 2**31), float32 eps.
    signature: dict[str, str] = {
        "x_ptr": element,
        "w_ptr": element,
        "y_ptr": element,
        "rows": "i32",
        "width_v": "i32",
        "x_stride_v": "i32",
        "y_stride_v": "i32",
        "eps": "fp32",
    }
    peel = peel_elements(config, width, vec, width, width, itemsize)
    config = settled(config, width, peel)
    constexprs: dict[str, object] = {
        **kernel_constexprs(config, width, vec, rows, peel),
        "MUTANT": mutant_code(mutant, SUPPORTED_DTYPES[dtype]),
        "rstd_ptr": None,
        "STORE_RSTD": False,
    }
    signature.update(dict.fromkeys(constexprs, "constexpr"))
    # Triton specializes at launch: tensors from torch's allocator are 16-byte aligned, and ints
    # divisible by 16 are marked so; mirror that so the PTX shows the vector width a real
    # launch of this shape gets (rows is left unmarked: it varies).
    divisible = [0, 1, 2] + ([4, 5, 6] if (width // vec) % 16 == 0 else [])
    attrs = {(index,): [["tt.divisibility", 16]] for index in divisible}
    target = GPUTarget("cuda", arch, 32)
    try:
        source = ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs)
    except TypeError:  # an attrs format this Triton does not take: compile unspecialized
        source = ASTSource(fn=kernel, signature=signature, constexprs=constexprs)
    try:
        compiled = triton.compile(
            source,
            target=target,
            options={"num_warps": config.num_warps},
        )
    except Exception as err:  # surfaced with context, never swallowed
        raise RuntimeError(f"triton.compile failed for {dtype}/{width}/sm_{arch}: {err}") from err

    asm = compiled.asm
    found = _sass_and_resources(asm["cubin"], asm["ptx"], arch)
    _device_resources(compiled, arch, found)
    metadata = compiled.metadata
    return {
        **{name: _portable(asm[name]) for name in ("ttir", "ttgir", "llir", "ptx")},
        "sass": _portable(found.sass),
        "num_warps": int(metadata.num_warps),
        "num_stages": int(metadata.num_stages),
        "shared_bytes": int(metadata.shared),
        "registers": found.registers,
        "spills": found.spills,
        "source_sha256": kernel_source_sha256(),
        "triton_version": triton.__version__,
        "target": f"sm_{arch}",
        "dtype": dtype,
        "width": width,
        "block": config.block + config.block2,
        "mutant": mutant,
        "signature": ", ".join(f"{name}: {kind}" for name, kind in signature.items()),
        "resource_source": f"registers: {found.register_source}; spills: {found.spill_source}",
        "ptxas_info": found.ptxas_info,
        "kernel": getattr(getattr(kernel, "fn", kernel), "__name__", ""),
        "path": config.path,
        "rows": rows,
        "rows_per_program": config.rows_per_program,
    }


#: Quoted absolute paths in compiler output, and what is kept of each: the kernel family's files
#: from ``kernels/jit`` on, an installed package's (Triton's own language files) from the package.
_MACHINE_PATHS = (
    (re.compile(r'"/[^"\n]*?/(kernels/jit(?:/|"))'), r'"\1'),
    (re.compile(r'"/[^"\n]*?/(?:site|dist)-packages(?:/|(?="))'), '"'),
)


def _portable(text: str) -> str:
    """Compiler output with files named from the source root or their package
    (``kernels/jit/tile.py``, ``triton/language/standard.py``), not by this machine's absolute
    paths: the same text on every machine, and no path of the one that made a saved session. Any
    absolute path goes, not only this tree's: Triton's cache hands back the text of the tree
    that compiled the same source first."""
    for pattern, kept in _MACHINE_PATHS:
        text = pattern.sub(kept, text) if text else text
    return text


def _device_resources(compiled: object, arch: int, found: _Resources) -> None:
    """Take the driver's register count when the compiled target is the device in hand.

    The driver's ``n_spills`` is only used when ptxas gave nothing: it counts differently (local
    memory words, not spill-store bytes), and one unit per field keeps receipts comparable.
    """
    try:
        import torch

        if not torch.cuda.is_available():
            return
        major, minor = torch.cuda.get_device_capability()
        if major * 10 + minor != arch:
            return
        compiled._init_handles()
        found.registers = int(compiled.n_regs)
        found.register_source = "driver (loaded kernel n_regs)"
        if found.spills is None:
            found.spills = int(compiled.n_spills)
            found.spill_source = "driver (loaded kernel n_spills)"
    except Exception:  # resource numbers are best effort; the text outputs stand on their own
        return


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compile the RMSNorm kernel; print JSON.")
    parser.add_argument("--dtype", required=True, choices=sorted(SUPPORTED_DTYPES))
    parser.add_argument("--width", required=True, type=int)
    parser.add_argument("--arch", required=True, type=int)
    parser.add_argument("--mutant", choices=KERNEL_MUTANTS, default=None)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--path", choices=("auto", *KERNEL_PATHS), default="auto")
    args = parser.parse_args(argv)
    fields = compile_fields(args.dtype, args.width, args.arch, args.mutant, args.rows, args.path)
    json.dump(fields, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
