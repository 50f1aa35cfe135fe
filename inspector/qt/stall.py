"""Event-loop stall meter: how long the GUI thread could not repaint or take input.

A measurement for ``scripts/measure_scale.py`` (docs/SCALE.md) and ``scripts/measure_stall.py``
(README), not a test assertion: stall times depend on the machine's load. The GUI tests assert
structure instead (the heavy job runs in another process while the GUI thread answers).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QElapsedTimer, QEventLoop, QTimer


def wait_until(loop: QEventLoop, done: Callable[[], bool], timeout_s: float) -> None:
    """Turn ``loop`` until ``done()``; TimeoutError after ``timeout_s`` (a measurement's stage)."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError("stage did not finish in time")
        loop.processEvents()
        time.sleep(0.002)


class GapMeter:
    """The longest pause of the GUI event loop, by a 5 ms timer (needs a QApplication)."""

    def __init__(self) -> None:
        self.clock = QElapsedTimer()
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)
        self.last = 0
        self.max_gap_ms = 0
        self.gaps_ms: list[int] = []  # every pause longer than LONG_MS

    #: A pause longer than this is kept in ``gaps_ms`` (a user notices ~50 ms).
    LONG_MS = 50

    def start(self) -> None:
        self.clock.start()
        self.last = 0
        self.max_gap_ms = 0
        self.gaps_ms = []
        self.timer.start()

    def _tick(self) -> None:
        now = self.clock.elapsed()
        gap = now - self.last
        self.max_gap_ms = max(self.max_gap_ms, gap)
        if gap > self.LONG_MS:
            self.gaps_ms.append(int(gap))
        self.last = now

    def stop(self) -> int:
        self._tick()  # a stall right before stop counts too
        self.timer.stop()
        return int(self.max_gap_ms)
