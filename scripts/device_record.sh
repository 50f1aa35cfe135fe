#!/usr/bin/env bash
# The benchmark record on the device machine: the product shape sets and the held-out one
# (SHAPES overrides; the dev set the rule is tuned on is not part of the record),
# three dtypes, every implementation that imports (QuACK when scripts/device_quack.sh installed
# it on this warm machine), device and eager-loop times; then the target check.
#
#   call 1 (carry .whl-quack/a):        bash scripts/device_quack.sh stash a
#   call 2 (carry .whl-quack/c):        bash scripts/device_quack.sh stash c
#   call 3 (carry .whl-quack/b, .whl):  bash scripts/device_quack.sh install && \
#                                       bash scripts/device_record.sh NAME [BUDGET_S]
#
# Writes $OUT/NAME/results.{json,csv}, bench.png, targets.md and $OUT/log.txt. Without QuACK
# installed the record says so in its rows (quack: unavailable, with the reason).
set -u
. scripts/device_env.sh
NAME=${1:-record}
BUDGET_S=${2:-420}
if quack_env=$(bash scripts/device_quack.sh env 2>/dev/null); then
  eval "$quack_env"
  log "quack: installed ($(python3 -c 'import importlib.metadata as m; print(m.version("quack-kernels"))' 2>&1))"
else
  log "quack: not installed on this machine (run scripts/device_quack.sh stash, then install)"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu \
  --format=csv 2>&1 | tee -a "$LOG"
SHAPES=${SHAPES:-launch_bound,tails,llm,narrow,wide,heldout}
log "bench: python3 main.py bench --shapes $SHAPES --out $OUT/$NAME --budget-s $BUDGET_S"
timeout $((BUDGET_S + 120)) python3 main.py bench --shapes "$SHAPES" --out "$OUT/$NAME" \
  --budget-s "$BUDGET_S" \
  2>&1 | tail -5 | tee -a "$LOG"
log "bench exit code: ${PIPESTATUS[0]}"
if [ -f "$OUT/$NAME/results.json" ]; then
  python3 -m lab.targets "$OUT/$NAME/results.json" >"$OUT/$NAME/targets.md" 2>&1
  grep '^Summary' "$OUT/$NAME/targets.md" | tee -a "$LOG"
fi
log done
