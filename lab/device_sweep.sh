#!/usr/bin/env bash
# One device call: the launch-layout sweep (python -m lab.sweep), run from the repository root as
# `bash lab/device_sweep.sh`. Carry .whl (liger). Writes $OUT/log.txt and $OUT/sweep.json.
# Knobs: SWEEP_BUDGET_S, SWEEP_ONLY, SWEEP_ROUNDS, SWEEP_LAUNCH_COUNTS (e.g. 8,16,64: the
# launch-cost fit).
set -u
. scripts/device_env.sh
log "sweep"
timeout $((${SWEEP_BUDGET_S:-300} + 90)) python3 -m lab.sweep --out "$OUT/sweep.json" \
  --budget-s "${SWEEP_BUDGET_S:-300}" --only "${SWEEP_ONLY:-}" --rounds "${SWEEP_ROUNDS:-1}" \
  --launch-counts "${SWEEP_LAUNCH_COUNTS:-}" 2>&1 | grep -v '^\[' | tail -150 | tee -a "$LOG"
log "sweep exit code: ${PIPESTATUS[0]}"
log done
