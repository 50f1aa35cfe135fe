"""Proof of the launch-layout coverage map: every configuration the rule reaches, run through
the fixture matrix's checks at the shape that reaches it.

For each configuration :func:`kernels.instruments.coverage.reachable` finds, :func:`variants` builds
the matrix's kinds of fixture at the witness's width, dtype and row strides (a few rows: the
witness's layout, launched on them, reaches the same configuration,
:func:`kernels.instruments.coverage. proof_rows`): random rows against the scalar reference, an
extreme element in the last column, a zero row and a constant row, rows of 1e-3 at the smallest eps,
row isolation, poison invariance, and the rstd output (each row's rrms, the kernel's STORE_RSTD
code). Each runs through ``kernels.run_checked`` (guarded buffers: any store outside the output's
rows fails it) with the witness's layout forced, and a run whose launch lands in another
configuration fails (the proof must cover the configuration it names). :func:`prove_all` proves the
map; :func:`record` / :func:`read_record` write and read it (``main.py coverage``, the check's
receipt and the window's grid).

Qt-free.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bounded_json import JsonBounds, JsonRefused, loads
from oracle import matrix, scalar, spec
from oracle.compare import INTERMEDIATE_TOLERANCE, compare
from oracle.dtypes import ITEMSIZE
from oracle.fixtures import Fixture
from oracle.limits import LIMITS
from oracle.spec import FINITE_MAX
from oracle.tiled import POISON

if TYPE_CHECKING:
    from kernels.instruments.checked import CheckedRun

RECORD_KIND = "rmsnorm-inspector coverage"
RECORD_VERSION = 1
# A record holds a few hundred configurations with a handful of outcomes each.
MAX_RECORD_BYTES = 8 * 2**20
# The product's records (457 KB) hold 2,900 containers, 11,900 values and 17,200 strings: the
# bounds are 16 times that, as MAX_RECORD_BYTES is for the bytes.
RECORD_BOUNDS = JsonBounds(
    size=MAX_RECORD_BYTES, containers=50_000, values=200_000, strings=300_000
)
# Where the committed records live, one per device kind.
RECORD_DIR = Path(__file__).resolve().parents[2] / "resources" / "coverage"
_SHA256 = re.compile("[0-9a-f]{64}")
RECORD_FILES = {"cpu": RECORD_DIR / "cpu.json", "gpu": RECORD_DIR / "h200.json"}


@dataclass(frozen=True)
class ConfigurationProof:
    """One configuration's proof: each variant's outcome on the kernel."""

    configuration: Any  # kernels.instruments.coverage.Configuration
    witness: Any  # kernels.instruments.coverage.Witness
    rows: int
    outcomes: tuple[matrix.FixtureOutcome, ...]
    seconds: float
    inputs_sha256: str = ""  # :func:`inputs_sha256` of the variants it ran

    @property
    def passed(self) -> bool:
        return bool(self.outcomes) and all(outcome.passed for outcome in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        return {
            "configuration": self.configuration.to_json(),
            "label": self.configuration.label,
            "witness": self.witness.to_json(),
            "proof_rows": self.rows,
            "passed": self.passed,
            "seconds": round(self.seconds, 3),
            "inputs_sha256": self.inputs_sha256,
            "fixtures": [
                {"name": o.fixture, "passed": o.passed, "detail": o.detail[:300]}
                for o in self.outcomes
            ],
        }


def _values(rows: int, width: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, width))


def _weight(width: int) -> np.ndarray:
    """0.5, 1.25, -2 repeated: a dropped or misplaced weight cannot hide."""
    return np.resize(np.array([0.5, 1.25, -2.0]), width)


def variants(witness: Any, rows: int) -> list[Fixture]:
    """The matrix's kinds of fixture at ``witness``'s width, dtype and input row stride."""
    width, dtype, stride = witness.width, witness.dtype, witness.x_stride
    seed = width * 7 + rows
    big = min(LIMITS.max_abs_x, FINITE_MAX[dtype] / 4)

    def case(x: np.ndarray, eps: float = 1e-6) -> Callable[[], dict[str, Any]]:
        return lambda: {
            "x": x,
            "weight": _weight(width),
            "eps": eps,
            "dtype": dtype,
            "row_stride": stride,
        }

    extreme = _values(rows, width, seed + 1)
    extreme[:, -1] = big  # the row's last element: where a tail mask or a peeled tail acts
    extreme[0, 0] = -big  # the first: a peeled head
    special = _values(rows, width, seed + 2) * 3.0
    special[0] = 0.0  # finite only through eps
    special[-1] = 2.5  # output = weight (to eps)
    tiny = _values(rows, width, seed + 3) * 1e-3
    return [
        Fixture(
            "random_rows",
            "positive",
            "random rows, asymmetric weights",
            case(_values(rows, width, seed)),
        ),
        Fixture(
            "extreme_edges",
            "boundary",
            f"|x| = {big:g} at each row's last element and row 0's first",
            case(extreme),
        ),
        Fixture(
            "zero_and_constant_rows",
            "boundary",
            "a zero row first, a constant row last",
            case(special),
        ),
        Fixture(
            "min_eps",
            "boundary",
            f"rows of ~1e-3 with eps = {LIMITS.min_eps:g}",
            case(tiny, LIMITS.min_eps),
        ),
        Fixture(
            "row_isolation",
            "negative",
            "changing row 1 must not change row 0",
            case(_values(rows, width, seed + 4)),
            check="row_isolation",
        ),
        Fixture(
            "poison_invariance",
            "negative",
            "another poison in the padding, guards and masked lanes changes nothing",
            case(_values(rows, width, seed + 5)),
            check="poison_invariance",
        ),
        Fixture(
            RSTD_FIXTURE,
            "positive",
            "the kernel's rstd output (each row's rrms) against "
            "the scalar reference's, y as without it",
            case(_values(rows, width, seed + 6)),
        ),
    ]


def inputs_sha256(fixtures: list[Fixture]) -> str:
    """sha256 of what ``fixtures`` hand the kernel, in order: each one's name, dtype, eps, row
    stride, shape and its validated x and weight (float64, little-endian). A record keeps it per
    configuration, so anyone can rebuild the inputs a proof ran on and hold the record to the
    proof's fixtures as they are now: a record made on other data is not this proof's."""
    digest = hashlib.sha256()
    for fixture in fixtures:
        problem = fixture.build()
        head = (
            f"{fixture.name}|{problem.dtype}|{problem.eps!r}|{problem.row_stride}"
            f"|{problem.rows}x{problem.width}\n"
        )
        digest.update(head.encode("utf-8"))
        digest.update(np.ascontiguousarray(problem.x, dtype="<f8").tobytes())
        digest.update(np.ascontiguousarray(problem.weight, dtype="<f8").tobytes())
    return digest.hexdigest()


#: The variant that also takes the kernel's rstd output (its STORE_RSTD code paths).
RSTD_FIXTURE = "rstd_output"


class WrongConfiguration(RuntimeError):
    """The forced launch reached another configuration than the one under proof."""


class RstdMismatch(RuntimeError):
    """The kernel's rstd output is not the rows' rrms."""


def run_kernel_on(
    problem: spec.Problem,
    *,
    mutant: str | None = None,
    poison: float = POISON,
    device: str = "auto",
    path: str = "auto",
    rstd: bool = False,
    batch_invariant: bool = False,
    **layout: Any,
) -> CheckedRun:
    """The one place a validated problem meets ``kernels.run_checked`` (a CheckedRun back):
    the check's runs and the coverage proofs.

    Args:
        problem: a validated problem; its x and weight are copied (torch wants writable arrays).
        mutant: None for the real kernel, else one of ``kernels.KERNEL_MUTANTS``.
        poison: value of the guard regions and the row padding.
        device: "auto" | "cpu" | "cuda".
        path: the launch layout: "auto" (the launcher's choice) or one of kernels.KERNEL_PATHS.
        rstd: also take the kernel's own per-row rrms (its optional rstd output).
        batch_invariant: launch the layout of ``kernels.rms_norm(..., batch_invariant=True)``
            (:func:`kernels.plans.invariant_config` of the width and dtype) instead of the
            launcher's choice for the shape.
        layout: ``config`` and ``out_row_stride`` of ``run_checked`` (a proof's witness).
    """
    import kernels

    if batch_invariant:
        from kernels.plans import invariant_config

        layout["config"] = invariant_config(problem.width, ITEMSIZE[problem.dtype])
    return kernels.run_checked(
        np.array(problem.x),
        np.array(problem.weight),
        eps=problem.eps,
        dtype=problem.dtype,
        row_stride=problem.row_stride,
        mutant=mutant,
        poison=poison,
        device=device,
        path=path,
        rstd=rstd,
        **layout,
    )


def implementation(
    configuration: Any, witness: Any, device: str, mutant: str | None = None
) -> matrix.Implementation:
    """The kernel with the witness's layout and output row stride, as an oracle implementation;
    a launch outside ``configuration`` raises :class:`WrongConfiguration`. ``mutant`` (one of
    ``kernels.KERNEL_MUTANTS``) replaces the matrix's own, for showing what the proof kills."""
    from kernels.instruments.guarded_reads import checked_reads

    def run(problem: spec.Problem, poison: float, _: str | None) -> matrix.RunOutput:
        rstd = problem.name == RSTD_FIXTURE
        result = run_kernel_on(
            problem, mutant=mutant, poison=poison, device=device, rstd=rstd,
            config=witness.config, out_row_stride=witness.y_stride,
        )  # fmt: skip
        if result.configuration != configuration:
            raise WrongConfiguration(
                f"the launch reached {result.configuration.label}, not {configuration.label}"
            )
        if rstd:
            expected = scalar.reference(problem).rrms
            check = compare(result.rstd, expected, INTERMEDIATE_TOLERANCE)
            if not check.passed:
                raise RstdMismatch(f"the kernel's rstd vs the scalar rrms: {check.describe()}")
        oob = len(result.oob_writes) + result.rstd_oob_writes
        count, where = checked_reads(result)
        return matrix.RunOutput(y=result.y, oob_writes=oob, oob_reads=count, oob_read_detail=where)

    return run


def prove(
    configuration: Any, witness: Any, device: str = "auto", mutant: str | None = None
) -> ConfigurationProof:
    """Run every variant of ``witness`` on the kernel (or ``mutant``) with its layout forced."""
    from kernels.instruments.coverage import proof_rows

    start = time.perf_counter()
    rows = proof_rows(witness)
    run = implementation(configuration, witness, device, mutant)
    cache = matrix.ReferenceCache()
    fixtures = variants(witness, rows)
    outcomes = tuple(matrix.evaluate(f, run, cache=cache) for f in fixtures)
    seconds = time.perf_counter() - start
    return ConfigurationProof(
        configuration, witness, rows, outcomes, seconds, inputs_sha256(fixtures)
    )


def prove_all(
    found: dict[Any, Any], device: str = "auto"
) -> Iterator[tuple[int, int, ConfigurationProof]]:
    """Prove every configuration of ``found``, yielding ``(index, total, proof)`` as it goes."""
    total = len(found)
    for index, (configuration, witness) in enumerate(found.items()):
        yield index, total, prove(configuration, witness, device)


def identity() -> dict[str, str]:
    """The code a coverage record belongs to: the rule (layout, the launch geometry, launcher,
    the batch-invariant mode's layout in plans, and the map's walk), which fixes the map it
    walked, and the kernel's functions, which fix what its proofs showed. A record of another
    kernel proves nothing about this one."""
    import kernels
    from kernels import geometry, launcher, layout, plans
    from kernels.instruments import coverage
    from kernels.instruments.compile_info import kernel_source_sha256

    modules = (layout, geometry, launcher, coverage, plans)
    rule = "\n".join(inspect.getsource(module) for module in modules)
    return {
        "rule_sha256": hashlib.sha256(rule.encode("utf-8")).hexdigest(),
        "kernel_sha256": kernel_source_sha256(),
        "mode": kernels.MODE,
    }


def record(
    proofs: list[ConfigurationProof], device: str, seconds: float, complete: bool = True
) -> dict[str, Any]:
    """The JSON record of a proven map (``complete``: every reachable configuration was tried,
    so the record's configurations are the map)."""
    failed = [p.configuration.label for p in proofs if not p.passed]
    return {
        "kind": RECORD_KIND,
        "version": RECORD_VERSION,
        **identity(),
        "device": device,
        "complete": complete,
        "configurations": len(proofs),
        "proven": len(proofs) - len(failed),
        "failed": failed,
        "seconds": round(seconds, 1),
        "proofs": [p.to_json() for p in proofs],
    }


def read_record(path: Path) -> dict[str, Any]:
    """A coverage record, checked: its kind and version, sizes, and every entry's fields.

    Raises:
        ValueError: naming what is wrong (a file too large, not JSON, a field missing or of
            the wrong type).
    """
    from kernels.instruments.coverage import Configuration

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"coverage record {path}: not a regular file")
    size = path.stat().st_size
    if size > MAX_RECORD_BYTES:
        raise ValueError(f"coverage record {path}: {size} bytes, over {MAX_RECORD_BYTES}")
    try:
        with path.open("rb") as stream:
            data = loads(stream.read(MAX_RECORD_BYTES + 1), path.name, RECORD_BOUNDS)
    except JsonRefused as exc:
        raise ValueError(f"coverage record {path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != RECORD_KIND:
        raise ValueError(f"coverage record {path}: kind must be {RECORD_KIND!r}")
    if data.get("version") != RECORD_VERSION:
        raise ValueError(f"coverage record {path}: version must be {RECORD_VERSION}")
    for name in ("rule_sha256", "kernel_sha256", "mode", "device"):
        if not isinstance(data.get(name), str):
            raise ValueError(f"coverage record {path}: {name} must be a string")
    if not isinstance(data.get("complete"), bool):
        raise ValueError(f"coverage record {path}: complete must be a bool")
    proofs = data.get("proofs")
    if not isinstance(proofs, list):
        raise ValueError(f"coverage record {path}: proofs must be a list")
    for index, entry in enumerate(proofs):
        if not isinstance(entry, dict) or not isinstance(entry.get("passed"), bool):
            raise ValueError(f"coverage record {path}: proofs[{index}].passed must be a bool")
        try:
            Configuration.from_json(entry.get("configuration"))
        except ValueError as exc:
            raise ValueError(f"coverage record {path}: proofs[{index}].{exc}") from None
        digest = entry.get("inputs_sha256", "")
        if not isinstance(digest, str) or (digest and not _SHA256.fullmatch(digest)):
            raise ValueError(
                f"coverage record {path}: proofs[{index}].inputs_sha256 must be 64 hex digits"
            )
    return data


def proven_set(data: dict[str, Any]) -> set[Any]:
    """The configurations a (checked) record proves: each entry that passed, whose fixtures
    (where it lists them) all passed and which the record's ``failed`` does not name. An entry
    that contradicts its own evidence proves nothing."""
    failed = data.get("failed")
    named = (
        {label for label in failed if isinstance(label, str)} if isinstance(failed, list) else set()
    )
    proven = set()
    for (config, passed), entry in zip(_entries(data), data["proofs"], strict=True):
        fixtures = entry.get("fixtures", [])
        agrees = isinstance(fixtures, list) and all(
            isinstance(f, dict) and f.get("passed") is True for f in fixtures
        )
        if passed and agrees and config.label not in named:
            proven.add(config)
    return proven


def _entries(data: dict[str, Any]) -> list[tuple[Any, bool]]:
    from kernels.instruments.coverage import Configuration

    return [(Configuration.from_json(e["configuration"]), e["passed"]) for e in data["proofs"]]


def committed(name: str, ident: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
    """The committed record ``name`` ("cpu" or "gpu") when it is of this kernel in the record's
    mode, and where it is from (or why it is not used).

    A record proves configurations: the kernel's code paths, which its functions' sha256
    fixes, with the tile, chunk and warps abstracted away. Which layout rule reached them
    does not change what the proofs showed, so a record made under another rule still proves
    the configurations it lists (the source line says so); whether they are this rule's map
    is :func:`coverage_section`'s question.
    """
    path = RECORD_FILES[name]
    if not path.exists():
        return None, f"no record at resources/coverage/{path.name}"
    try:
        data = read_record(path)
    except ValueError as exc:
        return None, str(exc)
    mode = "interpreter" if name == "cpu" else "compiled"
    if data["mode"] != mode:
        return None, f"{path.name} was made {data['mode']}, not {mode}"
    if data["kernel_sha256"] != ident["kernel_sha256"]:
        return None, f"{path.name} is of another kernel ({data['kernel_sha256'][:12]})"
    source = f"resources/coverage/{path.name}: {data['device']}, {data['mode']}"
    if data["rule_sha256"] != ident["rule_sha256"]:
        source += f" (walked under another layout rule, {data['rule_sha256'][:12]})"
    return data, source


def coverage_section() -> dict[str, Any]:
    """The receipt's ``coverage``: every reachable configuration and whether a committed record
    of this kernel proves it on a CPU (the interpreter) and on a GPU (compiled).

    The map is the CPU record's configurations when that record is complete and of this rule
    (a test holds it equal to :func:`kernels.instruments.coverage.reachable`); otherwise it is
    walked here. A record of this kernel made under another rule proves the configurations it lists.
    """
    from kernels.instruments.coverage import reachable

    ident = identity()
    cpu_data, cpu_source = committed("cpu", ident)
    gpu_data, gpu_source = committed("gpu", ident)
    own_rule = cpu_data is not None and cpu_data["rule_sha256"] == ident["rule_sha256"]
    if cpu_data is not None and cpu_data["complete"] and own_rule:
        found = sorted(config for config, _ in _entries(cpu_data))
    else:
        found = list(reachable())
    cpu = proven_set(cpu_data) if cpu_data is not None else set()
    gpu = proven_set(gpu_data) if gpu_data is not None else set()
    configurations = [
        {**c.to_json(), "label": c.label, "proven_cpu": c in cpu, "proven_gpu": c in gpu}
        for c in found
    ]
    return {
        "configurations": configurations,
        "proven_cpu": sum(c in cpu for c in found),
        "proven_gpu": sum(c in gpu for c in found),
        "unproven": [c.label for c in found if c not in cpu and c not in gpu],
        "sources": {"cpu": cpu_source, "gpu": gpu_source},
        "rule_sha256": ident["rule_sha256"],
        "kernel_sha256": ident["kernel_sha256"],
    }


#: The map's cell states: proven on both, on a CPU only, on a GPU only, by neither; "" is a
#: layout the rule never reaches for that dtype.
CELL_STATES = ("cpu+gpu", "cpu", "gpu", "unproven", "")
DTYPE_COLUMNS = ("float32", "float16", "bfloat16")


def grid(section: dict[str, Any]) -> tuple[list[str], dict[tuple[str, str], str]]:
    """The map as a grid: its rows (each layout: the label past the dtype, grouped by kernel
    and vector width) and each ``(layout, dtype)`` cell's state (absent: not reachable)."""
    cells: dict[tuple[str, str], str] = {}
    for entry in section["configurations"]:
        layout = entry["label"].split("/", 1)[1]
        state = {(True, True): "cpu+gpu", (True, False): "cpu", (False, True): "gpu"}.get(
            (entry["proven_cpu"], entry["proven_gpu"]), "unproven"
        )
        cells[(layout, entry["dtype"])] = state
    layouts = sorted({layout for layout, _ in cells})
    return layouts, cells
