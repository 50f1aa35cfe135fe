"""``python -m inspector``: the command line, as ``main.py`` runs it, for an installed package
(the check's timing stage runs the benchmark this way, so it needs no repository around it)."""

from inspector.cli.entry import main

if __name__ == "__main__":
    raise SystemExit(main())
