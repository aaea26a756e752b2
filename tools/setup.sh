#!/usr/bin/env bash
# Prepares a machine for glm5c and builds it: installs the Debian packages that are missing (only
# then does it touch apt), checks the CUDA toolkit, configures once, and builds incrementally.
#
# Environment: GLM5C_BUILD_DIR (default build), GLM5C_BUILD_COMPILER (ON|OFF, default ON),
# CUDAToolkit_ROOT (default /usr/local/cuda), GLM5C_ALLOW_NO_CUDA=1 to build without CUDA.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GLM5C_BUILD_DIR:-$root/build}
compiler=${GLM5C_BUILD_COMPILER:-ON}
cuda=${CUDAToolkit_ROOT:-/usr/local/cuda}

packages=(cmake ninja-build g++ python3 libgtest-dev libflatbuffers-dev flatbuffers-compiler
          llvm-22-tools clang-22 libclang-rt-22-dev)
if [ "$compiler" = ON ]; then
  packages+=(llvm-22-dev libmlir-22-dev mlir-22-tools)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$cuda/include/cuda.h" ] || [ ! -f "$cuda/include/nvrtc.h" ]; then
  msg="setup: no CUDA toolkit at $cuda (need include/cuda.h and include/nvrtc.h from CUDA 13); install it or set CUDAToolkit_ROOT"
  if [ "${GLM5C_ALLOW_NO_CUDA:-0}" = 1 ]; then
    echo "$msg; building without CUDA (GLM5C_ALLOW_NO_CUDA=1)" >&2
  else
    echo "$msg (or set GLM5C_ALLOW_NO_CUDA=1 for a CPU-only build)" >&2
    exit 1
  fi
fi

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DGLM5C_BUILD_COMPILER="$compiler" -DCUDAToolkit_ROOT="$cuda"
fi
cmake --build "$build" -j "${GLM5C_JOBS:-$(nproc)}"
