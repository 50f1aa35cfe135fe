"""Shape sets and option parsing of the benchmark harness (CPU only, no Qt)."""

from __future__ import annotations

import json

import pytest

from kernels import bench

EXPECTED_SETS = {
    "launch_bound": [(1, 4096), (8, 4096), (64, 4096), (512, 4096)],
    "tails": [(4096, 70), (4096, 127), (4096, 255), (4096, 1000), (4096, 5125)],
    "narrow": [(65536, 128), (65536, 256), (65536, 512)],
    "wide": [(2048, 32768), (2048, 65536)],
}


def test_shipped_shape_sets_parse_and_validate():
    sets = bench.load_shape_sets()
    assert set(bench.DEFAULT_SETS) <= set(sets)
    for name, expected in EXPECTED_SETS.items():
        assert [(s.rows, s.width) for s in sets[name].shapes] == expected
    llm = sets["llm"].shapes
    assert llm, "the llm set must not be empty"
    for shape in llm:
        assert 4096 <= shape.rows <= 32768
        assert shape.width in {2048, 4096, 5120, 8192, 16384}
    # Every product hidden size appears at least once.
    assert {s.width for s in llm} == {2048, 4096, 5120, 8192, 16384}


def test_heldout_set_is_apart_from_the_product_sets_and_spans_the_issue_ranges():
    sets = bench.load_shape_sets()
    heldout = {(s.rows, s.width) for s in sets["heldout"].shapes}
    product = {(s.rows, s.width) for name in bench.DEFAULT_SETS for s in sets[name].shapes}
    product_widths = {width for _, width in product}
    assert not heldout & product
    widths = {width for _, width in heldout}
    rows = {row for row, _ in heldout}
    assert min(widths) == 64
    assert max(widths) == 24576
    assert min(rows) == 4
    assert max(rows) == 262144
    assert sum(width % 2 for width in widths) >= 4  # odd widths: no wide vector divides them
    assert len(widths - product_widths) >= 15  # mostly widths no product shape has


def test_dev_set_is_apart_from_the_heldout_set():
    # The launch rule's thresholds are chosen on the product and dev sets, never on heldout.
    sets = bench.load_shape_sets()
    dev = {(s.rows, s.width) for s in sets["dev"].shapes}
    heldout = {(s.rows, s.width) for s in sets["heldout"].shapes}
    product = {(s.rows, s.width) for name in bench.DEFAULT_SETS for s in sets[name].shapes}
    assert dev
    assert not dev & heldout
    assert not dev & product
    assert "dev" not in bench.DEFAULT_SETS


def test_resolve_mixes_sets_and_shapes_in_order_without_duplicates():
    sets = bench.load_shape_sets()
    chosen = bench.resolve_shapes("tails, 3x70,tails,3X70", sets)
    assert chosen[:5] == [("tails", s) for s in sets["tails"].shapes]
    assert chosen[5:] == [("custom", bench.Shape(3, 70))]
    everything = bench.resolve_shapes(None, sets)
    assert [name for name, _ in everything][:4] == ["launch_bound"] * 4
    assert len(everything) == sum(len(s.shapes) for s in sets.values())


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("4096by70", "'4096by70' is neither a shape"),
        ("0x70", "rows must be >= 1"),
        ("4096x0", "width must be >= 1"),
        ("4096x", "neither a shape"),
        ("tails,,llm", "empty item"),
        ("-3x5", "neither a shape"),
        ("nosuchset", "known set"),
        ("4294967296x2", "rows must be <="),
    ],
)
def test_bad_shape_text_gives_a_clear_error(text, fragment):
    with pytest.raises(bench.BenchUsageError, match="--shapes") as info:
        bench.resolve_shapes(text, bench.load_shape_sets())
    assert fragment in str(info.value)


def _write(tmp_path, name, data):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"schema": "other/1", "name": "s", "shapes": [[1, 2]]}, "schema must be"),
        ({"schema": bench.SHAPES_SCHEMA, "name": "s", "shapes": []}, "non-empty list"),
        ({"schema": bench.SHAPES_SCHEMA, "name": "s", "shapes": [[1]]}, "must be [rows, width]"),
        (
            {"schema": bench.SHAPES_SCHEMA, "name": "s", "shapes": [[1, 2.5]]},
            "width must be an int",
        ),
        (
            {"schema": bench.SHAPES_SCHEMA, "name": "s", "shapes": [[True, 2]]},
            "rows must be an int",
        ),
        ({"schema": bench.SHAPES_SCHEMA, "name": "s", "shapes": [[1, -2]]}, "width must be >= 1"),
        ({"schema": bench.SHAPES_SCHEMA, "name": "s", "shapes": [[1, 2], [1, 2]]}, "duplicates"),
        ({"schema": bench.SHAPES_SCHEMA, "name": "s", "shapes": [[1, 2]], "x": 1}, "unknown field"),
        ({"schema": bench.SHAPES_SCHEMA, "name": "Bad Name", "shapes": [[1, 2]]}, "name must"),
        ("[1, 2]", "JSON object"),
        ("{not json", "invalid JSON"),
    ],
)
def test_bad_shape_set_files_are_rejected_with_the_field_named(tmp_path, data, fragment):
    name = data.get("name", "s") if isinstance(data, dict) else "s"
    path = _write(tmp_path, name if _ok_stem(name) else "s", data)
    with pytest.raises(bench.BenchUsageError) as info:
        bench.load_shape_set(path)
    assert fragment in str(info.value)
    assert str(path) in str(info.value)


def _ok_stem(name):
    return isinstance(name, str) and name.isidentifier() and name.islower()


def test_set_name_must_match_its_file(tmp_path):
    path = _write(
        tmp_path, "one", {"schema": bench.SHAPES_SCHEMA, "name": "two", "shapes": [[1, 2]]}
    )
    with pytest.raises(bench.BenchUsageError, match="file stem"):
        bench.load_shape_set(path)


def test_dtype_and_impl_names_are_checked():
    assert bench.resolve_names(None, list(bench.DTYPES), "--dtypes") == list(bench.DTYPES)
    assert bench.resolve_names("float32,bfloat16,float32", list(bench.DTYPES), "--dtypes") == [
        "float32",
        "bfloat16",
    ]
    with pytest.raises(bench.BenchUsageError, match="--dtypes: 'float8' is not one of"):
        bench.resolve_names("float8", list(bench.DTYPES), "--dtypes")


def test_traffic_bytes_follow_the_stated_formula():
    import torch

    shape = bench.Shape(4096, 70)
    assert bench.traffic_bytes(shape, torch.bfloat16) == 2 * 4096 * 70 * 2 + 70 * 2
    assert bench.traffic_bytes(shape, torch.float32, impl="copy") == 2 * 4096 * 70 * 4
    assert "x read" in bench.BYTES_FORMULA
    assert "y written" in bench.BYTES_FORMULA


def test_rotation_exceeds_twice_l2():
    l2 = 60 * 2**20
    for nbytes in (16 * 2**10, 3 * 2**20, 64 * 2**20, 2**31):
        count = bench.buffer_count(nbytes, l2)
        assert count >= 2
        assert count * nbytes > 2 * l2
