"""Records an inspection leaves behind, Qt-free (numpy, jsonschema, h5py and the oracle only).

``receipts/`` (the JSON + CSV pair: build, format and schema, the export proof, ``verify``),
``sessions/`` (HDF5 sessions: layout, structure scan, seal, snapshots, the session room and
autosave), and beside them ``atomic`` (every file goes through
:func:`inspector.records.atomic.atomic_write`), ``locks`` (one writer per output folder or
session file), ``diff`` (two receipts or sessions compared) and ``provenance`` (whether a
receipt's kernel is the one here).
"""
