"""A session file's structure checked before a byte of its data is read.

HDF5 follows what a file declares: an external link opens another file, external storage reads
raw bytes from any path (a FIFO blocks the reader, ``/dev/zero`` never ends), a virtual dataset
pulls its values from other files or a silent fill value, a filter the library does not know
fails deep inside it, and a compressed dataset can declare 10**9 elements in a few KB. None of
that is in a session this tool writes (hard-linked groups and datasets, contiguous or
deflate-compressed, each within the declared limits), so :func:`scan_structure` walks every
link and dataset header and refuses anything else by name, reading headers only.
"""

from __future__ import annotations

from typing import Any

from inspector.records.receipts.format import MAX_CSV_BYTES, MAX_JSON_BYTES
from inspector.records.sessions.hdf5 import Damaged
from oracle.limits import LIMITS

# The largest dataset a session holds: a receipt's JSON text, which lists every input value
# (~25 bytes each, at most max_elements of them); an output of float64 values is 8 bytes each.
MAX_DATASET_BYTES = 32 * LIMITS.max_elements
# All datasets together, and the number of links walked (a session has a few hundred).
MAX_TOTAL_BYTES = 16 * MAX_DATASET_BYTES
MAX_LINKS = 20_000
# One benchmark row's samples (``kernels.bench.report.MAX_ROW_SAMPLES`` float64 values), and
# every row's together (a record of 882 rows holds about 3 MiB).
MAX_BENCH_DATASET_BYTES = 100_000 * 8
MAX_BENCH_BYTES = 64 * 2**20
# HDF5 filter ids a session may use: deflate (gzip), and the shuffle h5py may pair with it.
ALLOWED_FILTERS = {1: "deflate", 2: "shuffle"}
# Bytes a chunk of a chunked dataset holds at least, unless it is the whole dataset: h5py's
# automatic chunks (the writer's texts) never go below half its 8 KiB smallest target.
MIN_CHUNK_BYTES = 4096
# The texts the writer stores (UTF-8 bytes, deflated; a dataset's declared size is the text's
# length): the most each holds. versions/json is a flat object of a dozen names (~200 bytes);
# a receipt's texts are bounded like the files (MAX_JSON_BYTES is past the dataset bound).
VERSIONS_BYTES = 64 * 1024
TEXT_BYTES = {
    "/versions/json": VERSIONS_BYTES,
    "/compile/json": MAX_DATASET_BYTES,
    "json": min(MAX_JSON_BYTES, MAX_DATASET_BYTES),
    "csv": MAX_CSV_BYTES,
}


def scan_structure(root: Any) -> None:
    """Walk every link of the open file ``root`` (h5py) and every dataset's header.

    Raises:
        Damaged: a soft or external link, a virtual dataset, external storage, a filter other
            than deflate/shuffle, a dataset or a total over the limits, or too many links.
    """
    import h5py

    budget = {"links": 0, "bytes": 0, "bench": 0}
    pending = [root]
    while pending:
        group = pending.pop()
        for name in group:
            budget["links"] += 1
            if budget["links"] > MAX_LINKS:
                raise Damaged(f"more than {MAX_LINKS} links: not a session this tool writes")
            where = f"{group.name.rstrip('/')}/{name}"
            link = group.get(name, getlink=True)
            if isinstance(link, h5py.ExternalLink):
                raise Damaged(f"{where} is an external link (to {link.filename!r}); refused")
            if not isinstance(link, h5py.HardLink):
                raise Damaged(f"{where} is a {type(link).__name__}; sessions hold hard links only")
            item = group[name]
            if isinstance(item, h5py.Group):
                pending.append(item)
            elif isinstance(item, h5py.Dataset):
                _check_dataset(item, where, budget)
            else:
                raise Damaged(f"{where} is a {type(item).__name__}; not a group or dataset")


