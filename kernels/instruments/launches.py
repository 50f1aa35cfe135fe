"""What a launcher launches, and the TTIR that launch compiles to, without a GPU.

:func:`recording` patches Triton's launch entry (``JITFunction.run`` and, under the
interpreter, ``InterpretedFunction.run``) for the duration of a ``with`` block: every launch is
recorded as a *launch signature* -- the kernel's module and name, its argument types with
Triton's specialization (pointer alignment, integers divisible by 16), its constexpr values --
computed by Triton's own binder for an sm_90 target, and the kernel is not run (a dry run: only
the signatures are wanted, so shapes of any size cost nothing but their allocation).

:func:`compile_ttir` compiles a recorded signature of a ``@triton.jit`` function to TTIR (the
first stage only, through the compiler's own stages; ``triton.compile`` where those internals
differ) and :func:`kernels.instruments.ttir.canonical_digest` condenses it. It needs the compiled
(not interpreted) function: ``python -m kernels.instruments.launches`` runs it in a child with
``TRITON_INTERPRET=0`` that imports the kernel file (untrusted code), reading a JSON request on
stdin and writing JSON on the stdout it started with.

Both lean on Triton internals (``create_function_from_signature``, ``_pack_args``, the
backend's stages), checked on Triton 3.6-3.7; where a Triton lacks them, a launch records
``{"unsupported": why}`` and a compile reports an error, and the caller falls back.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

# The module name a kernel file is imported under (as kernels.sandbox.usercode_child does).
USER_MODULE = "rmsnorm_inspector_user_kernel"
TARGET_ARCH = 90


def _target() -> Any:
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", TARGET_ARCH, 32)


def _encode(value: Any) -> Any:
    """A constexpr value as JSON; ValueError for one that has no faithful JSON form."""
    import triton.language as tl

    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"float": value.hex()}
    if type(value) is tl.dtype:  # a scalar dtype (tl.float32...): rebuilt from its name
        return {"dtype": value.name}
    raise ValueError(f"a constexpr of type {type(value).__name__}")


def _decode(value: Any) -> Any:
    import triton.language as tl

    if isinstance(value, dict) and "float" in value:
        return float.fromhex(value["float"])
    if isinstance(value, dict) and "dtype" in value:
        return tl.dtype(value["dtype"])
    return value


def launch_signature(fn: Any, jit_kwargs: dict[str, Any], args: tuple, kwargs: dict) -> dict:
    """The launch signature of ``fn`` (the undecorated Python function) called with
    ``args``/``kwargs``, as Triton's binder specializes it for an sm_90 target (JSON-ready)."""
    from triton.compiler import make_backend
    from triton.runtime import jit as rjit

    keep = ("do_not_specialize", "do_not_specialize_on_alignment")
    jitted = rjit.JITFunction(fn, **{k: v for k, v in jit_kwargs.items() if k in keep})
    backend = make_backend(_target())
    binder = rjit.create_function_from_signature(jitted.signature, jitted.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    _, signature, constexprs, attrs = jitted._pack_args(
        backend, kwargs, bound, specialization, options
    )
    return {
        "module": fn.__module__,
        "name": fn.__qualname__,
        "signature": {str(k): str(v) for k, v in signature.items()},
        "constexprs": [[list(path), _encode(value)] for path, value in constexprs.items()],
        "attrs": [[list(path), attr] for path, attr in attrs.items() if attr],
    }


@contextlib.contextmanager
def recording() -> Iterator[list[dict]]:
    """Inside the block, launches are recorded (into the yielded list) and not run."""
    from triton.runtime import jit as rjit

    found: list[dict] = []
    patched: list[tuple[type, Any]] = []

    def record(fn: Any, jit_kwargs: dict, args: tuple, kwargs: dict) -> None:
        try:
            entry = launch_signature(fn, jit_kwargs, args, kwargs)
        except Exception as err:  # a Triton without these internals, or an odd argument
            name = getattr(fn, "__qualname__", "?")
            entry = {"name": name, "unsupported": f"{type(err).__name__}: {err}"[:300]}
        if entry not in found:
            found.append(entry)

    def jit_run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any):
        record(self.fn, {"do_not_specialize": self.do_not_specialize,
                         "do_not_specialize_on_alignment": self.do_not_specialize_on_alignment},
               args, kwargs)  # fmt: skip
        return None

    def interpreted_run(self: Any, *args: Any, grid: Any = None, warmup: bool = False, **kw: Any):
        record(self.fn, dict(getattr(self, "kwargs", {})), args, kw)
        return None

    classes: list[tuple[type, Any]] = [(rjit.JITFunction, jit_run)]
    with contextlib.suppress(ImportError):
        from triton.runtime.interpreter import InterpretedFunction

        classes.append((InterpretedFunction, interpreted_run))
    for cls, run in classes:
        patched.append((cls, cls.__dict__["run"]))
        cls.run = run
    try:
        yield found
    finally:
        for cls, run in patched:
            cls.run = run


