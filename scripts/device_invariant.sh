#!/usr/bin/env bash
# One device call: the batch-invariant mode on CUDA (issue 42). The gpu-marked tests and the
# sandbox's (compiled there), the invariance tests compiled, `check --device cuda` by default
# and with --batch-invariant, and the certificates of every coverage-map configuration the mode
# launches plus the model widths (scripts/measure_invariance.py --map).
#
#   bash scripts/device_invariant.sh        (carry .whl: jsonschema + deps)
#   PART=tests bash scripts/device_invariant.sh   (the tests and checks only)
#   PART=certificates bash scripts/device_invariant.sh   (the certificates only)
#
# Writes under $OUT (at most 8 files come back): log.txt, tests.txt, invariance.json and
# checks.tar (each check's receipts and check_output.txt, its last line the exit code).
set -u
. scripts/device_env.sh
export OUT PYTHONPATH=".:${PYTHONPATH:-}"
log env
python3 -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())' 2>&1 | tee -a "$LOG"

if [ "${PART:-all}" != certificates ]; then
log "sandbox tests, the invariance tests and the layout paths, compiled"
timeout 240 $PYTEST tests/kernels/test_kernel_sandbox_judge.py tests/kernels/test_kernel_usercode.py \
  tests/kernels/test_kernel_batch_invariant.py tests/kernels/test_kernel_invariance.py \
  tests/kernels/test_kernel_paths.py >"$OUT/tests.txt" 2>&1
echo "exit code: $?" >>"$OUT/tests.txt"
grep -v '^SKIPPED' "$OUT/tests.txt" | tail -15 | tee -a "$LOG"

# The checks compile on their own CPU cores beside the gpu-marked tests (a cold Triton cache
# made the tests alone run past 200 s on an H100 and left no time for the checks after them).
log "checks on CUDA, beside the gpu-marked tests"
check bundled --fixture non_power_of_two_tail &
check bundled_invariant --batch-invariant --fixture non_power_of_two_tail &
check tutorial --kernel resources/kernels/tutorial.py:rms_norm --fixture non_power_of_two_tail &
XDIST=""
python3 -c 'import xdist' 2>/dev/null && XDIST="-n 6"
log "gpu-marked tests ${XDIST}"
timeout 240 $PYTEST tests/kernels tests/inspector_core/test_sanitizer_stage.py \
  tests/inspector_core/test_timing_stage.py -m gpu $XDIST >>"$OUT/tests.txt" 2>&1
echo "exit code: $?" >>"$OUT/tests.txt"
grep -v '^SKIPPED' "$OUT/tests.txt" | tail -8 | tee -a "$LOG"
wait
for name in bundled bundled_invariant tutorial; do
  log "$name:"; grep -i "invarian\|verdict\|PASS\|FAIL" "$OUT/$name/check_output.txt" | tail -4 | tee -a "$LOG"
  tail -1 "$OUT/$name/check_output.txt" | tee -a "$LOG"
done
tar -cf "$OUT/checks.tar" -C "$OUT" bundled bundled_invariant tutorial && rm -rf "$OUT/bundled" "$OUT/bundled_invariant" "$OUT/tutorial"
fi
[ "${PART:-all}" = tests ] && { log done; exit 0; }

log "certificates: model widths and every map configuration the mode launches"
# 108 cases (36 model widths x dtypes, 72 map configurations): 102 took 240 s on an H100 with a
# cold Triton cache, so the default budget leaves room for all of them.
timeout "${INVARIANCE_TIMEOUT:-420}" python3 scripts/measure_invariance.py --out "$OUT" --rows 64 \
  --budget-s "${INVARIANCE_BUDGET:-340}" --map 2>&1 | tail -3 | tee -a "$LOG"
python3 - <<'PY' 2>&1 | tee -a "$LOG"
import json, os
d = json.load(open(os.path.join(os.environ["OUT"], "invariance.json")))
cases = d["cases"]
mode_ok = sum(c["batch_invariant"]["bit_identical"] for c in cases)
default_ok = sum(c["default"]["bit_identical"] for c in cases)
print(f"{len(cases)} cases ({d.get('stopped', 'all')}): mode bit-identical {mode_ok}, default {default_ok}")
PY
log done
