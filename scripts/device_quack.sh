#!/usr/bin/env bash
# QuACK (quack-kernels + nvidia-cutlass-dsl, ~97 MB of wheels) on the device machine, which has
# no network. A call carries at most 64 MiB, so the wheels travel in two ignored folders over two
# or three consecutive calls on the same warm machine:
#
#   bash scripts/device_quack.sh stash [P] carry .whl-quack/P (default a): copies part P to
#                                          $QUACK_STASH/P
#   bash scripts/device_quack.sh install   carry .whl-quack/b: joins the split wheel from every
#                                          stashed part and b, checks every wheel against
#                                          b/SHA256SUMS, pip-installs them all into $QUACK_SITE,
#                                          prints the exports, imports quack.rmsnorm
#   bash scripts/device_quack.sh env       prints the exports of an installed $QUACK_SITE
#
# Later scripts, after `. scripts/device_env.sh` (it sets PYTHONPATH=/tmp/site, overwriting):
#   quack_env=$(bash scripts/device_quack.sh env) && eval "$quack_env"
#
# The folders (made off the device by scripts/device_wheels.sh; ignored by git): b/SHA256SUMS is `sha256sum *.whl`
# of the whole wheels; the one wheel too big for a call beside the working tree
# (nvidia-cutlass-dsl-libs-cu12, 87.4 MiB) is cut with `split -b 44M -d -a 2 W W.part-`: part-00
# in a, part-01 in c, every other wheel in b. A part plus the working tree (17.5 MiB) must stay
# under one call's 64 MiB. c is stashed in a call between a's and install's (a stash call can run
# other work after it).
#
# `pip install --target` does not run nvidia-cutlass-dsl's .pth file (it puts
# <site>/nvidia_cutlass_dsl/dsl_packages, where the `cutlass` package lives, on sys.path), so the
# exports name that folder too. A missing stash or install (the machine went cold) is an error
# with a message and exit status 1; running a mode again is harmless.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STASH=${QUACK_STASH:-/tmp/quack-stash}
SITE=${QUACK_SITE:-/tmp/quack-site}
PYTHON=${PYTHON:-python3}
PART_B=$REPO/.whl-quack/b
MARKER=$SITE/.quack-installed # holds the SHA256SUMS the install came from

die() {
  echo "device_quack: $*" >&2
  exit 1
}

has_files() { compgen -G "$1/*" >/dev/null; }

exports() {
  echo "export PYTHONPATH=$SITE:$SITE/nvidia_cutlass_dsl/dsl_packages\${PYTHONPATH:+:\$PYTHONPATH}"
}

stash() { # $1: the part's folder name under .whl-quack (a, c, ...; never b)
  local part=$1 src=$REPO/.whl-quack/$1
  case $part in
    b | wheels | *.tmp | *[!a-z0-9]* | "") die "cannot stash a part named '$part'" ;;
  esac
  has_files "$src" || die "$src is empty or missing: carry .whl-quack/$part in this call"
  mkdir -p "$STASH/parts"
  rm -rf "$STASH/parts/$part.tmp"
  mkdir -p "$STASH/parts/$part.tmp"
  cp "$src"/* "$STASH/parts/$part.tmp/"
  rm -rf "${STASH:?}/parts/$part"
  mv "$STASH/parts/$part.tmp" "$STASH/parts/$part"
  echo "device_quack: stashed part $part in $STASH/parts/$part:"
  ls -l "$STASH/parts/$part"
}

join_wheels() { # $1: a fresh folder, filled with the whole wheels of part a and part b
  local dest=$1 file name path
  rm -rf "$dest"
  mkdir -p "$dest"
  for file in "$STASH"/parts/*/* "$PART_B"/*; do
    case $file in
      *.whl) cp "$file" "$dest/" ;;
      *.whl.part-* | */SHA256SUMS) ;;
      *) die "unexpected file $file" ;;
    esac
  done
  # A split wheel is <wheel>.part-00, -01, ... (split -d), spread over a and b: sorted by name,
  # each part is appended to its wheel in order.
  for file in "$STASH"/parts/*/*.whl.part-* "$PART_B"/*.whl.part-*; do
    if [ -e "$file" ]; then printf '%s\t%s\n' "$(basename "$file")" "$file"; fi
  done | sort | while IFS=$'\t' read -r name path; do
    cat "$path" >>"$dest/${name%.part-*}"
  done
  (cd "$dest" && sha256sum --quiet -c "$PART_B/SHA256SUMS") ||
    die "a joined or carried wheel does not match $PART_B/SHA256SUMS"
  [ "$(find "$dest" -name '*.whl' | wc -l)" -eq "$(wc -l <"$PART_B/SHA256SUMS")" ] ||
    die "the wheels in $dest are not exactly those of SHA256SUMS"
}

install() {
  compgen -G "$STASH/parts/*/*" >/dev/null ||
    die "no stash in $STASH/parts (a fresh or cold machine): run 'bash scripts/device_quack.sh stash' carrying .whl-quack/a first (and 'stash c' carrying .whl-quack/c, if there is one), then install"
  [ -f "$PART_B/SHA256SUMS" ] || die "$PART_B/SHA256SUMS missing: carry .whl-quack/b in this call"
  if [ -f "$MARKER" ] && cmp -s "$MARKER" "$PART_B/SHA256SUMS"; then
    echo "device_quack: $SITE already holds these wheels"
  else
    join_wheels "$STASH/wheels"
    rm -rf "$SITE.tmp"
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --target "$SITE.tmp" "$STASH/wheels"/*.whl || die "pip install --target $SITE.tmp failed"
    [ -d "$SITE.tmp/nvidia_cutlass_dsl/dsl_packages/cutlass" ] ||
      die "no nvidia_cutlass_dsl/dsl_packages/cutlass in $SITE.tmp"
    cp "$PART_B/SHA256SUMS" "$SITE.tmp/.quack-installed"
    rm -rf "$SITE"
    mv "$SITE.tmp" "$SITE"
    rm -rf "$STASH/wheels"
    echo "device_quack: installed $(wc -l <"$MARKER") wheels into $SITE"
  fi
  exports
  eval "$(exports)"
  "$PYTHON" -c 'import importlib.metadata as m, quack.rmsnorm
print("device_quack: quack.rmsnorm imports; quack-kernels", m.version("quack-kernels"),
      "nvidia-cutlass-dsl", m.version("nvidia-cutlass-dsl"))' ||
    die "installed, but quack.rmsnorm does not import (traceback above)"
}

env_mode() {
  [ -f "$MARKER" ] && [ -d "$SITE/nvidia_cutlass_dsl/dsl_packages" ] ||
    die "QuACK is not installed in $SITE (a fresh or cold machine): run stash, then install"
  exports
}

case ${1:-} in
  stash) stash "${2:-a}" ;;
  install) install ;;
  env) env_mode ;;
  *) die "usage: bash scripts/device_quack.sh stash|install|env" ;;
esac
