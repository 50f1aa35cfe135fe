"""The sweep's CPU-safe parts: option checks, its cases, the launch-cost fit (no device)."""

from __future__ import annotations

import json

import pytest

import kernels
from kernels import bench
from kernels.geometry import kernel_constexprs
from lab import sweep


def test_sweep_rejects_rounds_out_of_range_before_touching_a_device(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        sweep.main(["--out", str(tmp_path / "s.json"), "--rounds", "0"])
    assert info.value.code == 2
    assert "--rounds must be in [1, 10]; got 0" in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()


def test_sweep_cases_are_launchable_layouts():
    # Every candidate of the current sweep is a layout the launcher accepts for its shape
    # (tile at least as wide as the row, at most MAX_CHUNKS chunks), with unique labels.
    cases = sweep.sweep_cases()
    assert cases
    for shape, dtype_key, configs, _ in cases:
        assert dtype_key in bench.DTYPES
        labels = [sweep.label(config) for config in configs]
        assert len(set(labels)) == len(labels), labels
        for config in configs:
            constexprs = kernel_constexprs(config, shape.width, 4)
            assert constexprs["VEC"] == 4


def test_fit_launch_cost_recovers_time_and_fixed_cost():
    # per_launch(L) = 33.2 + 3.5 / L exactly: the fit returns both numbers.
    data = {count: 33.2 + 3.5 / count for count in (8, 16, 64)}
    t, fixed = sweep.fit_launch_cost(data)
    assert t == pytest.approx(33.2, abs=1e-9)
    assert fixed == pytest.approx(3.5, abs=1e-9)


def test_fit_launch_cost_needs_two_counts():
    with pytest.raises(ValueError, match="needs >= 2 launch counts; got \\[16\\]"):
        sweep.fit_launch_cost({16: 126.0})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("8,x", "--launch-counts must be comma-separated integers: '8,x'"),
        ("16", "--launch-counts needs >= 2 distinct counts in [1, 8192]; got '16'"),
        ("8,0", "--launch-counts needs >= 2 distinct counts in [1, 8192]; got '8,0'"),
        ("8,9000", "--launch-counts needs >= 2 distinct counts in [1, 8192]; got '8,9000'"),
    ],
)
def test_sweep_refuses_bad_launch_counts_before_touching_a_device(tmp_path, capsys, value, message):
    with pytest.raises(SystemExit) as info:
        sweep.main(["--out", str(tmp_path / "s.json"), "--launch-counts", value])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()


def test_set_cases_sweep_the_rules_neighbours_on_every_shape_of_the_set():
    sets = bench.load_shape_sets()
    cases = sweep.set_cases(["heldout"], ["bfloat16", "float32"])
    assert len(cases) == 2 * len(sets["heldout"].shapes)
    for shape, dtype_key, configs, _ in cases:
        itemsize = 4 if dtype_key == "float32" else 2
        rule = kernels.choose_config(shape.rows, shape.width, itemsize, 132)
        labels = [sweep.label(config) for config in configs]
        assert configs, (shape, dtype_key)
        assert len(set(labels)) == len(labels)
        assert sweep.label(rule) not in labels  # ours, a reference of every case, measures it
        for config in configs:  # every one launchable for the width (peeled where it is odd)
            kernel_constexprs(config, shape.width, 1, 1, 16 // itemsize)


def test_neighbours_are_one_step_from_the_rule():
    tile = kernels.LaunchConfig(False, 8192, 4, w_early=False)
    labels = [sweep.label(c) for c in sweep.neighbours(tile, 5125, 2)]
    assert labels == [
        "tile_R1_w4_wlate",
        "tile_R1_w2_wlate",
        "tile_R1_w8_wlate",
        "tile_R1_w4",
        "loop_C4096_w8_cs",
    ]
    loop = kernels.LaunchConfig(True, 8192, 16, stream_store=True)
    labels = [sweep.label(c) for c in sweep.neighbours(loop, 16384, 2)]
    assert labels == [
        "loop_C8192_w16_cs",
        "loop_C8192_w8_cs",
        "loop_C8192_w32_cs",
        "loop_C4096_w16_cs",
        "loop_C16384_w16_cs",
        "loop_C8192_w16",
    ]


def test_sweep_refuses_an_unknown_set_before_touching_a_device(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        sweep.main(["--out", str(tmp_path / "s.json"), "--sets", "nosuchset"])
    assert info.value.code == 2
    assert "nosuchset" in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()


def test_with_candidates_adds_a_files_layouts_to_their_case_once():
    cases = sweep.set_cases(["tails"], ["bfloat16"])
    before = {(c[0].rows, c[0].width, c[1]): len(c[2]) for c in cases}
    extra = {"loop": True, "block": 1024, "num_warps": 4}
    entries = [
        {"rows": 4096, "width": 1000, "dtype": "bfloat16", "configs": [extra, extra]},
        {
            "rows": 3,
            "width": 70,
            "dtype": "float32",
            "configs": [{"loop": False, "block": 128, "num_warps": 1}],
        },
    ]
    merged = sweep.with_candidates(cases, entries)
    by_key = {(c[0].rows, c[0].width, c[1]): c for c in merged}
    assert len(by_key[(4096, 1000, "bfloat16")][2]) == before[(4096, 1000, "bfloat16")] + 1
    assert [sweep.label(c) for c in by_key[(3, 70, "float32")][2]] == ["tile_R1_w1_wlate"]
    assert list(by_key)[-1] == (3, 70, "float32")  # a new case goes last


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"rows": 1}, "--candidates must hold a JSON list of cases"),
        ([{"rows": 4, "width": 70, "dtype": "bfloat16"}], "--candidates entry 0: 'configs'"),
        ([{"rows": 4, "width": 70, "dtype": "int8", "configs": []}], "unknown dtype 'int8'"),
        (
            [{"rows": 4, "width": 70, "dtype": "bfloat16", "configs": [{"loop": True}]}],
            "--candidates entry 0: ",
        ),
    ],
)
def test_with_candidates_refuses_a_malformed_file(entries, message):
    with pytest.raises(ValueError, match=message.replace("[", "\\[")):
        sweep.with_candidates([], entries)


