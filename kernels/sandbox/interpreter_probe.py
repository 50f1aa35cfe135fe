"""What the Triton interpreter on this machine cannot run right, found by running it, and which
of those a kernel's run used: the machine's faults, never the kernel's.

The interpreter stores ``bfloat16`` as raw ``uint16`` bits, so (in triton 3.6 and 3.7) numpy adds,
multiplies, sums and compares those bits as integers; it has no ``libdevice``, hands a float
argument over as a Python float (no ``.to()``, no ``.dtype``) and has no driver for
``@triton.autotune`` to benchmark on. Which of these hold depends on the version, so nothing here
names a version: :func:`probe` runs one tiny kernel per operation (float32, float16, bfloat16;
signs mixed) and compares each with torch, while a :class:`Recorder` notes every interpreter
operation each probe ran (``"create_fmul:bf16"``, ``"reduce:_sum_combine:bf16"``,
``"libdevice:rsqrt"``). A fault's *signature* is what its failing probes ran and no passing probe
did; a kernel's run that ran any of it is *not judged* on this machine (:func:`faults_hit`), and
a run that raised the error a failing probe raised is the machine's error, not the kernel's.

Autotuned kernels are not probed here: :mod:`kernels.sandbox.autotuned` runs them one config at a
time, which the interpreter can do.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: An error text that is about the interpreter or its missing driver, not about a kernel.
_NAMES_THE_MACHINE = re.compile(r"[Ii]nterpreter|active drivers")
#: Values every arithmetic probe runs on: both signs, a subnormal-free spread, exact in bf16.
_A = (0.1015625, 1.5, -3.0, 7.0, -0.375, 2.25, -12.5, 0.0078125)
_B = (0.30078125, 2.0, 0.5, -1.25, -6.0, -0.09375, 3.5, 40.0)


@dataclasses.dataclass(frozen=True)
class Fault:
    """One thing this machine's interpreter gets wrong.

    Attributes:
        name: what, e.g. ``"bfloat16 arithmetic"``.
        cause: what the probe saw, in one line.
        signature: the interpreter operations only the failing probes ran.
        errors: the exception texts the failing probes raised (a run raising one of them hit
            this fault).
    """

    name: str
    cause: str
    signature: frozenset[str]
    errors: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cause": self.cause,
            "signature": sorted(self.signature),
            "errors": list(self.errors),
        }


class Recorder:
    """Notes the interpreter operations run while :meth:`recording` is active (one thread)."""

    def __init__(self) -> None:
        self._local = threading.local()
        self.installed = False
        # builder op name -> (the original, our wrapper), for :meth:`keep_only`.
        self._ops: dict[str, tuple[Any, Any]] = {}

    @contextmanager
    def recording(self) -> Iterator[set[str]]:
        seen: set[str] = set()
        previous = getattr(self._local, "seen", None)
        self._local.seen = seen
        try:
            yield seen
        finally:
            self._local.seen = previous

    def note(self, what: str) -> None:
        seen = getattr(self._local, "seen", None)
        if seen is not None:
            seen.add(what)

    def install(self) -> bool:
        """Wrap the interpreter's builder operations, its reductions and scans, and libdevice;
        False where this triton has none of them (compiled mode needs no probe)."""
        if self.installed:
            return True
        try:
            from triton.runtime import interpreter
        except ImportError:  # pragma: no cover
            return False
        builder = getattr(interpreter, "interpreter_builder", None)
        if builder is None:
            return False
        for name in dir(type(builder)):
            if name.startswith("create_") and callable(getattr(builder, name, None)):
                original = getattr(builder, name)
                wrapper = self._wrap_op(name, original)
                self._ops[name] = (original, wrapper)
                setattr(builder, name, wrapper)
        for class_name, kind in (("ReduceOps", "reduce"), ("ScanOps", "scan")):
            cls = getattr(interpreter, class_name, None)
            if cls is not None and hasattr(cls, "apply_impl"):
                cls.apply_impl = self._wrap_reduce(kind, cls.apply_impl)
        self._wrap_libdevice()
        self.installed = True
        return True

    def keep_only(self, faults: tuple[Fault, ...]) -> None:
        """Unwrap every builder operation no fault's signature names (each costs a Python call
        per operation of every run): a run then records just what can hit a fault."""
        from triton.runtime import interpreter

        builder = interpreter.interpreter_builder
        wanted = {mark.split(":")[0] for fault in faults for mark in fault.signature}
        for name, (original, wrapper) in list(self._ops.items()):
            if name not in wanted and builder.__dict__.get(name) is wrapper:
                if getattr(type(builder), name, None) is getattr(original, "__func__", None):
                    del builder.__dict__[name]  # the class's own method again
                else:
                    setattr(builder, name, original)
                del self._ops[name]

    def _wrap_op(self, name: str, op: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(op)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if getattr(self._local, "seen", None) is not None:
                kinds = {_dtype_name(a) for a in args} - {""}
                for kind in kinds or {"-"}:
                    self.note(f"{name}:{kind}")
            return op(*args, **kwargs)

        return wrapped

    def _wrap_reduce(self, kind: str, apply: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(apply)
        def wrapped(op_self: Any, input: Any) -> Any:
            combine = getattr(getattr(op_self, "combine_fn", None), "__name__", "") or getattr(
                getattr(getattr(op_self, "combine_fn", None), "fn", None), "__name__", "?"
            )
            for item in input if isinstance(input, (list, tuple)) else (input,):
                self.note(f"{kind}:{combine}:{_dtype_name(getattr(item, 'handle', None))}")
            return apply(op_self, input)

        return wrapped

    def _wrap_libdevice(self) -> None:
        import importlib

        for module_name in (
            "triton.language.extra.libdevice",
            "triton.language.extra.cuda.libdevice",
        ):
            try:
                module = importlib.import_module(module_name)
            except Exception:
                continue
            for name in dir(module):
                value = getattr(module, name)
                if name.startswith("_") or not callable(value) or isinstance(value, type):
                    continue
                if getattr(value, "_probe_recorded", False):
                    continue
                setattr(module, name, self._wrap_call(f"libdevice:{name}", value))

    def _wrap_call(self, what: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.note(what)
            return fn(*args, **kwargs)

        wrapped._probe_recorded = True  # type: ignore[attr-defined]
        return wrapped


def _dtype_name(handle: Any) -> str:
    dtype = getattr(handle, "dtype", None)
    if dtype is None or not hasattr(handle, "data"):
        return ""
    scalar = getattr(dtype, "scalar", dtype)
    return str(getattr(scalar, "name", scalar))


RECORDER = Recorder()


# ---- the probes ----
#: (name, needs) of the elementwise and reduction probes; each runs in every dtype below.
_OPS = (
    "add", "sub", "mul", "div", "max", "less", "sum", "fma", "const_mul", "via_float32",
    "select", "broadcast",
)  # fmt: skip
_DTYPES = ("float32", "float16", "bfloat16")
#: libdevice functions probed (float32): all failing means libdevice as a whole fails.
_LIBDEVICE = ("rsqrt", "sqrt", "exp")
#: What the scalar-argument probes do with a float argument ``s`` (on a GPU a float32 scalar).
_SCALAR_USES = ("s.to(tl.float32)", "s.dtype")
#: Faults whose probes do nothing but the one thing probed, so any error they raise is the
#: machine's (the interpreter hands a float argument over as a Python float, which has no
#: ``.to`` or ``.dtype``); other faults' errors count only where the text names the interpreter.
_ERRORS_ARE_THE_MACHINES = ("float scalar arguments",)


@functools.cache
def _kernels() -> dict[str, Any]:
    """The probe kernels, decorated on first use (the interpreter switch is set by then)."""
    import triton
    import triton.language as tl

    @triton.jit
    def binary(a_ptr, b_ptr, o_ptr, OP: tl.constexpr, N: tl.constexpr):
        i = tl.arange(0, N)
        a = tl.load(a_ptr + i)
        b = tl.load(b_ptr + i)
        if OP == 0:
            r = a + b
        elif OP == 1:
            r = a - b
        elif OP == 2:
            r = a * b
        elif OP == 3:
            r = a / b
        elif OP == 4:
            r = tl.maximum(a, b)
        elif OP == 5:
            r = tl.where(a < b, a, b)
        elif OP == 6:
            r = a * 0 + tl.sum(a, axis=0)
        elif OP == 7:
            r = tl.fma(a, b, a)
        elif OP == 8:
            r = a * 2.0
        elif OP == 9:
            r = (a.to(tl.float32) * b.to(tl.float32)).to(a.dtype)
        elif OP == 10:
            r = tl.where(i % 2 == 0, a, b)
        else:
            r = tl.where(i < N, tl.load(a_ptr), b)
        tl.store(o_ptr + i, r)

    @triton.jit
    def libdevice_call(a_ptr, o_ptr, FN: tl.constexpr, N: tl.constexpr):
        from triton.language.extra import libdevice

        i = tl.arange(0, N)
        a = tl.load(a_ptr + i)
        if FN == 0:
            r = libdevice.rsqrt(a)
        elif FN == 1:
            r = libdevice.sqrt(a)
        else:
            r = libdevice.exp(a)
        tl.store(o_ptr + i, r)

    @triton.jit
    def scalar_argument(a_ptr, o_ptr, s, N: tl.constexpr, FN: tl.constexpr):
        i = tl.arange(0, N)
        a = tl.load(a_ptr + i)
        if FN == 0:  # noqa: SIM108 (a constexpr branch: only the one taken is traced)
            r = a * s.to(tl.float32)
        else:
            r = (a * s).to(s.dtype)
        tl.store(o_ptr + i, r)

    return {"binary": binary, "libdevice": libdevice_call, "scalar": scalar_argument}


def _expected(op: str, a: Any, b: Any) -> Any:
    import torch

    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    if op == "div":
        return a / b
    if op == "max":
        return torch.maximum(a, b)
    if op == "less":
        return torch.where(a < b, a, b)
    if op == "sum":
        return torch.full_like(a, float(a.double().sum()))
    if op == "fma":
        return (a.double() * b.double() + a.double()).to(a.dtype)
    if op == "const_mul":
        return a * 2.0
    if op == "select":
        return torch.where(torch.arange(len(a)) % 2 == 0, a, b)
    if op == "broadcast":
        return torch.full_like(a, float(a[0]))
    return (a.float() * b.float()).to(a.dtype)


#: Relative error a probe's result may have and still be right (its dtype's rounding, a few
#: times over: the faults seen are off by orders of magnitude).
_RTOL = {"float32": 1e-5, "float16": 4e-3, "bfloat16": 3e-2}


def _run_probe(
    launch: Callable[[], Any], expected: Any, out: Any, rtol: float
) -> tuple[str, set[str]]:
    """("" if right, else what went wrong) and the operations the launch ran."""
    with RECORDER.recording() as seen:
        try:
            launch()
        except Exception as err:
            return _error_text(err), set(seen)
    got, want = out.double(), expected.double()
    if bool(((got - want).abs() <= rtol * want.abs() + 1e-30).all()):
        return "", set(seen)
    worst = int((got - want).abs().argmax())
    return f"gave {float(got[worst]):.4g} where {float(want[worst]):.4g} is right", set(seen)


def _error_text(err: BaseException) -> str:
    """The innermost message of an interpreter error (``InterpreterError(repr(e))`` wraps it)."""
    while err.__cause__ is not None:
        err = err.__cause__
    return f"raised {type(err).__name__}: {err}"


#: One probe: (fault group, what it probes, launch, expected output, output, rtol).
_Probe = tuple[str, str, Callable[[], Any], Any, Any, float]


def _probes(kernels: dict[str, Any]) -> Iterator[_Probe]:
    """Every probe the interpreter runs, in order."""
    import torch

    n = len(_A)
    for dtype in _DTYPES:
        torch_dtype = getattr(torch, dtype)
        a = torch.tensor(_A, dtype=torch_dtype)
        b = torch.tensor(_B, dtype=torch_dtype)
        for code, op in enumerate(_OPS):
            out = torch.zeros(n, dtype=torch_dtype)
            launch = functools.partial(kernels["binary"][(1,)], a, b, out, OP=code, N=n)
            yield f"{dtype} arithmetic", op, launch, _expected(op, a, b), out, _RTOL[dtype]
    a = torch.tensor([abs(v) + 0.5 for v in _A], dtype=torch.float32)
    for code, name in enumerate(_LIBDEVICE):
        out = torch.zeros(n, dtype=torch.float32)
        expected = {"rsqrt": torch.rsqrt, "sqrt": torch.sqrt, "exp": torch.exp}[name](a)
        launch = functools.partial(kernels["libdevice"][(1,)], a, out, FN=code, N=n)
        yield "libdevice", name, launch, expected, out, _RTOL["float32"]
    a = torch.tensor(_A, dtype=torch.float32)
    for code, use in enumerate(_SCALAR_USES):
        out = torch.zeros(n, dtype=torch.float32)
        launch = functools.partial(kernels["scalar"][(1,)], a, out, 0.75, N=n, FN=code)
        yield "float scalar arguments", use, launch, a * 0.75, out, _RTOL["float32"]


def probe() -> tuple[Fault, ...]:
    """Run every probe under the interpreter and return the faults found (empty: none)."""

    RECORDER.install()
    kernels = _kernels()
    passing: set[str] = set()
    failing: dict[str, list[tuple[str, str, set[str]]]] = {}
    for group, label, launch, expected, out, rtol in _probes(kernels):
        what, seen = _run_probe(launch, expected, out, rtol)
        if what:
            failing.setdefault(group, []).append((label, what, seen))
        else:
            passing |= seen
    faults = []
    for name, failures in failing.items():
        signature = set().union(*(seen for _, _, seen in failures)) - passing
        if name == "libdevice" and len(failures) == len(_LIBDEVICE):
            signature = {"libdevice:"}  # every libdevice function probed fails: all of it
        # An error names this fault by itself only when it names the interpreter (a generic
        # message may as well be the kernel's own); the signature covers the rest.
        errors = tuple(
            sorted(
                {
                    text
                    for _, what, _ in failures
                    if what.startswith("raised ")
                    and (
                        _NAMES_THE_MACHINE.search(text := what.partition(": ")[2])
                        or name in _ERRORS_ARE_THE_MACHINES
                    )
                }
            )
        )
        cause = "; ".join(f"{op} {what}" for op, what, _ in failures)
        faults.append(Fault(name, cause[:600], frozenset(signature), errors))
    return tuple(faults)


def faults_hit(faults: tuple[Fault, ...], seen: set[str], error: str = "") -> list[Fault]:
    """The faults a run that ran ``seen`` (and raised ``error``, if it did) hit."""
    hit = []
    for fault in faults:
        used = any(
            op == mark or (mark.endswith(":") and op.startswith(mark))
            for op in seen
            for mark in fault.signature
        )
        # Raised inside the interpreter (its InterpreterError wraps a kernel body's errors): the
        # launcher's own code raising the same text would fail on a GPU too.
        raised = bool(error and _NAMES_THE_MACHINE.search(error)) and any(
            text and text in error for text in fault.errors
        )
        if used or raised:
            hit.append(fault)
    return hit