def _resolve(launch: dict, path: str) -> Any:
    """The ``@triton.jit`` function a launch names, imported in this (compiled-mode) process."""
    module_name = launch["module"]
    if module_name == USER_MODULE:
        module = sys.modules.get(USER_MODULE)
        if module is None:
            sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
            spec = importlib.util.spec_from_file_location(USER_MODULE, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {path} as a Python module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[USER_MODULE] = module
            spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    found: Any = module
    for part in launch["name"].split("."):
        found = getattr(found, part)
    return found


def compile_ttir(fn: Any, launch: dict) -> str:
    """TTIR text (with locations) of the JITFunction ``fn`` for one recorded launch."""
    import triton
    from triton.compiler import ASTSource

    constexprs = {tuple(path): _decode(value) for path, value in launch["constexprs"]}
    attrs = {tuple(path): attr for path, attr in launch["attrs"]}
    source = ASTSource(fn=fn, signature=launch["signature"], constexprs=constexprs, attrs=attrs)
    target = _target()
    try:
        from triton._C.libtriton import ir
        from triton.compiler import make_backend

        backend = make_backend(target)
        options = backend.parse_options({})
        context = ir.context()
        ir.load_dialects(context)
        backend.load_dialects(context)
        codegen, module_map = backend.get_codegen_implementation(options), backend.get_module_map()
        module = source.make_ir(target, options, codegen, module_map, context)
        stages: dict[str, Any] = {}
        backend.add_stages(stages, options, source.language)
        return str(stages["ttir"](module, {}))
    except (AttributeError, TypeError, KeyError, ImportError):  # other internals: the full path
        return triton.compile(source, target=target).asm["ttir"]


def main() -> int:
    """The compile child: stdin ``{"path", "launches", "expect"}`` -> stdout ``{"ttir": [...]}``,
        one entry per launch compiled: ``{"digest", "text"}`` (text unless ``texts`` is false or
    ``expect`` given) or
        ``{"error": why}``. With ``expect`` (the original's digests), it stops after the first
        launch whose digest differs."""
    from kernels.instruments.ttir import canonical_digest

    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the kernel file's prints go to stderr
    sys.stdout = sys.stderr
    request = json.loads(sys.stdin.read())
    expect, texts = request.get("expect"), request.get("texts", True)
    results: list[dict[str, str]] = []
    for index, launch in enumerate(request["launches"]):
        try:
            text = compile_ttir(_resolve(launch, request["path"]), launch)
        except BaseException as err:  # the kernel file's error, or the compiler's: reported
            results.append({"error": f"{type(err).__name__}: {err}"[:1000]})
            break
        digest = canonical_digest(text)
        results.append(
            {"digest": digest, "text": text} if texts and not expect else {"digest": digest}
        )
        if expect and digest != expect[index]:
            break
    protocol.write(json.dumps({"ttir": results}))
    protocol.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
