"""``scripts/measure_invariance.py --widths``: each item is a width in [1, MAX_WIDTH] and a dtype
the kernel takes; anything else is refused by argparse with the bound, before a GPU is touched.
No Qt."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest

import kernels

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "measure_invariance.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("measure_invariance_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_widths_at_their_bounds_are_kept_in_order(script) -> None:
    text = f"1:float32,{kernels.MAX_WIDTH}:bfloat16,3077:float16"
    assert script.width_list(text) == [
        (1, "float32"), (kernels.MAX_WIDTH, "bfloat16"), (3077, "float16"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0:float32", r"a width must be an integer in \[1, 65536\]; got '0:float32'"),
        (f"{kernels.MAX_WIDTH + 1}:float32", r"a width must be an integer in \[1, 65536\]"),
        ("-5:float32", r"a width must be an integer in \[1, 65536\]; got '-5:float32'"),
        ("x:float32", r"a width must be an integer in \[1, 65536\]; got 'x:float32'"),
        ("3077", r"a dtype must be one of float32, float16, bfloat16; got '3077'"),
        ("3077:int8", r"a dtype must be one of float32, float16, bfloat16; got '3077:int8'"),
        ("3077:float32,", r"a width must be an integer in \[1, 65536\]; got ''"),
    ],
)
def test_a_bad_item_is_refused_with_its_bound(script, text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        script.width_list(text)
