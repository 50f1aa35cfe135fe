#!/usr/bin/env bash
# One device call (H200): the gpu-marked kernel tests, `main.py check --device cuda`, and the
# benchmark record, each under its own timeout so a stuck stage leaves the others' output.
#
#   bash scripts/device_check_bench.sh        (carry .whl: jsonschema + deps, pytest-timeout, liger)
#
# Writes under $OUT: log.txt (everything), check/receipt.{json,csv}, check/check_output.txt,
# gpu_tests.txt, full/results.{json,csv}, full/bench.png. Knobs: CHECK_TIMEOUT, TESTS_TIMEOUT,
# BENCH_BUDGET_S (0: no benchmark, the check and the gpu tests only), GPU_TESTS (the test files
# whose gpu-marked tests run; by default every file that has one: none of them imports Qt).
set -u
. scripts/device_env.sh

log env
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,temperature.gpu \
  --format=csv 2>&1 | tee -a "$LOG"
python3 -c 'import sys, torch, triton, jsonschema; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(), "jsonschema", jsonschema.__version__)' 2>&1 | tee -a "$LOG"

# The check and the gpu tests compile many kernel variants (CPU-bound, cold Triton cache on a
# fresh machine): run them side by side, then the benchmark alone on a quiet GPU.
log "check: python3 main.py check --device cuda --out $OUT/check (with the gpu tests beside it)"
( timeout "${CHECK_TIMEOUT:-150}" python3 main.py check --device cuda --out "$OUT/check" \
    >"$OUT/check.txt" 2>&1; echo "check exit code: $?" >>"$OUT/check.txt" ) &
CHECK_PID=$!
# -p no:benchmark: pytest-benchmark (in the image) warns under xdist, and filterwarnings=error
# turns that warning into an INTERNALERROR.
XDIST=""
python3 -c 'import xdist' 2>/dev/null && XDIST="-n 8"
timeout "${TESTS_TIMEOUT:-150}" python3 -m pytest -p no:cacheprovider -p no:benchmark -o addopts=-ra \
  -W ignore::pytest.PytestConfigWarning --strict-markers -q ${GPU_TESTS:-tests/kernels tests/bench/test_bench_ncu.py tests/inspector_core/test_sanitizer_stage.py tests/inspector_core/test_timing_stage.py} -m gpu $XDIST \
  --durations=5 >"$OUT/gpu_tests.txt" 2>&1
echo "gpu tests exit code: $?" >>"$OUT/gpu_tests.txt"
wait $CHECK_PID
log "check:"
mkdir -p "$OUT/check"
grep -v '^\[' "$OUT/check.txt" | tee -a "$LOG" >"$OUT/check/check_output.txt"
log "gpu tests: pytest -q ${GPU_TESTS:-tests/kernels tests/bench/test_bench_ncu.py tests/inspector_core/test_sanitizer_stage.py tests/inspector_core/test_timing_stage.py} -m gpu"
grep -v '^SKIPPED' "$OUT/gpu_tests.txt" | tail -25 | tee -a "$LOG"
rm -f "$OUT/check.txt"
if [ "${BENCH_BUDGET_S:-150}" = "0" ]; then
  log "bench: skipped (BENCH_BUDGET_S=0)"
  log done
  exit 0
fi

log "bench: python3 main.py bench --out $OUT/full --budget-s ${BENCH_BUDGET_S:-150}"
timeout $((${BENCH_BUDGET_S:-150} + 80)) python3 main.py bench --out "$OUT/full" \
  --budget-s "${BENCH_BUDGET_S:-150}" 2>&1 | tail -40 | tee -a "$LOG"
log "bench exit code: ${PIPESTATUS[0]}"
ls -la "$OUT" "$OUT"/* | tee -a "$LOG"
log done
