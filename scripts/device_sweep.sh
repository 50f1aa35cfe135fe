#!/usr/bin/env bash
# One device call: the launch-layout sweep (kernels.bench_sweep) and what the alternatives
# launch (kernels.bench_alternatives). Carry .whl (liger). Writes $OUT/log.txt,
# $OUT/sweep.json, $OUT/alternatives.json. Knobs: SWEEP_BUDGET_S, SWEEP_ONLY, SWEEP_ROUNDS,
# SWEEP_LAUNCH_COUNTS (e.g. 8,16,64: the launch-cost fit), ALTS_TIMEOUT,
# ALTS_CASES (RxW:dtype,... for bench_alternatives --cases).
set -u
. scripts/device_env.sh
log "sweep"
timeout $((${SWEEP_BUDGET_S:-300} + 90)) python3 -m kernels.bench_sweep --out "$OUT/sweep.json" \
  --budget-s "${SWEEP_BUDGET_S:-300}" --only "${SWEEP_ONLY:-}" --rounds "${SWEEP_ROUNDS:-1}" \
  --launch-counts "${SWEEP_LAUNCH_COUNTS:-}" 2>&1 | grep -v '^\[' | tail -150 | tee -a "$LOG"
log "sweep exit code: ${PIPESTATUS[0]}"
if [ "${ALTS_TIMEOUT:-150}" -gt 0 ]; then
  log "alternatives"
  timeout "${ALTS_TIMEOUT:-150}" python3 -m kernels.bench_alternatives --out "$OUT/alternatives.json" \
    ${ALTS_CASES:+--cases "$ALTS_CASES"} \
    2>&1 | tail -60 | tee -a "$LOG"
  log "alternatives exit code: ${PIPESTATUS[0]}"
fi
log done
