#!/usr/bin/env bash
# Nsight Compute's sections of one call of kernels.rms_norm per case, to see where a shape's
# time goes (throughput of DRAM, L2 and L1, stall reasons, occupancy): the child of
# `bench --ncu` (kernels.bench.ncu_child) under ncu with whole sections instead of four metrics.
#
#   bash scripts/device_ncu_probe.sh 4096x5125:bfloat16 4096x5125:float16 ...
#
# Writes $OUT/ncu_probe/ROWSxWIDTH_DTYPE.txt (ncu's text report) and $OUT/log.txt.
set -u
. scripts/device_env.sh
export PATH=/usr/local/cuda/bin:$PATH
mkdir -p "$OUT/ncu_probe"
for case in "$@"; do
  shape=${case%%:*} dtype=${case##*:}
  rows=${shape%%x*} width=${shape##*x}
  log "ncu sections: $rows x $width $dtype"
  timeout 180 ncu --clock-control none --profile-from-start off --target-processes all \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    --section Occupancy --section LaunchStats --section WarpStateStats \
    python3 -m kernels.bench.ncu_child "$rows" "$width" "$dtype" 1e-6 \
    >"$OUT/ncu_probe/${shape}_${dtype}.txt" 2>&1
  log "exit code $? ($(grep -cE 'Throughput|Stall' "$OUT/ncu_probe/${shape}_${dtype}.txt") lines)"
done
log done
