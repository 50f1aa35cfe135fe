#!/usr/bin/env bash
# The window on the device machine (H200): PySide6 and the libraries Qt's offscreen platform
# loads are not in its image and it has no network, so they travel in two consecutive calls on
# the same warm machine (a call carries at most 64 MiB; the PySide6-Essentials wheel is 97 MB):
#
#   bash scripts/device_window.sh stash   carry .whl-qt/a: part 00 of the split wheel and debs/
#   bash scripts/device_window.sh run     carry .whl-qt/b: joins the wheel,
#                                         checks its sha256, installs every wheel in /tmp/site,
#                                         unpacks the .debs in /tmp/sys (never /), then runs the
#                                         job-host and worker tests and scripts/measure_stall.py
#                                         (Run check, Run kernel, compiler output, Benchmark,
#                                         with screenshots) beside two busy processes
#
# The folders (made off the device, ignored by git): a/pyside.part-00 and b/pyside.part-01 are
# `split -b 47M -d -a 2` of pyside6_essentials-6.9.3-cp39-abi3-manylinux_2_28_x86_64.whl,
# b/pyside.sha256 its sha256; b/ also holds shiboken6, pyqtgraph, pytest-qt, pytest-timeout and
# jsonschema with its needs; a/debs/ is `apt-get download` of libegl1 libgl1 libglvnd0 libglx0
# libopengl0 libx11-6 libxcb1 libxau6 libxdmcp6 libfontconfig1 libfreetype6 libglib2.0-0
# libxkbcommon0 libpng16-16 libbrotli1 libexpat1 fonts-dejavu-core fontconfig-config libbsd0
# libmd0 libdbus-1-3 libsystemd0 libcap2 libgcrypt20 libgpg-error0 liblz4-1.
# Writes under $OUT: log.txt, tests.txt, stall_h200.json, shots/*.png.
set -u
STASH=/tmp/qt-stash
OUT=${OUT:-out/device}
mkdir -p "$OUT"
LOG=$OUT/log.txt
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }

if [ "${1:-}" = stash ]; then
  mkdir -p "$STASH" && cp -r .whl-qt/a/pyside.part-00 .whl-qt/a/debs "$STASH/" &&
    ls -l "$STASH" | tee -a "$LOG"
  exit 0
fi
[ "${1:-}" = run ] || { echo "usage: $0 stash|run" >&2; exit 2; }
[ -f "$STASH/pyside.part-00" ] || { echo "device_window: no stash (the machine went cold): stash again" >&2; exit 1; }

WHEEL=/tmp/wheels/pyside6_essentials-6.9.3-cp39-abi3-manylinux_2_28_x86_64.whl
mkdir -p /tmp/wheels /tmp/sys
cat "$STASH/pyside.part-00" .whl-qt/b/pyside.part-01 >"$WHEEL"
echo "$(cat .whl-qt/b/pyside.sha256)  $WHEEL" | sha256sum -c - | tee -a "$LOG" || exit 1
cp .whl-qt/b/*.whl /tmp/wheels/
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site /tmp/wheels/*.whl || exit 1
for f in "$STASH"/debs/*.deb; do dpkg -x "$f" /tmp/sys; done
cat >/tmp/sys/fonts.conf <<'XML'
<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>/tmp/sys/usr/share/fonts</dir><dir>/usr/share/fonts</dir><cachedir>/tmp/sys/fc-cache</cachedir></fontconfig>
XML
export PYTHONPATH=/tmp/site
export LD_LIBRARY_PATH=/tmp/sys/usr/lib/x86_64-linux-gnu:/tmp/sys/lib/x86_64-linux-gnu
export QT_QPA_PLATFORM=offscreen FONTCONFIG_FILE=/tmp/sys/fonts.conf PYTHONUNBUFFERED=1
export TRITON_CACHE_DIR=/tmp/rmsnorm-triton-cache
log env
nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1 | tee -a "$LOG"
python3 -c 'import sys, torch, triton, PySide6, pyqtgraph; from PySide6.QtWidgets import QApplication; app = QApplication([]); print(sys.version.split()[0], torch.__version__, triton.__version__, "PySide6", PySide6.__version__, "pyqtgraph", pyqtgraph.__version__, app.platformName(), torch.cuda.get_device_name())' 2>&1 | tee -a "$LOG"

log "tests: job host + worker (the window's check, kernel run and compile in the job process)"
timeout "${TESTS_TIMEOUT:-200}" python3 -m pytest -p no:cacheprovider -p no:benchmark -o addopts=-ra \
  -q tests/inspector_core/test_job_host.py tests/gui/test_worker.py >"$OUT/tests.txt" 2>&1
echo "tests exit code: $?" >>"$OUT/tests.txt"
tail -n 15 "$OUT/tests.txt" | tee -a "$LOG"

log "window: scripts/measure_stall.py --busy 2 (child, then thread)"
timeout "${STALL_TIMEOUT:-330}" python3 scripts/measure_stall.py --busy 2 --timeout 150 \
  --json "$OUT/stall_h200.json" --screenshots "$OUT/shots" 2>&1 | grep -v "propagateSizeHints" \
  | tee -a "$LOG"
log "done"
