"""Device benchmark of the fused RMSNorm forward against the alternatives a kernel engineer has.

A benchmark is a program, not a timed test. For every shape of the chosen product shape sets
(``resources/shapes/*.json``) and every dtype it rotates inputs over more than twice the L2
cache, prepares each implementation (:mod:`~kernels.bench.impls`: the copy ceiling, ``ours``,
torch eager, torch.compile, Liger, QuACK), checks its output against a float64 reference
inside the harness (:mod:`~kernels.bench.parity`), measures its peak extra memory, and times it
with CUDA events, as CUDA-graph replays where launch cost dominates
(:mod:`~kernels.bench.timing`). It writes ``results.json``, ``results.csv`` and ``bench.png``
(:mod:`~kernels.bench.report`).

Modules: ``shapes`` (what is benchmarked), ``parity``, ``timing``, ``impls``, ``harness`` (the
run), ``report`` (the record, and ``read_json`` that checks one), ``cli`` (``bench_main``).
CPU-safe parts are plain functions tested in ``tests/bench``. The package imports no Qt, nothing
of ``oracle`` or ``inspector``, and imports ``kernels.rms_norm`` only when it is benchmarked.
"""

from __future__ import annotations

from kernels.bench.cli import bench_main, build_parser, run_benchmark
from kernels.bench.harness import (
    BenchConfig,
    CudaUnavailableError,
    environment,
    finalize,
    iter_benchmark,
    nvidia_smi_query,
    require_cuda,
)
from kernels.bench.impls import (
    IMPLEMENTATIONS,
    PREPARERS,
    CallFn,
    ImplementationUnavailable,
    Prepared,
    implementation_info,
)
from kernels.bench.parity import (
    TOLERANCES,
    Parity,
    Tolerance,
    check_copy,
    check_parity,
    make_parity_input,
    make_weight,
    reference_rms_norm,
)
from kernels.bench.report import (
    CSV_FIELDS,
    MAX_REPORT_BYTES,
    SCHEMA_VERSION,
    build_report,
    markdown_table,
    read_csv,
    read_json,
    write_csv,
    write_json,
    write_plot,
)
from kernels.bench.shapes import (
    BYTES_FORMULA,
    DEFAULT_SETS,
    DTYPES,
    MAX_ELEMENTS,
    MAX_ROWS,
    SHAPES_DIR,
    SHAPES_SCHEMA,
    BenchUsageError,
    Shape,
    ShapeSet,
    dtype_name,
    load_shape_set,
    load_shape_sets,
    parse_shape,
    resolve_names,
    resolve_shapes,
    traffic_bytes,
    validate_shape_set,
)
from kernels.bench.timing import (
    FALLBACK_L2_BYTES,
    GRAPH_BYTES_THRESHOLD,
    GRAPH_REPLAY_TARGET_US,
    L2_FACTOR,
    MAX_GRAPH_LAUNCHES,
    MAX_SAMPLES,
    MIN_GRAPH_LAUNCHES,
    MIN_SAMPLES,
    SLEEP_US_BEFORE_SAMPLE,
    TimingStats,
    buffer_count,
    gbps,
    graph_launches,
    peak_extra_bytes,
    round_order,
    summarize,
    time_events,
    time_graph,
)

__all__ = [
    "BYTES_FORMULA",
    "CSV_FIELDS",
    "DEFAULT_SETS",
    "DTYPES",
    "FALLBACK_L2_BYTES",
    "GRAPH_BYTES_THRESHOLD",
    "GRAPH_REPLAY_TARGET_US",
    "IMPLEMENTATIONS",
    "L2_FACTOR",
    "MAX_ELEMENTS",
    "MAX_GRAPH_LAUNCHES",
    "MAX_REPORT_BYTES",
    "MAX_ROWS",
    "MAX_SAMPLES",
    "MIN_GRAPH_LAUNCHES",
    "MIN_SAMPLES",
    "PREPARERS",
    "SCHEMA_VERSION",
    "SHAPES_DIR",
    "SHAPES_SCHEMA",
    "SLEEP_US_BEFORE_SAMPLE",
    "TOLERANCES",
    "BenchConfig",
    "BenchUsageError",
    "CallFn",
    "CudaUnavailableError",
    "ImplementationUnavailable",
    "Parity",
    "Prepared",
    "Shape",
    "ShapeSet",
    "TimingStats",
    "Tolerance",
    "bench_main",
    "buffer_count",
    "build_parser",
    "build_report",
    "check_copy",
    "check_parity",
    "dtype_name",
    "environment",
    "finalize",
    "gbps",
    "graph_launches",
    "implementation_info",
    "iter_benchmark",
    "load_shape_set",
    "load_shape_sets",
    "make_parity_input",
    "make_weight",
    "markdown_table",
    "nvidia_smi_query",
    "parse_shape",
    "peak_extra_bytes",
    "read_csv",
    "read_json",
    "reference_rms_norm",
    "require_cuda",
    "resolve_names",
    "resolve_shapes",
    "round_order",
    "run_benchmark",
    "summarize",
    "time_events",
    "time_graph",
    "traffic_bytes",
    "validate_shape_set",
    "write_csv",
    "write_json",
    "write_plot",
]
