"""The sandbox: a user's own kernel, ``FILE.py:FUNCTION``, run in a child process.

``usercode`` (the parent's side: the spec, the child's life and its answers), ``judge`` (the
parent's verdict on a run, from the raw buffers the child hands back), ``usercode_child`` (the
child, ``python -m kernels.sandbox.usercode_child``), ``process`` (a user's code's environment,
folder and stderr), ``reaper`` (the process between the child and the inspector that ends all
the child started and holds it to a memory limit), ``user_ttir`` (a user's file compiled to TTIR in
a child), ``source_file`` (a kernel file read within bounds), ``forkserver (children forked from a
server with torch and triton imported), ``bounded`` (a tool under a time bound), ``domain`` (a
kernel's declared widths, dtypes and strides), ``autotuned`` (``@triton.autotune`` proven one
config at a time) and ``interpreter_probe`` (what this machine's Triton interpreter gets wrong).
The child watches the user's loads and records its launches with the instruments; nothing below
imports the sandbox.
"""
