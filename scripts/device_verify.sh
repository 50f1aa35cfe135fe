#!/usr/bin/env bash
# The GPU-only evidence of `bench --ncu`, the check's compute-sanitizer and timing stages and
# the launcher's torch.compile / CUDA-graph plans, on the device machine: Nsight Compute's DRAM
# figures of two shapes, the gpu-marked ncu, sanitizer, timing and plan tests, a check of the
# bundled kernel with its timing, and a user kernel that stores past its allocation (its check
# must fail, exit status 1).
#
#   bash scripts/device_verify.sh        (carry .whl: jsonschema + deps)
#
# Writes under $OUT: log.txt, ncu/results.{json,csv}, verify_tests.txt, timed/receipt.{json,csv},
# bug/receipt.{json,csv}.
set -u
. scripts/device_env.sh
export PATH=/usr/local/cuda/bin:$PATH
log "ncu: $(command -v ncu) $(ncu --version 2>&1 | tail -1)"
log "bench --ncu: 512x4096, 4096x70 bfloat16"
timeout 240 python3 main.py bench --shapes 512x4096,4096x70 --dtypes bfloat16 --impls ours \
  --rounds 1 --quick --no-plot --ncu --out "$OUT/ncu" 2>&1 | tail -12 | tee -a "$LOG"
log "bench --ncu exit code: ${PIPESTATUS[0]}"
log "gpu tests: ncu, sanitizer, timing, torch.compile and CUDA-graph plans"
timeout 420 python3 -m pytest -p no:cacheprovider -p no:benchmark -o addopts=-ra \
  -W ignore::pytest.PytestConfigWarning --strict-markers -q -m gpu \
  tests/bench/test_bench_ncu.py tests/inspector_core/test_sanitizer_stage.py \
  tests/inspector_core/test_timing_stage.py tests/kernels/test_kernel_plans_gpu.py \
  >"$OUT/verify_tests.txt" 2>&1
echo "exit code: $?" >>"$OUT/verify_tests.txt"
grep -v '^SKIPPED' "$OUT/verify_tests.txt" | tail -25 | tee -a "$LOG"
log "check --device cuda of the bundled kernel on 512x5125 bfloat16, timed"
timeout 180 python3 main.py check --rows 512 --width 5125 --dtype bfloat16 --device cuda \
  --quiet --out "$OUT/timed" 2>&1 | grep -E '^(timing|DRAM|compute-sanitizer|PASS|FAIL)' \
  | tee -a "$LOG"
log "timed check exit code: ${PIPESTATUS[0]}"
log "check of a user kernel that stores past its allocation (expect exit code 1)"
timeout 150 python3 main.py check --kernel resources/kernels/bug_store_past_allocation.py:rms_norm \
  --device cuda --quiet --out "$OUT/bug" 2>&1 | tail -15 | tee -a "$LOG"
log "bug check exit code: ${PIPESTATUS[0]}"
log done
