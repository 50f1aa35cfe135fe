"""compiler_output: every stage of the compiled kernel, on this machine, for an explicit target."""

from __future__ import annotations

import ast
import hashlib
import inspect
import re
import textwrap
from pathlib import Path

import pytest
import torch
import triton

import kernels
from kernels import jit
from kernels.instruments import compile_info


@pytest.fixture(scope="module")
def bf16_4096() -> kernels.CompileInfo:
    return kernels.compiler_output("bfloat16", 4096, "sm_90")


def test_compiler_output_has_every_stage_for_sm90(bf16_4096) -> None:
    info = bf16_4096
    assert "tt.func" in info.ttir
    assert "rms_norm_tile_kernel" in info.ttir
    assert (info.kernel, info.path, info.rows_per_program) == ("rms_norm_tile_kernel", "one_row", 1)
    assert "ttg." in info.ttgir
    assert "define" in info.llir
    assert ".target sm_90a" in info.ptx
    assert "ld.global" in info.ptx
    assert "st.global" in info.ptx
    assert info.target == "sm_90"
    assert info.num_warps == 8
    assert info.block == 4096
    assert info.num_stages >= 1
    assert info.shared_bytes >= 0
    assert info.triton_version == triton.__version__


def test_compiler_output_names_the_kernel_files_from_the_source_root(bf16_4096) -> None:
    from kernels.env import SOURCE_ROOT

    for text in (bf16_4096.ttir, bf16_4096.ttgir, bf16_4096.llir, bf16_4096.ptx):
        assert str(SOURCE_ROOT) not in text
        assert not re.search(r'"/[^"\n]*kernels/jit', text)  # nor another tree's (Triton's cache)
        assert not re.search(r'"/[^"\n]*-packages/', text)  # nor an installed package's
    assert '"kernels/jit/tile.py"' in bf16_4096.ttir


def test_sass_and_registers_when_the_tools_exist(bf16_4096) -> None:
    if compile_info._tool("cuobjdump") is None:
        pytest.skip("no cuobjdump in triton's package or on PATH")
    assert "MUFU.RSQ" in bf16_4096.sass  # the reciprocal square root, in hardware
    assert bf16_4096.registers is not None
    assert bf16_4096.registers > 0
    assert bf16_4096.spills == 0


def _jit_functions_in_source_order() -> list[str]:
    """Names of the functions decorated ``@triton.jit`` in the kernel modules (jit/parts.py,
    jit/tile.py, jit/loop.py, the order of KERNEL_FUNCTIONS), each in file order."""
    names = []
    for module in ("jit/parts.py", "jit/tile.py", "jit/loop.py"):
        tree = ast.parse((Path(jit.__file__).parent.parent / module).read_text(encoding="utf-8"))
        names += [
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef)
            and any(ast.unparse(decorator) == "triton.jit" for decorator in node.decorator_list)
        ]
    return names


def test_source_hash_covers_every_function_of_the_family(bf16_4096) -> None:
    family = jit.KERNEL_FUNCTIONS
    names = [getattr(fn, "fn", fn).__name__ for fn in family]
    # Every @triton.jit function of the module, once, in its order: a helper the kernels call
    # but the hash leaves out would let its edits go unnoticed.
    assert names == _jit_functions_in_source_order()
    sources = dict(
        zip(
            names,
            [textwrap.dedent(inspect.getsource(getattr(fn, "fn", fn))) for fn in family],
            strict=True,
        )
    )
    for name, source in sources.items():
        assert f"def {name}(" in source
    assert "_rrms(" in sources["rms_norm_tile_kernel"]
    assert "_rrms(" in sources["_chunked_row"]
    assert "_chunked_row(" in sources["rms_norm_loop_kernel"]
    assert "_peeled_loop_row(" in sources["rms_norm_loop_kernel"]
    assert "_peeled_store_chunk(" in sources["_peeled_loop_row"]
    assert "_peeled_row(" in sources["rms_norm_tile_kernel"]
    assert "_loop_square_chunk(" in sources["_chunked_row"]
    assert "_loop_store_chunk(" in sources["_chunked_row"]
    assert "_lane_mask(" in sources["_loop_square_chunk"]
    assert "_lane_mask(" in sources["_loop_store_chunk"]
    joined = "\n\n".join(sources.values())
    assert bf16_4096.source_sha256 == hashlib.sha256(joined.encode()).hexdigest()


@pytest.mark.parametrize(
    ("dtype", "width", "rows", "path", "kernel", "rows_per_program"),
    [
        ("bfloat16", 128, 65536, "auto", "rms_norm_tile_kernel", 16),
        ("float32", 65536, 2048, "auto", "rms_norm_loop_kernel", 1),
        ("float32", 70, 3, "multi_row", "rms_norm_tile_kernel", 2),
        ("float16", 70, 3, "column_loop", "rms_norm_loop_kernel", 1),
    ],
)
def test_compiler_output_follows_the_launch_layout(
    dtype: str, width: int, rows: int, path: str, kernel: str, rows_per_program: int
) -> None:
    info = kernels.compiler_output(dtype, width, "sm_90", rows=rows, path=path)
    config = compile_info.launch_config_for(dtype, width, rows, path)
    assert (info.kernel, info.path, info.rows_per_program) == (
        kernel,
        config.path,
        rows_per_program,
    )
    assert (info.block, info.num_warps) == (config.block, config.num_warps)
    assert "ld.global" in info.ptx
    assert info.spills in (None, 0)


def test_vector_hint_gives_16_byte_loads_where_width_is_not_a_multiple_of_16() -> None:
    # width 1000 bf16: VEC = 8 divides width and strides, so loads are 16 bytes wide.
    # (Whatever cache hints the layout adds: ld.global.L1::evict_first.v4.b32 is 16 bytes too.)
    from lab.ptx import access_widths

    info = kernels.compiler_output("bfloat16", 1000, "sm_90", rows=4096)
    assert access_widths(info.ptx, "ld") == ["v4.b32"]


def test_results_are_cached_per_signature(bf16_4096) -> None:
    assert kernels.compiler_output("bfloat16", 4096, "sm_90") is bf16_4096


def test_width_is_a_runtime_argument_not_a_constant() -> None:
    # Widths 72 and 104 share BLOCK=128, VEC=8 and the same specialization (width / VEC = 9 and
    # 13, neither divisible by 16): one binary serves both.
    narrow = kernels.compiler_output("float16", 72, "sm_90")
    wider = kernels.compiler_output("float16", 104, "sm_90")
    assert narrow.ptx == wider.ptx
    assert "width_v: i32" in narrow.signature
    assert "BLOCK: constexpr" in narrow.signature
    assert "VEC: constexpr" in narrow.signature


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        pytest.param(
            {"target": "gfx90a"}, ValueError, r"target must look like 'sm_90'", id="target"
        ),
        pytest.param({"dtype": "int8"}, TypeError, r"dtype must be one of", id="dtype"),
        pytest.param({"width": 0}, ValueError, r"width must be an int in \[1, 65536\]", id="width"),
        pytest.param({"mutant": "nope"}, ValueError, r"mutant must be None or one of", id="mutant"),
    ],
)
def test_compiler_output_rejects(kwargs: dict, error: type[Exception], pattern: str) -> None:
    arguments = {"dtype": "float32", "width": 64, "target": "sm_90", **kwargs}
    with pytest.raises(error, match=pattern):
        kernels.compiler_output(**arguments)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_no_target_without_cuda_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"pass an explicit target such as 'sm_90'"):
        kernels.compiler_output("float32", 64, None)
