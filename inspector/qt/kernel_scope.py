"""What applies to the bundled kernel only, kept in step with the loaded kernel: with a user's
kernel loaded the kernel-only mutant, the compiler output and the benchmark are disabled and say
so, and the Run box's texts name the kernel. The benchmark's scope also follows the machine
(:func:`~inspector.qt.widgets.bench_view.bench_available`: CUDA, the harness)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject

from inspector.model.events import Event
from inspector.model.kernel_choice import kernel_name
from inspector.model.state import InspectionState
from inspector.qt.widgets.bench_view import bench_available

BUNDLED_ONLY = "bundled kernel only"


@dataclass(frozen=True)
class ScopeWidgets:
    """The widgets whose scope follows the kernel."""

    mutant_panel: Any
    compiler_view: Any
    bench_view: Any
    tabs: Any
    run_box: Any


class KernelScope(QObject):
    """Subscribes to the state's kernel and keeps ``widgets`` in step with it."""

    def __init__(
        self,
        state: InspectionState,
        env: dict[str, Any],
        widgets: ScopeWidgets,
        busy: Callable[[], bool],
    ) -> None:
        super().__init__(widgets.tabs)
        self.state = state
        self._env = env
        self._widgets = widgets
        self._busy = busy
        state.events.kernel.connect(self._on_kernel)
        self.set_bench_scope(True)

    def _on_kernel(self, _event: Event) -> None:
        self.apply()

    def set_bench_scope(self, bundled: bool) -> None:
        """The benchmark times the bundled kernel and its peers: off with a user's kernel."""
        available, reason = bench_available(self._env)
        short = reason
        if not bundled:
            available, short = False, BUNDLED_ONLY
            reason = (
                f"{BUNDLED_ONLY}: the window times the bundled kernel and its peers; "
                "python main.py bench --kernel FILE.py:FUNCTION times yours beside them"
            )
        button = self._widgets.run_box.bench_button
        button.setEnabled(available and not self._busy())
        button.setText("Benchmark" if available else f"Benchmark ({short})")
        button.setToolTip("" if available else reason)
        self._widgets.bench_view.set_available(available, reason)

    def apply(self) -> None:
        """Disable, and say so, what applies to the bundled kernel only when a user's kernel is
        loaded: its kernel-only mutant, the compiler output, the benchmark."""
        widgets, spec = self._widgets, self.state.kernel
        name = None if spec is None else kernel_name(spec)
        widgets.mutant_panel.set_user_kernel(name)
        widgets.compiler_view.set_bundled_only(
            ""
            if spec is None
            else f"Compiler output: {BUNDLED_ONLY}. {name} is compiled by its own launcher in "
            "its child process; what these tabs held is the bundled kernel's."
        )
        tabs = widgets.tabs
        for widget, title in (
            (widgets.compiler_view, "Compiler"),
            (widgets.bench_view, "Benchmark"),
        ):
            tabs.setTabText(
                tabs.indexOf(widget), title if spec is None else f"{title} ({BUNDLED_ONLY})"
            )
        self.set_bench_scope(spec is None)
        widgets.run_box.name_kernel(name)
