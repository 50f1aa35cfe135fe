"""RMSNorm Kernel Inspector: ``python main.py`` opens the window; ``check``, ``bench`` and
``verify`` run headless (see ``python main.py --help`` and :mod:`inspector.cli.entry`).
"""

from __future__ import annotations

from inspector.cli.entry import main

if __name__ == "__main__":
    raise SystemExit(main())
