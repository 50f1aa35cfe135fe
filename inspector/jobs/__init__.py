"""The window's long work, Qt-free: each job a plain generator of progress and one result
(:mod:`.tasks`), the heavy ones in a warm child process (:mod:`.host`, whose process is
:mod:`.child`). The Qt worker thread only iterates them. May import every room below it
(``model``, ``mutate``, ``records``, ``check``, ``coverage``), ``kernels`` and ``oracle``.
"""
