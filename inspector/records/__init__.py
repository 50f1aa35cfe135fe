"""Records an inspection leaves behind: receipts (JSON + CSV), session files (HDF5), autosaves.

Qt-free: numpy, jsonschema, h5py and the oracle only. :mod:`~inspector.records.receipt` and
:mod:`~inspector.records.session` are the doors; every file goes through
:func:`inspector.records.atomic.atomic_write`.
"""
