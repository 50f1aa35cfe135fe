#!/bin/bash
# The direct door for unaligned pointers (lab/unaligned_door.patch applied to a copy of this
# tree): a plan keeps Triton's compiled kernel per pattern of x, weight and y on or off a
# 16-byte boundary (kernels.plans.misalignment), so an offset batch's eager call skips
# Triton's dispatch after its first launch (66-99 us per call on an H100, docs/gpu_check/
# invariant/repack_cost.json, against 11-25 us packed). One device call, under the device tool:
#   bash lab/unaligned_door_check.sh       (about 3 minutes on a cold Triton cache)
# Writes under $OUT: log.txt, door_tests.txt (the plan tests compiled, the gpu-marked
# test_each_pattern_of_alignment_gets_its_own_door among them) and repack_door.json
# (scripts/measure_repack.py patched: device and eager per-call time of packed, padded and
# offset batches; compare its offset rows with repack_cost.json's).
set -u
. scripts/device_env.sh
export OUT
patched_copy /tmp/door lab/unaligned_door.patch || exit 1
cd /tmp/door
export PYTHONPATH=".:${PYTHONPATH:-}" TRITON_CACHE_DIR=/tmp/tc_door
log "the plan tests, compiled"
timeout 240 $PYTEST tests/kernels/test_kernel_plans_gpu.py tests/kernels/test_kernel_plans.py \
  >"$OUT/door_tests.txt" 2>&1
echo "exit code: $?" >>"$OUT/door_tests.txt"
grep -v '^SKIPPED' "$OUT/door_tests.txt" | tail -8 | tee -a "$LOG"
log "packed, padded and offset batches' per-call time, patched"
timeout 240 python3 scripts/measure_repack.py "$OUT/repack_door.json" 2>&1 | tail -2 | tee -a "$LOG"
python3 -c "
import json, os
d = json.load(open(os.path.join(os.environ['OUT'], 'repack_door.json')))
for r in d['records']:
    if not r[4]:  # the default's rows
        print(*r)" 2>&1 | tee -a "$LOG"
log done
