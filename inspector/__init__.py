"""The inspector floor: Qt window on top of a Qt-free core.

Qt-free (importable on a GPU box without Qt): :mod:`inspector.pipeline` (the whole check),
:mod:`inspector.receipt` (JSON/CSV receipts and their reparse), :mod:`inspector.session`
(HDF5 session files), :mod:`inspector.cli` (the command line). The window modules import Qt;
nothing here imports them, so ``import inspector`` never pulls in Qt.
"""
