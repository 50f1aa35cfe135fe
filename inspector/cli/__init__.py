"""The command line: one parser and the dispatch (:mod:`.entry`, ``main.py``'s door), a module
per subcommand (:mod:`.check_command`, :mod:`.mutate_command`, :mod:`.coverage_command`,
:mod:`.window_command`, :mod:`.verify_rerun` for ``verify --rerun``) and the checks of where it
writes (:mod:`.guards`). The top room: it may import every other; only the window's command
and ``--info``/``--reset`` reach ``inspector.qt``, and only when asked for.
"""
