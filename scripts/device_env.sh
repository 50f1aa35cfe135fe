# Sourced by the device scripts (scripts/device_*.sh): unbuffered Python, $OUT and its log, a
# `log` helper, the carried wheels (.whl) installed to /tmp/site, one Triton cache per machine.
export PYTHONUNBUFFERED=1
OUT=${OUT:-out/device}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export TRITON_CACHE_DIR=/tmp/rmsnorm-triton-cache
# check NAME [ARGS...]: `main.py check --device cuda ARGS` into $OUT/NAME (receipts and
# check_output.txt, whose last line is the exit code), bounded by CHECK_TIMEOUT seconds.
check() {
  local name=$1; shift
  mkdir -p "$OUT/$name"
  timeout "${CHECK_TIMEOUT:-280}" python3 main.py check --quiet --device cuda "$@" --out "$OUT/$name" \
    >"$OUT/$name/check_output.txt" 2>&1
  echo "exit code: $?" >>"$OUT/$name/check_output.txt"
}
