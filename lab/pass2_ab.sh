#!/bin/bash
# A/B on the device: the column loop's pass 2 forward (this tree) against last chunk first
# (lab/pass2_last_first.patch applied to a copy), in the order fwd / rev / rev / fwd, each run
# every case of lab/pass2_cases.json (every column-loop case of 2 chunks or more in the shape
# sets, and widths of no set) against a copy of the same bytes. About 2 minutes on an H100 with
# a warm Triton cache; its result (2026-12-07: no gain) is in docs/LAYOUT.md, "Open".
#   bash lab/pass2_ab.sh          (under the device tool; results in $OUT/{fwd,rev}{1,2}.json)
set -u
. scripts/device_env.sh
root=$PWD
rm -rf /tmp/rev && mkdir /tmp/rev && cp -r bounded_json kernels lab inspector oracle resources scripts main.py /tmp/rev/
(cd /tmp/rev && { patch -p1 < "$root/lab/pass2_last_first.patch" || git apply "$root/lab/pass2_last_first.patch"; }) || exit 1
run() {
  (cd "$1" && TRITON_CACHE_DIR="/tmp/tc_$2" python3 -m lab.sweep --out "$OUT/$3.json" \
    --candidates "$root/lab/pass2_cases.json" --only candidates --references copy,ours \
    --rep-ms 10 --rounds 2 --budget-s 200 --precompile 14 2>&1 | tail -3)
}
log fwd1; run "$root" fwd fwd1
log rev1; run /tmp/rev rev rev1
log rev2; run /tmp/rev rev rev2
log fwd2; run "$root" fwd fwd2
log done
