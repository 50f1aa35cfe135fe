"""The window, the only room that imports Qt: the application (:mod:`.app`, :mod:`.app_info`,
:mod:`.theme`), the main window and its menus, the worker thread (:mod:`.worker`), the actions
on files, kernels and mutation reports, the table models (:mod:`.table_models`), the evidence
views' refresh (:mod:`.presenter`) and the widgets. It draws what ``inspector.model`` holds and
runs ``inspector.jobs``; nothing outside ``inspector.cli`` imports it.
"""
