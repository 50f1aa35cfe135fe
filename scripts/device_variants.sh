#!/usr/bin/env bash
# One device call: the code of every launched variant against another tree's, on this machine's
# Triton, and the GPU coverage record walked again.
#
#   OLD_TREE=DIR bash scripts/device_variants.sh
#
# DIR holds the other revision's kernels/ and lab/ (with this tree's lab/variant_code.py), e.g.
# `git archive REV kernels lab/__init__.py lab/ptx_compare.py | tar -x -C DIR`. Writes under
# $OUT: log.txt, variants_old.json and variants.txt (lab.variant_code over the witnesses of
# resources/coverage/cpu.json, PTX without debug lines and SASS), h200.json and coverage.txt
# (`main.py coverage --device cuda`), each under its own timeout.
set -u
. scripts/device_env.sh

log env
python3 -c 'import sys, torch, triton; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())' 2>&1 | tee -a "$LOG"
JOBS=$(nproc)
log "variants: the other tree ($OLD_TREE) dumps, this tree compares"
RECORD=$(pwd)/resources/coverage/cpu.json
( cd "$OLD_TREE" && TRITON_INTERPRET=0 timeout 200 python3 -m lab.variant_code "$RECORD" \
    --dump "$OUT/variants_old.json" --jobs "$JOBS" ) 2>&1 | tail -3 | tee -a "$LOG"
TRITON_INTERPRET=0 timeout 200 python3 -m lab.variant_code "$RECORD" --against "$OUT/variants_old.json" \
  --jobs "$JOBS" >"$OUT/variants.txt" 2>&1
echo "exit code: $?" >>"$OUT/variants.txt"
tail -5 "$OUT/variants.txt" | tee -a "$LOG"
log "coverage: python3 main.py coverage --device cuda --out $OUT/h200.json"
timeout "${COVERAGE_TIMEOUT:-300}" python3 main.py coverage --device cuda --out "$OUT/h200.json" \
  >"$OUT/coverage.txt" 2>&1
echo "exit code: $?" >>"$OUT/coverage.txt"
tail -3 "$OUT/coverage.txt" | tee -a "$LOG"
log done
