"""The instruments: what the proof measures of the real kernel, standing on the door below.

``checked`` (a launch inside poison-filled guards, every store and, under the interpreter, every
load out of bounds seen: ``guarded_reads``), ``coverage`` and ``coverage_beyond`` (every kernel
configuration the layout rule reaches, and those only forced or explicit layouts reach),
``invariance`` (the batch-invariance certificate), ``compile_info`` (TTIR to SASS and resources),
``launches`` and ``ttir`` (what a launcher launches, and TTIR compared by meaning), ``past_2_31``
(rows that start past 2**31 elements). They import the door (``kernels.launcher``,
``kernels.layout``, ``kernels.api``) and the ``@triton.jit`` family, never the sandbox or the
benchmark.
"""
