"""The window, the only room that imports Qt: the application (:mod:`.app`, :mod:`.app_info`,
:mod:`.theme`), the main window (layout and wiring) and its menus, the worker thread
(:mod:`.worker`), the actions on files, kernels, mutation reports and First divergence (each
given the state and the widgets it touches, never the window), what applies to the bundled
kernel only (:mod:`.kernel_scope`), when the input is analysed (:mod:`.analysis_runs`), the
table models (:mod:`.table_models`), the evidence views' refresh (:mod:`.presenter`) and the
widgets. It draws what ``inspector.model`` holds and runs ``inspector.jobs``; nothing outside
``inspector.cli`` imports it.
"""
