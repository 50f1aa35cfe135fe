#!/usr/bin/env bash
# One device call (H200 or H100): `main.py check --device cuda` on the kernels whose CPU verdict
# is the machine's (llama_order: bf16 products; libdevice_rsqrt: libdevice; autotuned: every
# config), on the tutorial kernel, the two planted precision bugs and the bundled kernel; then
# the gpu-marked kernel tests and the machine-fault tests (which run the autotuned kernel on the
# GPU; the interpreter-only ones skip there).
#
#   bash scripts/device_machine.sh        (carry .whl: jsonschema + its dependencies)
#
# Writes under $OUT: log.txt, gpu_tests.txt, and per kernel <name>/receipt.{json,csv} +
# <name>/check_output.txt (its last line: the exit code).
set -u
. scripts/device_env.sh

log env
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv 2>&1 | tee -a "$LOG"
python3 -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())' 2>&1 | tee -a "$LOG"
log "checks: the bundled kernel (cold cache: every layout x mutant compiles) beside the user kernels"
check bundled &
for name in llama_order libdevice_rsqrt autotuned; do
  check "$name" --kernel "resources/kernels/$name.py:rms_norm"
done &
for name in tutorial bug_half_accumulation bug_eps_outside_root; do
  check "$name" --kernel "resources/kernels/$name.py:rms_norm"
done &
wait
XDIST=""
python3 -c 'import xdist' 2>/dev/null && XDIST="-n 8"
timeout "${TESTS_TIMEOUT:-200}" python3 -m pytest -p no:cacheprovider -p no:benchmark \
  -o addopts=-ra -W ignore::pytest.PytestConfigWarning --strict-markers -q \
  tests/kernels tests/inspector_core/test_machine_faults.py -m "gpu or not gpu" \
  -k "gpu or machine_faults" $XDIST >"$OUT/gpu_tests.txt" 2>&1
echo "gpu tests exit code: $?" >>"$OUT/gpu_tests.txt"
grep -v '^SKIPPED' "$OUT/gpu_tests.txt" | tail -8 | tee -a "$LOG"
for name in bundled llama_order libdevice_rsqrt autotuned tutorial bug_half_accumulation bug_eps_outside_root; do
  log "$name:"
  grep -E "^(fixtures|kernel vs|autotune|FAIL|PASS|NOT JUDGED|exit code)|SURVIVED" "$OUT/$name/check_output.txt" \
    | cut -c1-300 | tee -a "$LOG"
done
log done
