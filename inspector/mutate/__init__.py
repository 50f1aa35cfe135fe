"""Source mutants of a kernel file (``main.py mutate``), not the built-in mutant toggles: the
sites and operators (:mod:`.sites`), each mutant's run (:mod:`.source_mutants`), the unmutated
kernel's run first (:mod:`.baseline_run`), mutants proven unable to act (:mod:`.equivalence`)
or proven on the coverage map and past the fixtures (:mod:`.beyond`), one whole run as
``mutation.json`` holds it (:mod:`.campaign`) and a saved report read back for the window
(:mod:`.saved_report`).
May import ``inspector.records``, ``inspector.check``, ``inspector.coverage``, ``kernels`` and
``oracle``; Qt-free.
"""
