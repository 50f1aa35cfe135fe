"""One whole mutation run of a kernel, as ``mutation.json`` holds it: the unmutated kernel on
every runnable fixture first (a baseline that passes none refuses the run), the bundled kernel's
coverage map for its survivors, every source mutant judged (:mod:`inspector.mutate.source_mutants`),
and the report. ``main.py mutate`` writes it; the window's Run mutate job shows it. Qt-free.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspector.mutate.sites import BUNDLED_FILES

if TYPE_CHECKING:
    from kernels.sandbox.usercode import KernelSpec

# The bundled kernel's launcher as a user kernel file: kernels.rms_norm, whichever ``kernels``
# package comes first on the path (each mutant's copy).
BUNDLED_LAUNCHER = '''"""The bundled kernel's launcher, for `mutate`."""
import kernels


def rms_norm(x, weight, eps, out=None):
    return kernels.rms_norm(x, weight, eps, out=out)
'''


def mutate_report(
    kernel: KernelSpec | None,
    scratch: Path,
    *,
    jobs: int = 0,
    timeout_s: float = 60.0,
    progress: Callable[[int, int, str], None] | None = None,
    compare_ttir: bool = True,
    cancelled: Callable[[], bool] | None = None,
    coverage: bool = True,
    first_site: int = 0,
    count: int = 400,
    only: set[str] | None = None,
) -> dict[str, Any]:
    """``mutation.json``'s content for ``kernel`` (None: the bundled kernel, through a launcher
    shim written into ``scratch``). ``coverage``: the bundled
    kernel's fixture survivors are proven on the coverage map too (under the interpreter only
    on the configurations that run the mutated statement; compiled, on every one).

    Raises:
        kernels.sandbox.usercode.KernelSpecError: a kernel that is not loadable (the message
            says why).
    """
    from inspector.check.user_kernel import check_loadable
    from inspector.coverage.child import line_map
    from inspector.mutate.source_mutants import report, run_mutants
    from kernels.sandbox.usercode import parse_kernel_spec

    if kernel is not None:
        spec = check_loadable(kernel)
        files, package = None, None
    else:
        import kernels

        package = Path(kernels.__file__).resolve().parent
        shim = scratch / "bundled_launcher.py"
        shim.write_text(BUNDLED_LAUNCHER)
        spec = check_loadable(parse_kernel_spec(f"{shim}:rms_norm"))
        files = [package / name for name in BUNDLED_FILES]
    if only is not None:
        from inspector.mutate.source_mutants import check_site_ids

        check_site_ids(files or [spec.path], first_site, count, only)
    from inspector.mutate.baseline_run import run_baseline

    if progress is not None:
        progress(0, 1, "the unmutated kernel on every runnable fixture (the baseline)")
    first = str(package.parent) if package is not None else str(spec.path.parent)
    baseline = run_baseline(spec, first, -3072.0, timeout_s)
    if not baseline.passed:
        name, detail = (baseline.failed or baseline.not_judged)[0]
        raise ValueError(
            f"the unmutated kernel passes none of the "
            f"{len(baseline.failed) + len(baseline.not_judged)} runnable fixtures (first: "
            f"{name}: {detail[:200]}); nothing to judge a mutant on"
        )
    map_path = None
    if kernel is None and coverage:
        map_path = _coverage_map(scratch, jobs, timeout_s, progress)
    mutants, left_out = run_mutants(
        spec,
        files=files,
        launcher_dir=package,
        jobs=jobs,
        timeout_s=timeout_s,
        progress=progress,
        compare_ttir=compare_ttir,
        cancelled=cancelled,
        coverage_map=map_path,
        first_site=first_site,
        count=count,
        only=only,
        judged_on=frozenset(baseline.passed),
    )
    data = report(spec, mutants, left_out)
    data["baseline"] = baseline.as_dict()
    data["coverage_map"] = map_path is not None
    data["coverage_lines"] = map_path is not None and line_map(map_path) is not None
    if map_path is not None:
        entries = json.loads(map_path.read_text())
        beyond = sum(bool(e.get("beyond_rule")) for e in entries)
        data["coverage_configurations"] = {"rule": len(entries) - beyond, "beyond_rule": beyond}
    data["first_site"] = first_site
    if kernel is None:
        from kernels.instruments.compile_info import kernel_source_sha256

        data["kernel"] = {
            "path": str(package),
            "function": "kernels.rms_norm",
            "sha256": kernel_source_sha256(),
        }
    return data


def _coverage_map(
    scratch: Path,
    jobs: int = 0,
    timeout_s: float = 60.0,
    progress: Callable[[int, int, str], None] | None = None,
) -> Path:
    """The bundled kernel's coverage map for the mutants' children: the rule's configurations,
    cheapest proof first (the committed CPU record's times, when it is of this kernel), then
    those only the check's forced layouts and explicit configs launch
    (:func:`kernels.instruments.coverage_beyond.beyond_rule`). Under the interpreter each
    configuration's kernel lines are recorded in it too (one pass over the map, in ``jobs``
    children), so a survivor is proven only where its statement runs."""
    import kernels
    from inspector.coverage.child import add_lines, write_map
    from inspector.coverage.proof import committed, identity
    from kernels.instruments.coverage import reachable
    from kernels.instruments.coverage_beyond import beyond_rule
    from kernels.mode import INTERPRETER

    found = reachable()
    record, _ = committed("cpu", identity())
    seconds = {}
    if record is not None:
        seconds = {e["label"]: e.get("seconds", 0.0) for e in record["proofs"]}
    order = sorted(found, key=lambda c: (seconds.get(c.label, 0.0), c.label))
    beyond = beyond_rule(found)
    path = scratch / "coverage_map.json"
    write_map(path, {**found, **beyond}, [*order, *beyond], beyond=set(beyond))
    if kernels.MODE == INTERPRETER:
        size = len(found) + len(beyond)
        label = f"recording the kernel lines each of the map's {size} configurations runs"

        def parts_done(done: int, parts: int) -> None:
            if progress is not None:
                progress(done, parts, f"{label} ({done} of {parts} parts)")

        # A share of the map per job, its proofs traced: about 2.5 untraced full-map proofs.
        workers = min(jobs or max(1, os.cpu_count() or 2), size)
        parts_done(0, workers)
        add_lines(path, workers, timeout_s * 30, parts_done)
    return path
