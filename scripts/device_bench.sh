#!/usr/bin/env bash
# Benchmark run on the lent GPU machine (H200), batched into one call of the `run` tool.
#
#   bash scripts/device_bench.sh [STAGE ...]   STAGE: env smoke sweep full caches (default: env sweep full)
#
# Writes under $OUT (default out/device): log.txt, nvidia_smi.txt, full/results.{json,csv},
# full/bench.png, sweep.json, caches.tgz (Triton + Inductor caches, for a later warm run).
# Liger-Kernel travels as wheels in .whl/ (ignored by git; name `.whl` in the run's carry).
# A carried .devcache/caches.tgz (from an earlier run) is unpacked first.
# Knobs: FULL_ARGS (extra args of the full run), FULL_BUDGET_S, SWEEP_BUDGET_S.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-out/device}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
STAGES=${*:-env sweep full}
FULL_BUDGET_S=${FULL_BUDGET_S:-300}
SWEEP_BUDGET_S=${SWEEP_BUDGET_S:-120}
export TRITON_CACHE_DIR=/tmp/rmsnorm-cache/triton
export TORCHINDUCTOR_CACHE_DIR=/tmp/rmsnorm-cache/inductor
mkdir -p "$TRITON_CACHE_DIR" "$TORCHINDUCTOR_CACHE_DIR"
if [ -f .devcache/caches.tgz ]; then
  tar -xzf .devcache/caches.tgz -C /tmp/rmsnorm-cache && echo "caches: unpacked carried caches" | tee -a "$LOG"
fi
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }

for stage in $STAGES; do
  case $stage in
    env)
      log env
      nvidia-smi > "$OUT/nvidia_smi.txt" 2>&1
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu --format=csv >> "$OUT/nvidia_smi.txt" 2>&1
      python3 -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name(), torch.cuda.get_device_properties(0))' 2>&1 | tee -a "$LOG"
      python3 -c 'import liger_kernel, importlib.metadata as m; print("liger", m.version("liger-kernel"))' 2>&1 | tail -1 | tee -a "$LOG"
      ;;
    smoke)
      log smoke
      timeout 150 python3 -m kernels.bench --shapes 8x4096,4096x70,65536x128,2048x65536 \
        --dtypes bfloat16 --quick --no-plot --out /tmp/smoke 2>&1 | tee -a "$LOG"
      ;;
    full)
      # The record: the same entry point users run (main.py bench -> kernels.bench.bench_main).
      log "full: python3 main.py bench --out $OUT/full --budget-s $FULL_BUDGET_S ${FULL_ARGS:-}"
      timeout $((FULL_BUDGET_S + 150)) python3 main.py bench --out "$OUT/full" \
        --budget-s "$FULL_BUDGET_S" ${FULL_ARGS:-} 2>&1 | tee -a "$LOG"
      if [ ! -f "$OUT/full/results.json" ] && [ ! -f "$OUT/full/results.partial.jsonl" ]; then
        log "full: main.py wrote nothing; falling back to python3 -m kernels.bench"
        timeout $((FULL_BUDGET_S + 150)) python3 -m kernels.bench --out "$OUT/full" \
          --budget-s "$FULL_BUDGET_S" ${FULL_ARGS:-} 2>&1 | tee -a "$LOG"
      fi
      ;;
    sweep)
      log sweep
      timeout $((SWEEP_BUDGET_S + 90)) python3 -m lab.sweep --out "$OUT/sweep.json" \
        --budget-s "$SWEEP_BUDGET_S" 2>&1 | tee -a "$LOG"
      ;;
    caches)
      log caches
      tar -czf /tmp/caches.tgz -C /tmp/rmsnorm-cache . && ls -la /tmp/caches.tgz | tee -a "$LOG"
      size=$(stat -c %s /tmp/caches.tgz)
      if [ "$size" -lt 15000000 ]; then cp /tmp/caches.tgz "$OUT/caches.tgz"; fi
      ;;
    *) echo "unknown stage $stage" | tee -a "$LOG" ;;
  esac
done
log done
