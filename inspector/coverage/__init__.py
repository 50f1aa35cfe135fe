"""The launch-layout coverage map: every configuration the bundled kernel's rule reaches, each
proven through the fixture matrix (:mod:`.proof`), in child processes (:mod:`.child`), with the
kernel lines each one runs under the interpreter (:mod:`.reach`), so a source mutant is proven
only where its statement runs. :mod:`.parsing` is the one ``ast.parse`` the threads of
``mutate`` share. May import ``kernels`` and ``oracle``; Qt-free.
"""
