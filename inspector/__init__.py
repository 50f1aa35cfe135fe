"""The inspector floor: a Qt window on top of a Qt-free core.

Qt-free (importable on a GPU machine without Qt, enforced by import-linter): the state model
(:mod:`inspector.state`), the jobs the worker runs (:mod:`inspector.jobs`), the whole check
(:mod:`inspector.pipeline`), the report text (:mod:`inspector.report`), the view data
(:mod:`inspector.viewdata`), receipts, sessions, autosave, verify and diff
(:mod:`inspector.records`) and the command line (:mod:`inspector.cli`, which imports the
window only to open it). The window, its widgets and the worker thread import Qt; nothing above
imports them, so ``import inspector`` never pulls in Qt.
"""
