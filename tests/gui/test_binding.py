"""The Qt binding must not corrupt CPython's reference counts (PySide6 6.12.0 did).

On CPython < 3.12, None, True and False are ordinary refcounted objects. PySide6 6.12.0 released
one reference too many per ``processEvents()`` turn and per queued signal carrying None, so a few
thousand event-loop turns aborted the interpreter ("bool_dealloc" / "none_dealloc"). The check
runs in a subprocess: on a broken binding it aborts rather than fails.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import os, sys
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtCore import QObject, Signal
    from PySide6.QtWidgets import QApplication
    app = QApplication([])

    class Emitter(QObject):
        sig = Signal(object)

    emitter = Emitter()
    received = []
    emitter.sig.connect(received.append)
    before = [sys.getrefcount(v) for v in (None, True, False)]
    for _ in range(3000):
        app.processEvents()
        emitter.sig.emit(None)
        emitter.sig.emit(True)
    after = [sys.getrefcount(v) for v in (None, True, False)]
    del received[:]
    print(*[b - a for a, b in zip(before, after)])
    """
)


def test_event_loop_keeps_refcounts_of_none_and_bools():
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"the binding aborted the interpreter: {done.stderr[-500:]}"
    lost = [int(v) for v in done.stdout.split()]
    # Temporary references come and go; a leak per turn would lose thousands.
    assert all(delta > -100 for delta in lost), f"references lost (None, True, False): {lost}"
