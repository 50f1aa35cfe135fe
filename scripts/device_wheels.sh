#!/usr/bin/env bash
# The wheels the device scripts carry, fetched here from PyPI (the device machine has no
# network): Python 3.12 on x86_64 Linux, only what the device image (KINDS.md's package list)
# lacks, each pinned to the version the committed records name.
#
#   bash scripts/device_wheels.sh        writes .whl/ and .whl-quack/{a,b,c}/ (both ignored by git)
#
# .whl (scripts/device_env.sh installs it): jsonschema and its three dependencies the image lacks
# (receipts are validated against resources/receipt.schema.json), liger-kernel (a benchmark peer).
# .whl-quack (scripts/device_quack.sh's layout): quack-kernels and the CuTe DSL. The one wheel
# too big for a call beside the working tree, nvidia-cutlass-dsl-libs-cu12 (87 MiB), is cut in
# two (part-00 in a, part-01 in c); every other wheel and b/SHA256SUMS of the whole wheels go in b.
# A part (44 MiB) and the working tree must fit one call's 64 MiB: carry no second copy of the
# tree (no snapshot folder) in the stash calls.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP=${PIP:-.venv/bin/pip}

download() { # $1: folder; the rest: requirements, each fetched alone (--no-deps)
  local dest=$1
  shift
  mkdir -p "$dest"
  "$PIP" download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --abi cp312 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform any -d "$dest" "$@"
}

rm -rf .whl .whl-quack
download .whl jsonschema==4.26.0 jsonschema-specifications referencing rpds-py liger-kernel==0.8.5

big=nvidia-cutlass-dsl-libs-cu12==4.8.1
download .whl-quack/b quack-kernels==0.6.5 nvidia-cutlass-dsl==4.8.1 \
  nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 \
  apache-tvm-ffi==0.1.15.post2 torch-c-dlpack-ext==0.1.5 "$big"
(
  cd .whl-quack/b
  sha256sum -- *.whl >SHA256SUMS
  wheel=$(ls nvidia_cutlass_dsl_libs_cu12-*.whl)
  split -b 44M -d -a 2 "$wheel" "$wheel.part-"
  rm "$wheel"
  mkdir -p ../a ../c
  mv "$wheel.part-00" ../a/
  mv "$wheel.part-01" ../c/
  if compgen -G "$wheel.part-02" >/dev/null; then
    echo "device_wheels: $wheel needs more than two parts" >&2
    exit 1
  fi
)
du -sh .whl .whl-quack/a .whl-quack/b .whl-quack/c
echo "device_wheels: carry .whl in every call; QuACK's three calls carry .whl-quack/a, then c, then b"
