"""The proof of one input, layer by layer: the oracle's two paths, the fixture matrix, the real
kernel (bundled or a user's, in its child process) against both references, then the stages
beside it (compiler output, batch invariance, compute-sanitizer, the coverage map, timing) and
the report's sentences.

Owns: :mod:`.pipeline` (the check as steps and its verdict), :mod:`.results` (what a check is
asked and gives back), :mod:`.findings` (what one kernel run shows), :mod:`.stages`,
:mod:`.timing_stage`, :mod:`.sanitize_child`, :mod:`.user_kernel` (a user's kernel as an
implementation) and :mod:`.report` (the words). May import ``inspector.coverage``, ``kernels``
and ``oracle``; Qt-free.
"""