def _check_dataset(dataset: Any, where: str, budget: dict[str, int]) -> None:
    from h5py import h5d

    if dataset.is_virtual:
        raise Damaged(f"{where} is a virtual dataset (its values live elsewhere); refused")
    if dataset.external:
        raise Damaged(f"{where} has external storage ({dataset.external[0][0]!r}); refused")
    plist = dataset.id.get_create_plist()
    for index in range(plist.get_nfilters()):
        code = plist.get_filter(index)[0]
        if code not in ALLOWED_FILTERS:
            raise Damaged(f"{where} uses HDF5 filter {code}; sessions use deflate only")
    if plist.fill_value_defined() == h5d.FILL_VALUE_USER_DEFINED:
        # Read from a fill value, unwritten elements cost nothing in the file: 10**5 variable
        # strings of 10 KB each in a few KB. Sessions this tool writes never set one.
        raise Damaged(f"{where} sets a fill value; sessions write every element")
    size = 1
    for extent in dataset.shape or ():
        size *= int(extent)
    declared = size * max(1, int(dataset.dtype.itemsize))
    if declared > MAX_DATASET_BYTES:
        raise Damaged(
            f"{where} declares {declared} bytes ({dataset.shape} x {dataset.dtype}), more than "
            f"{MAX_DATASET_BYTES}"
        )
    if declared and not dataset.id.get_storage_size():
        raise Damaged(f"{where} declares {declared} bytes and stores none (never written)")
    _check_chunks(dataset, where, declared)
    _check_text(dataset, where, declared)
    if where.startswith("/bench/"):
        budget["bench"] += declared
        if declared > MAX_BENCH_DATASET_BYTES or budget["bench"] > MAX_BENCH_BYTES:
            raise Damaged(
                f"{where} declares {declared} bytes; a benchmark row's samples are at most "
                f"{MAX_BENCH_DATASET_BYTES}, all rows' {MAX_BENCH_BYTES}"
            )
    budget["bytes"] += declared
    if budget["bytes"] > MAX_TOTAL_BYTES:
        raise Damaged(f"the datasets declare more than {MAX_TOTAL_BYTES} bytes in all")


def _check_chunks(dataset: Any, where: str, declared: int) -> None:
    """Refuse more chunks than a dataset of ``declared`` bytes has in h5py's chunking: each
    chunk costs HDF5 an index entry and a read, so 10**6 chunks of one element cost GBs. The
    count is the chunk grid of the header (an upper bound of the chunks stored)."""
    if dataset.chunks is None:
        return
    grid = 1
    for extent, chunk in zip(dataset.shape, dataset.chunks, strict=False):
        grid *= -(-int(extent) // max(1, int(chunk)))
    most = max(1, -(-declared // MIN_CHUNK_BYTES))
    if grid > most:
        raise Damaged(
            f"{where} is stored in {grid} chunks ({dataset.chunks} of {dataset.shape}); a "
            f"dataset of {declared} bytes has at most {most} (chunks of {MIN_CHUNK_BYTES} "
            "bytes or more)"
        )


def text_bound(where: str) -> int | None:
    """The most bytes the text at ``where`` holds (:data:`TEXT_BYTES`), None when ``where`` is
    not one of the writer's texts."""
    if where in TEXT_BYTES:
        return TEXT_BYTES[where]
    parts = where.strip("/").split("/")
    receipt = len(parts) == 2 or (len(parts) == 4 and parts[1] == "history")
    if parts[0] == "receipts" and parts[-1] in ("json", "csv") and receipt:
        return TEXT_BYTES[parts[-1]]
    return None


def _check_text(dataset: Any, where: str, declared: int) -> None:
    """Refuse a text stored as anything but UTF-8 bytes (a variable-length string's size is
    not in its header) or longer than :func:`text_bound`: the bound is read from the header,
    and the JSON parser holds the text to the same figure."""
    most = text_bound(where)
    if most is None:
        return
    if dataset.dtype != "uint8" or len(dataset.shape or ()) != 1:
        raise Damaged(
            f"{where} is {dataset.dtype} {dataset.shape}; sessions store texts as UTF-8 bytes"
        )
    if declared > most:
        raise Damaged(f"{where} holds {declared} bytes of text, more than {most}")
