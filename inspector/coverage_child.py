"""``python -m inspector.coverage_child MAP.json [--mutant NAME]``: the coverage map's proof in
a process of its own, for ``mutate``: the ``kernels`` package first on ``PYTHONPATH`` (a
mutant's copy) is proven configuration by configuration in the map's order until one proof
fails. Prints one JSON line: ``{"outcome": "caught" | "passed", "configuration", "fixture",
"detail", "proofs"}`` (``caught``: a proof failed, named; ``passed``: every proof held).
``--mutant NAME`` proves that hand-made kernel mutant instead (``caught`` is then what the
check expects of it).

Qt-free. The map file is a list of ``{"configuration", "witness"}`` entries
(:func:`write_map`), walked once by the parent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def write_map(path: Path, found: dict[Any, Any], order: list[Any] | None = None) -> None:
    """Write ``found`` (``kernels.coverage.reachable()``) as the child's map, in ``order``."""
    keys = order if order is not None else list(found)
    entries = [{"configuration": c.to_json(), "witness": found[c].to_json()} for c in keys]
    path.write_text(json.dumps(entries))


def _read_map(path: Path) -> list[tuple[Any, Any]]:
    from kernels.coverage import Configuration, Witness
    from kernels.layout import LaunchConfig

    entries = []
    for entry in json.loads(path.read_text()):
        witness = dict(entry["witness"])
        witness["config"] = LaunchConfig(**witness["config"])
        entries.append((Configuration.from_json(entry["configuration"]), Witness(**witness)))
    return entries


def main(argv: list[str]) -> int:
    from inspector.coverage_proof import prove

    if len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--mutant"):
        print("usage: python -m inspector.coverage_child MAP.json [--mutant NAME]", file=sys.stderr)
        return 2
    mutant = argv[2] if len(argv) == 3 else None
    entries = _read_map(Path(argv[0]))
    for count, (configuration, witness) in enumerate(entries, start=1):
        proof = prove(configuration, witness, mutant=mutant)
        failed = [o for o in proof.outcomes if not o.passed]
        if failed:
            result = {"outcome": "caught", "configuration": configuration.label,
                      "fixture": failed[0].fixture, "detail": failed[0].detail[:400],
                      "proofs": count}  # fmt: skip
            break
    else:
        result = {"outcome": "passed", "proofs": len(entries)}
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