def test_sweep_refuses_a_missing_candidates_file_before_touching_a_device(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        sweep.main(["--out", str(tmp_path / "s.json"), "--candidates", str(tmp_path / "no.json")])
    assert info.value.code == 2
    assert "no.json" in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()


def test_sweep_refuses_an_unknown_reference_before_touching_a_device(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        sweep.main(["--out", str(tmp_path / "s.json"), "--references", "copy,nosuch"])
    assert info.value.code == 2
    assert "--references: 'nosuch'" in capsys.readouterr().err


def test_class_sweep_candidates_are_launchable_and_leave_out_the_rule():
    # Every class's candidate is a layout the launcher takes for its shape, listed once, and
    # never the rule's own layout (the sweep times that as `ours`); no shape is held out.
    from kernels.layout import LaunchConfig, choose_config
    from lab import class_sweep

    entries = class_sweep.entries()
    heldout = {(s.rows, s.width) for s in bench.load_shape_sets()["heldout"].shapes}
    assert len(entries) >= 20
    for entry in entries:
        itemsize = bench.DTYPES[entry["dtype"]].itemsize
        rule = choose_config(entry["rows"], entry["width"], itemsize)
        configs = [LaunchConfig(**fields) for fields in entry["configs"]]
        assert configs
        assert rule not in configs
        labels = [sweep.label(config) for config in configs]
        assert len(set(labels)) == len(labels), labels
        for config in configs:
            kernel_constexprs(config, entry["width"], 1, entry["rows"], 16 // itemsize)
        assert (entry["rows"], entry["width"]) not in heldout


def test_precompile_hands_every_candidate_and_the_rule_to_its_processes(monkeypatch):
    # The compile processes get each case's rule layout and every candidate exactly once,
    # spread over the asked number of processes; their failures come back.
    from kernels.layout import LaunchConfig, choose_config

    seen: list[list[tuple]] = []

    class FakePool:
        def __init__(self, jobs):
            self.jobs = jobs

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def map(self, function, slices):
            assert function is sweep._compile_slice
            assert len(slices) == self.jobs
            seen.extend(slices)
            return [[f"failed {len(part)}"] for part in slices]

    class FakeContext:
        Pool = FakePool

    monkeypatch.setattr(sweep.multiprocessing, "get_context", lambda method: FakeContext)
    shape = bench.Shape(4096, 896)
    candidates = [LaunchConfig(False, 1024, 4), LaunchConfig(False, 1024, 8, 2, w_early=True)]
    failures = sweep.precompile([(shape, "bfloat16", candidates, ())], jobs=2)
    items = [item for part in seen for item in part]
    rule = choose_config(4096, 896, 2)
    assert sorted(LaunchConfig(**fields) == rule for *_, fields in items) == [False, False, True]
    assert {(rows, width, dtype) for rows, width, dtype, _ in items} == {(4096, 896, "bfloat16")}
    assert failures == ["failed 2", "failed 1"]


def test_only_candidates_needs_a_candidates_file(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        sweep.main(["--out", str(tmp_path / "s.json"), "--only", "candidates"])
    assert info.value.code == 2
    assert "--only candidates needs --candidates" in capsys.readouterr().err


def test_only_candidates_runs_exactly_the_files_cases(tmp_path, monkeypatch):
    loop = {"loop": True, "block": 2048, "num_warps": 4}
    entries = [
        {"rows": 4096, "width": 5001, "dtype": "float16", "configs": [loop]},
        {"rows": 64, "width": 70, "dtype": "float32", "configs": []},
    ]
    path = tmp_path / "layouts.json"
    path.write_text(json.dumps(entries))
    seen = {}

    class Stop(Exception):
        pass

    def fake_run(rep_ms, budget_s, only, rounds, cases, references):
        seen["cases"] = [f"{c[0].rows}x{c[0].width}:{c[1]}" for c in sweep._selected(only, cases)]
        raise Stop

    monkeypatch.setattr(sweep, "run_sweep", fake_run)
    with pytest.raises(Stop):
        sweep.main(
            ["--out", str(tmp_path / "s.json"), "--candidates", str(path), "--only", "candidates"]
        )
    assert seen["cases"] == ["4096x5001:float16", "64x70:float32"]
