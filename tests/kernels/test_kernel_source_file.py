"""A user's kernel file is read through one door (kernels.sandbox.source_file): a regular file
of at most MAX_KERNEL_SOURCE_BYTES, checked on the opened descriptor before a byte is read.
At the bound it is read, one byte past it is refused; a FIFO, a device and a directory are
refused by type without waiting or reading."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernels.sandbox.source_file import (
    MAX_KERNEL_SOURCE_BYTES,
    KernelFileError,
    read_kernel_source,
)
from kernels.sandbox.usercode import KernelSpecError, parse_kernel_spec


def _sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def test_a_file_at_the_bound_is_read_and_one_byte_past_is_refused(tmp_path) -> None:
    at = _sparse(tmp_path / "at.py", MAX_KERNEL_SOURCE_BYTES)
    assert len(read_kernel_source(at, "--kernel FILE")) == MAX_KERNEL_SOURCE_BYTES
    past = _sparse(tmp_path / "past.py", MAX_KERNEL_SOURCE_BYTES + 1)
    with pytest.raises(KernelFileError) as refused:
        read_kernel_source(past, "--kernel FILE")
    assert str(refused.value) == (
        f"--kernel FILE '{past}' holds {MAX_KERNEL_SOURCE_BYTES + 1} bytes, over the "
        f"{MAX_KERNEL_SOURCE_BYTES}-byte bound of a kernel source (4 MiB)"
    )


def test_a_small_bound_counts_the_bytes_read(tmp_path) -> None:
    kernel = tmp_path / "k.py"
    kernel.write_bytes(b"x" * 11)
    assert read_kernel_source(kernel, "field", limit=11) == b"x" * 11
    with pytest.raises(KernelFileError, match="holds 11 bytes, over the 10-byte bound"):
        read_kernel_source(kernel, "field", limit=10)


@pytest.mark.timeout(20)
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path) -> None:
    fifo = tmp_path / "kernel.py"
    os.mkfifo(fifo)
    with pytest.raises(KernelFileError, match=r"kernel.py' is a FIFO, not a regular file"):
        read_kernel_source(fifo, "the receipt's kernel.source.path")


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("path", "kind"), [("/dev/zero", "a character device"), ("/", "a directory")]
)
def test_devices_and_directories_are_refused_by_type(path, kind) -> None:
    with pytest.raises(KernelFileError) as refused:
        read_kernel_source(path, "--kernel FILE")
    assert str(refused.value).startswith(f"--kernel FILE {path!r} is {kind}, not a regular file")


def test_a_missing_file_names_the_field(tmp_path) -> None:
    with pytest.raises(KernelFileError, match=r"^field '.*none\.py': No such file or directory"):
        read_kernel_source(tmp_path / "none.py", "field")


def test_kernel_names_the_bound_through_parse_kernel_spec(tmp_path) -> None:
    big = _sparse(tmp_path / "big.py", MAX_KERNEL_SOURCE_BYTES + 1)
    with pytest.raises(KernelSpecError, match=r"^--kernel FILE '.*big\.py' holds \d+ bytes, over"):
        parse_kernel_spec(f"{big}:rms_norm")


def test_an_oversized_kernel_is_one_line_and_exit_2_on_the_command_line(tmp_path, capsys):
    from inspector.cli import entry

    big = _sparse(tmp_path / "big.py", MAX_KERNEL_SOURCE_BYTES + 1)
    out = tmp_path / "out"
    assert entry.main(["check", "--kernel", f"{big}:rms_norm", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --kernel FILE '")
    assert f"over the {MAX_KERNEL_SOURCE_BYTES}-byte bound" in err
    assert err.count("\n") == 1
    assert not out.exists()
