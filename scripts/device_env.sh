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
# The device's pytest: no cache, no random order, no benchmark plugin (it warns under xdist), and
# the repository's addopts and Qt-only options left out (the image has no pytest-qt).
PYTEST="python3 -m pytest -p no:cacheprovider -p no:randomly -p no:benchmark -o addopts=-ra -q -W ignore::pytest.PytestConfigWarning"
# patched_copy DIR PATCH: this tree's code, tests and resources copied to DIR with PATCH (a path
# from the repository root) applied; the caller then works in DIR. Exit status 1 if it fails.
patched_copy() {
  local dir=$1 patch=$PWD/$2
  rm -rf "$dir" && mkdir "$dir" || return 1
  cp -r bounded_json kernels lab inspector oracle resources scripts tests main.py pyproject.toml "$dir/"
  (cd "$dir" && { patch -p1 < "$patch" || git apply "$patch"; })
}
