#!/usr/bin/env bash
# One device call (H200): the edited kernel's compiled coverage record, the gpu-marked kernel
# tests beside it, then `main.py check --device cuda` on the bundled kernel (with that record in
# place), the tutorial kernel and the two planted precision bugs, two checks at a time.
#
#   bash scripts/device_precision.sh        (carry .whl: jsonschema + its dependencies)
#
# Writes under $OUT: log.txt, h200.json + coverage.txt, gpu_tests.txt, and per kernel
# <name>/receipt.{json,csv} + <name>/check_output.txt (its last line: the exit code).
set -u
. scripts/device_env.sh

log env
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv 2>&1 | tee -a "$LOG"
python3 -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())' 2>&1 | tee -a "$LOG"

log "coverage: python3 main.py coverage --device cuda --out $OUT/h200.json (gpu tests beside it)"
( timeout "${COVERAGE_TIMEOUT:-280}" python3 main.py coverage --device cuda --out "$OUT/h200.json" \
    >"$OUT/coverage.txt" 2>&1; echo "coverage exit code: $?" >>"$OUT/coverage.txt" ) &
COVERAGE_PID=$!
# The user kernels' checks do not read the coverage record: beside the walk. The gpu tests too,
# unless SKIP_TESTS=1 (a short device budget).
log "checks beside it: tutorial, bug_half_accumulation, bug_eps_outside_root"
check tutorial --kernel resources/kernels/tutorial.py:rms_norm &
check bug_half_accumulation --kernel resources/kernels/bug_half_accumulation.py:rms_norm &
check bug_eps_outside_root --kernel resources/kernels/bug_eps_outside_root.py:rms_norm &
if [ "${SKIP_TESTS:-0}" != "1" ]; then
  XDIST=""
  python3 -c 'import xdist' 2>/dev/null && XDIST="-n 8"
  timeout "${TESTS_TIMEOUT:-280}" python3 -m pytest -p no:cacheprovider -p no:benchmark \
    -o addopts=-ra -W ignore::pytest.PytestConfigWarning --strict-markers -q tests/kernels \
    -m gpu $XDIST >"$OUT/gpu_tests.txt" 2>&1
  echo "gpu tests exit code: $?" >>"$OUT/gpu_tests.txt"
  grep -v '^SKIPPED' "$OUT/gpu_tests.txt" | tail -8 | tee -a "$LOG"
fi
wait
grep -v '^\[' "$OUT/coverage.txt" | tail -5 | tee -a "$LOG"
if grep -q "coverage exit code: 0" "$OUT/coverage.txt"; then
  cp "$OUT/h200.json" resources/coverage/h200.json  # the check's receipt reads the record of this kernel
fi
log "check: bundled (with the new record)"
check bundled
for name in bundled tutorial bug_half_accumulation bug_eps_outside_root; do
  log "$name:"
  grep -E "^(fixtures|kernel vs|coverage|FAIL|PASS|exit code)|SURVIVED|not judged" "$OUT/$name/check_output.txt" \
    | cut -c1-400 | tee -a "$LOG"
done
log done
