"""What the window shows, Qt-free: the inspection's state with its change events
(:mod:`.state`), the analysis of an input (:mod:`.analysis`), what each view draws
(:mod:`.viewdata`, :mod:`.reduction_steps`, :mod:`.kernel_view`, :mod:`.oob_view`,
:mod:`.cell_summary`, :mod:`.row_verdicts`, :mod:`.mutant_effect`, :mod:`.check_log`,
:mod:`.record_text`), the benchmark rows (:mod:`.bench_rows`), which kernel is loaded
(:mod:`.kernel_choice`), the one record every evidence view is drawn from (:mod:`.record`) and
which run each view's numbers come from (:mod:`.evidence`). May import ``inspector.mutate``,
``inspector.records``, ``inspector.check``, ``inspector.coverage``, ``kernels`` and ``oracle``.
"""
