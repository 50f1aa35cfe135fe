"""Test-wide environment: decided here before anything imports Qt or triton.

* Qt renders offscreen (no display on CI).
* Without a CUDA device the kernel runs under the Triton interpreter; ``kernels.mode`` makes
  the same choice, but it must be made before any ``@triton.jit`` decoration, so it is made here
  once for the whole session.
* Qt finds only the fonts under ``tests/fonts`` (DejaVu, its licence beside it).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

FONTS = Path(__file__).resolve().parent / "fonts"
# Fontconfig sees the fonts shipped under tests/fonts and nothing else: whatever the machine
# has installed (Noto Sans Mono changes `fc-match monospace`), "Sans Serif" and "monospace"
# resolve to the same DejaVu files, rendered with the same hinting, so screenshots compare
# against their baselines on any Linux desktop. Children (a `main.py --screenshot` run)
# inherit the variable and so the same fonts.
FONTCONFIG = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir>{fonts}</dir>
  <cachedir>{cache}</cachedir>
  {aliases}
  <match target="pattern">
    <edit name="family" mode="append_last"><string>DejaVu Sans</string></edit>
  </match>
  <match target="font">
    <edit name="antialias" mode="assign"><bool>true</bool></edit>
    <edit name="hinting" mode="assign"><bool>true</bool></edit>
    <edit name="hintstyle" mode="assign"><const>hintslight</const></edit>
    <edit name="rgba" mode="assign"><const>none</const></edit>
    <edit name="lcdfilter" mode="assign"><const>lcddefault</const></edit>
  </match>
</fontconfig>
"""
ALIAS = (
    '<alias binding="same"><family>{generic}</family>'
    "<prefer><family>{family}</family></prefer></alias>"
)
GENERIC_FAMILIES = {
    "sans-serif": "DejaVu Sans",
    "Sans Serif": "DejaVu Sans",
    "serif": "DejaVu Sans",
    "monospace": "DejaVu Sans Mono",
}


def _pin_fonts() -> None:
    """Point fontconfig at tests/fonts only (before anything loads Qt)."""
    pinned = os.environ.get("RMSNORM_INSPECTOR_TEST_FONTCONFIG")
    if pinned and pinned == os.environ.get("FONTCONFIG_FILE") and Path(pinned).is_file():
        return  # a parent test process (the xdist controller) pinned them
    folder = Path(tempfile.mkdtemp(prefix="rmsnorm-fonts-"))
    atexit.register(shutil.rmtree, folder, True)
    config = folder / "fonts.conf"
    aliases = "\n  ".join(ALIAS.format(generic=g, family=f) for g, f in GENERIC_FAMILIES.items())
    text = FONTCONFIG.format(fonts=FONTS, cache=folder / "cache", aliases=aliases)
    config.write_text(text, encoding="utf-8")
    os.environ["FONTCONFIG_FILE"] = str(config)
    os.environ["RMSNORM_INSPECTOR_TEST_FONTCONFIG"] = str(config)


_pin_fonts()

if "TRITON_INTERPRET" not in os.environ:
    try:
        import torch

        if not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"
    except ImportError:  # pragma: no cover - torch is a hard dependency
        os.environ["TRITON_INTERPRET"] = "1"


@pytest.fixture(scope="session")
def coverage_map() -> dict:
    """kernels.instruments.coverage.reachable() walked once per session (every width: about
    75 s on a quiet 2-core machine)."""
    from kernels.instruments import coverage

    return coverage.reachable()


# ---- how long a test may take ----
#: A test that needs longer than this on a quiet 2-core machine is marked ``slow`` with its
#: reason and carries a ``timeout`` mark of its own (pyproject's global timeout is the rest's).
SLOW_S = 60.0
#: Fixtures of tens of seconds, made once a process (session or module scope): the tests that
#: use one share an xdist worker (``--dist loadgroup``), so it is made once per run, not once
#: per worker. Fixture name -> group.
SHARED_FIXTURES = {
    "coverage_map": "coverage_walk",  # the whole-width walk of the layout rule
    "kernel_result": "kernel_check",  # tests/records: one check with the kernel
    "line_map_file": "line_map",  # tests/inspector_core/test_mutation_lines.py
}
#: Modules whose module-scoped check fixture is shared the same way (a fixture name alone
#: would also match another module's fixture of that name).
SHARED_MODULES = {"test_cli.py": "cli_check"}
#: What making a shared fixture may take on a busy 2-core machine (about four times its quiet
#: cost), on top of its first test's own timeout: pytest-timeout counts a fixture's setup
#: against the test that makes it, and which test that is depends on the order. Group -> s.
SHARED_SETUP_S = {"coverage_walk": 300, "kernel_check": 120, "line_map": 120, "cli_check": 150}


# First: xdist's worker names each item's group from its marks in its own hook.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = []
    for item in items:
        slow = item.get_closest_marker("slow")
        if slow is not None and (
            not slow.kwargs.get("reason") or not item.get_closest_marker("timeout")
        ):
            unmarked.append(item.nodeid)
        if item.get_closest_marker("xdist_group") is None:
            names = getattr(item, "fixturenames", ())
            group = next((g for f, g in SHARED_FIXTURES.items() if f in names), None)
            if group is None and "checked" in names:
                group = SHARED_MODULES.get(item.path.name)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))
        _allow_shared_setup(config, item)
    if unmarked:
        raise pytest.UsageError(
            "a test marked slow needs slow(reason=...) and a timeout(seconds) mark of its own: "
            + ", ".join(unmarked[:5])
        )


def _allow_shared_setup(config: pytest.Config, item: pytest.Item) -> None:
    """Give a test of a shared fixture's group the fixture's setup time on top of its timeout
    (its own timeout mark, else the global one)."""
    group = item.get_closest_marker("xdist_group")
    setup = SHARED_SETUP_S.get(group.args[0] if group is not None and group.args else "")
    if setup is None:
        return
    own = item.get_closest_marker("timeout")
    base = float(own.args[0]) if own is not None and own.args else float(config.getini("timeout"))
    item.add_marker(pytest.mark.timeout(base + setup))


_over: list[tuple[str, float]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.duration > SLOW_S and "slow" not in report.keywords:
        _over.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter) -> None:
    """Name the tests that ran past SLOW_S without the slow mark (on a busy machine any test
    may: this is a prompt to measure it, not a failure)."""
    if _over:
        terminalreporter.section(f"over {SLOW_S:g} s without the slow mark")
        for nodeid, seconds in sorted(_over, key=lambda o: -o[1]):
            terminalreporter.write_line(f"{seconds:6.1f} s  {nodeid}")
