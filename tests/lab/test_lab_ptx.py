"""lab.ptx reads the vector width of global loads and stores out of PTX text (CPU only)."""

from __future__ import annotations

from lab.ptx import access_widths

PTX = """
    ld.global.L1::evict_last.v4.b32 {%r1, %r2, %r3, %r4}, [%rd1];
    ld.global.b16 %rs1, [%rd2];
    st.global.cs.v4.b16 [%rd3], {%rs2, %rs3, %rs4, %rs5};
    st.global.v2.f32 [%rd4], {%f1, %f2};
"""


def test_access_widths_split_loads_and_stores():
    assert access_widths(PTX, "ld") == ["v1.b16", "v4.b32"]
    assert access_widths(PTX, "st") == ["v2.b32", "v4.b16"]
    assert access_widths("", "ld") == []
