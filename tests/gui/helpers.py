"""Steps several GUI tests take the same way."""

from __future__ import annotations

# A kernel run on the interpreter, in a host process, on a busy 2-core machine.
KERNEL_TIMEOUT_MS = 120_000


def run_kernel(qtbot, window) -> None:
    """Press Run kernel and wait until its job has finished and the runner is idle; the run
    itself may have passed or failed (the caller asserts which)."""
    with qtbot.waitSignal(window.runner.finished, timeout=KERNEL_TIMEOUT_MS):
        assert window.run_kernel()
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=KERNEL_TIMEOUT_MS)
