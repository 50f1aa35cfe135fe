"""Regenerate ``resources/demo_session.h5``: the session the window shows on first start.

A small real run: 4 rows x 70 float32 (a 128-lane tile with 58 masked lanes), row stride 72,
asymmetric weights (0.5, 1.25, -2 repeated), the whole check including the real kernel under
the Triton interpreter, both kill matrices, compiler output and the receipts as written.

Usage: ``python scripts/make_demo_session.py [OUT.h5]``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# The demo is an interpreter run on any machine (decided before triton decorates the kernel).
os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402

from inspector.check import pipeline  # noqa: E402
from inspector.records.receipts.receipt import CSV_NAME, JSON_NAME, write_receipts  # noqa: E402
from inspector.records.sessions.session import Session, load_session, save_session  # noqa: E402
from oracle.spec import make_problem  # noqa: E402

DEFAULT_OUT = ROOT / "resources" / "demo_session.h5"


def demo_problem():
    """4 x 70 float32, seed 2026, asymmetric weights, padded row stride 72."""
    rng = np.random.default_rng(2026)
    x = rng.standard_normal((4, 70))
    x[2] *= 1e-3  # a small-magnitude row, where eps starts to matter
    weight = np.resize(np.array([0.5, 1.25, -2.0]), 70)
    return make_problem(x, weight, eps=1e-6, dtype="float32", row_stride=72, name="demo")


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else DEFAULT_OUT
    result = pipeline.run_check(demo_problem(), pipeline.CheckConfig(device="cpu"))
    session = Session.from_check(result)
    with tempfile.TemporaryDirectory() as folder:
        write_receipts(result, folder)
        session.record_receipts(
            (Path(folder) / JSON_NAME).read_text(encoding="utf-8"),
            (Path(folder) / CSV_NAME).read_text(encoding="utf-8"),
            passed=result.passed,
            reason="; ".join(result.failures[:3]),
        )
    session.bench_meta = {
        "note": "no timings: the demo ran under the Triton interpreter on a CPU; "
        "run `main.py bench` on a CUDA device for device-event timings"
    }
    save_session(out, session)
    load_session(out)  # refuse to leave a file this code cannot open
    print(f"{out}: {out.stat().st_size} bytes, mode {result.mode}, passed {result.passed}")
    return 0 if result.passed else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
