#!/usr/bin/env bash
# Sets up duet on a Debian 12 machine: installs the Debian packages it needs (only the
# missing ones; with sudo when not root), configures and builds into ./build.
# Re-running it is cheap: the build is incremental.
#   DUET_WERROR=ON   treat warnings as errors (CI)
#   DUET_BUILD_DIR   build folder (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(build-essential cmake ninja-build pkg-config zlib1g-dev libtbb-dev libsimde-dev
          libhdf5-dev libgtest-dev libtomlplusplus-dev libcli11-dev
          hmmer hmmer-examples mmseqs2-examples python3-h5py python3-numpy python3-matplotlib
          libopenmpi-dev openmpi-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
build=${DUET_BUILD_DIR:-build}
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDUET_WERROR="${DUET_WERROR:-OFF}" >/dev/null
fi
cmake --build "$build" -j "$(nproc)"
