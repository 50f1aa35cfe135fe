#!/usr/bin/env bash
# One device call: a user's kernel judged from outside on CUDA (issue 39). The sandbox tests run
# compiled there (kernels.MODE is "compiled" on a GPU), the check of the example kernels, the
# gpu-marked tests, and the peak memory of a CUDA kernel's process tree on the largest problem.
#
#   bash scripts/device_sandbox.sh        (carry .whl: jsonschema + deps)
#
# Writes under $OUT: log.txt, sandbox_tests.txt, gpu_tests.txt, memory.txt, and per check
# NAME/check_output.txt (its last line the exit code) with the receipts.
set -u
. scripts/device_env.sh
log env
python3 -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())' 2>&1 | tee -a "$LOG"

log "sandbox tests, compiled"
# -W: the image has no pytest-qt, so pyproject's qt_api option is unknown there.
timeout 300 python3 -m pytest -p no:cacheprovider -p no:randomly -o addopts=-ra -q \
  -W ignore::pytest.PytestConfigWarning \
  tests/kernels/test_kernel_sandbox_judge.py tests/kernels/test_kernel_usercode.py \
  >"$OUT/sandbox_tests.txt" 2>&1
echo "exit code: $?" >>"$OUT/sandbox_tests.txt"
tail -15 "$OUT/sandbox_tests.txt" | tee -a "$LOG"

log "peak memory of a CUDA kernel's tree, 4096 x 1024 float32 and 64 x 65536 bfloat16"
for shape in "4096 1024 float32" "64 65536 bfloat16"; do
  PYTHONPATH=".:${PYTHONPATH:-}" timeout 120 python3 scripts/kernel_tree_memory.py resources/kernels/tutorial.py:rms_norm $shape \
    2>&1 | tail -3 | tee -a "$OUT/memory.txt"
done

log "checks of the example kernels on CUDA"
check tutorial --kernel resources/kernels/tutorial.py:rms_norm --fixture non_power_of_two_tail
check unmasked_store --kernel resources/kernels/bug_unmasked_store.py:rms_norm --fixture non_power_of_two_tail
for name in tutorial unmasked_store; do
  log "$name:"; tail -4 "$OUT/$name/check_output.txt" | tee -a "$LOG"
done

log "gpu-marked tests"
timeout 240 python3 -m pytest -p no:cacheprovider -p no:benchmark -o addopts=-ra -q \
  -W ignore::pytest.PytestConfigWarning \
  tests/kernels tests/inspector_core/test_sanitizer_stage.py -m gpu >"$OUT/gpu_tests.txt" 2>&1
echo "exit code: $?" >>"$OUT/gpu_tests.txt"
grep -v '^SKIPPED' "$OUT/gpu_tests.txt" | tail -12 | tee -a "$LOG"
log done
