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
    """kernels.coverage.reachable() walked once per session (every width: ~20 s here)."""
    from kernels import coverage

    return coverage.reachable()
