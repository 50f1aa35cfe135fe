"""The coverage tab: the map as a grid (layout x dtype), each cell's state in text, colour and
tooltip, the caption naming the records, and a saved receipt's map only when it is of the
loaded kernel."""

from __future__ import annotations

import json
from types import SimpleNamespace

from inspector.qt.widgets.coverage_view import CoverageView, saved_coverage


def _section() -> dict:
    def entry(label: str, cpu: bool, gpu: bool) -> dict:
        return {"label": label, "dtype": label.split("/")[0], "proven_cpu": cpu, "proven_gpu": gpu}

    entries = [
        entry("float32/tile/rows1/vec4/w_early", True, True),
        entry("bfloat16/tile/rows1/vec4/w_early", True, False),
        entry("bfloat16/loop/rows1/vec8/even/stream", False, True),
        entry("float16/loop/rows1/vec8/even/stream", False, False),
    ]
    return {"configurations": entries, "proven_cpu": 2, "proven_gpu": 2,
            "unproven": [entries[3]["label"]],
            "sources": {"cpu": "resources/coverage/cpu.json: cpu",
                        "gpu": "resources/coverage/h200.json: H200"}}  # fmt: skip


def test_the_grid_has_a_row_per_layout_and_a_cell_per_dtype(qtbot) -> None:
    view = CoverageView()
    qtbot.addWidget(view)
    view.set_section(_section())
    assert view.table.rowCount() == 2
    loop = "loop/rows1/vec8/even/stream"
    assert view.cell_text("tile/rows1/vec4/w_early", "float32") == "✓ CPU + GPU"
    assert view.cell_text("tile/rows1/vec4/w_early", "bfloat16") == "◐ CPU only"
    assert view.cell_text("tile/rows1/vec4/w_early", "float16") == "· not reached"
    assert view.cell_text(loop, "bfloat16") == "◑ GPU only"
    assert view.cell_text(loop, "float16") == "✕ not proven"
    assert view.cell_text(loop, "float32") == "· not reached"
    item = view.table.item(0, 1)  # rows sorted: the loop first; columns float32, float16, ...
    assert item.toolTip() == "float16/" + loop + ": not proven"
    caption = view.caption.text()
    assert "4 launch configurations" in caption
    assert "1 NOT proven." in caption
    assert "resources/coverage/h200.json: H200" in caption


def test_no_map_says_why(qtbot) -> None:
    view = CoverageView()
    qtbot.addWidget(view)
    view.set_section(None)
    assert view.caption.text() == "No coverage map: no check run yet."
    view.set_section({"absent": "a user's kernel: the map is of the bundled layout rule"})
    assert "a user's kernel" in view.caption.text()
    assert view.table.rowCount() == 0


def test_a_saved_receipts_map_is_shown_only_when_it_is_well_formed_and_of_this_kernel() -> None:
    current = SimpleNamespace(stale=False)
    section = _section()
    session = SimpleNamespace(receipt_json=json.dumps({"coverage": section}))
    assert saved_coverage(session, current) == section
    assert "another kernel" in saved_coverage(session, SimpleNamespace(stale=True))["absent"]
    assert "no receipt" in saved_coverage(SimpleNamespace(receipt_json=None), None)["absent"]
    old = SimpleNamespace(receipt_json=json.dumps({"schema_version": 2}))
    assert "predates" in saved_coverage(old, current)["absent"]
    bad = json.loads(session.receipt_json)
    bad["coverage"]["configurations"][0]["proven_cpu"] = "yes"
    forged = SimpleNamespace(receipt_json=json.dumps(bad))
    assert "malformed" in saved_coverage(forged, current)["absent"]
    broken = SimpleNamespace(receipt_json="[" * 100000)
    assert "could not be read" in saved_coverage(broken, current)["absent"]


def test_the_window_has_a_coverage_tab(window) -> None:
    titles = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    assert "Coverage" in titles
    assert window.tabs.widget(titles.index("Coverage")) is window.coverage_view
