#!/bin/bash
# The batch-invariant mode with exact tiles (lab/exact_sum.patch applied to a copy of this
# tree): each tile's row sum in a 64-bit fixed point (LaunchConfig.exact, the tile kernel's
# EXACT), so the mode's tiles take the default's layout (peeled, split, several rows per program)
# instead of unpeeled whole tiles, and no layout or place in the batch moves a bit. One device
# call, under the device tool:
#   bash lab/exact_sum_ab.sh                 tests, certificates and cost (about 8 minutes cold)
#   PART=tests|certificates|cost bash lab/exact_sum_ab.sh     one of the three
# Writes under $OUT: log.txt, tests.txt, invariance.json (the patched mode's certificates: the
# coverage map's mode witnesses and the odd tile widths) and cost/results.json (ours and
# ours_invariant, patched, on the launch-bound, tails and held-out sets: cost_vs_ours per row).
# What the patch changes: its own header (git apply --stat lab/exact_sum.patch).
set -u
. scripts/device_env.sh
export OUT
patched_copy /tmp/exact lab/exact_sum.patch || exit 1
cd /tmp/exact
export PYTHONPATH=".:${PYTHONPATH:-}" TRITON_CACHE_DIR=/tmp/tc_exact
log env
python3 -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())' 2>&1 | tee -a "$LOG"
if [ "${PART:-all}" = all ] || [ "$PART" = tests ]; then
  log "the exact sum's and the mode's tests, compiled"
  timeout 200 $PYTEST tests/kernels/test_kernel_exact_sum.py tests/kernels/test_kernel_batch_invariant.py \
    tests/kernels/test_kernel_invariant_canonical.py tests/kernels/test_kernel_ordered_peel.py \
    tests/kernels/test_kernel_plans.py >"$OUT/tests.txt" 2>&1
  echo "exit code: $?" >>"$OUT/tests.txt"
  grep -v '^SKIPPED' "$OUT/tests.txt" | tail -8 | tee -a "$LOG"
fi
if [ "${PART:-all}" = all ] || [ "$PART" = certificates ]; then
  log "certificates of the patched mode"
  timeout 240 python3 scripts/measure_invariance.py --out "$OUT" --rows 64 --budget-s 180 --map \
    --widths 70:bfloat16,70:float32,999:bfloat16,1539:float16,2051:float16,2053:bfloat16,3077:float32,4103:bfloat16,4103:float32,12288:bfloat16 \
    2>&1 | tail -2 | tee -a "$LOG"
  python3 -c "
import json, os
d = json.load(open(os.path.join(os.environ['OUT'], 'invariance.json')))
c = d['cases']
print(len(c), 'cases; the mode bit-identical in', sum(x['batch_invariant']['bit_identical'] for x in c))" 2>&1 | tee -a "$LOG"
fi
if [ "${PART:-all}" = all ] || [ "$PART" = cost ]; then
  log "cost: ours and ours_invariant, patched"
  timeout 260 python3 main.py bench --shapes launch_bound,tails,heldout --impls ours,ours_invariant \
    --out "$OUT/cost" --budget-s 200 2>&1 | tail -2 | tee -a "$LOG"
  python3 scripts/summarize_invariant.py --bench "$OUT/cost/results.json" 2>&1 | sed -n 1,5p \
    | tee -a "$LOG"
fi
log done
