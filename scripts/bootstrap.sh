#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: install the dependencies, build ktune, and run a
# real tune of a few GEMM shapes on the CPU backend.
#   KTUNE_BUILD_DIR   build folder (default: build)
#   KTUNE_SKIP_APT=1  skip the package installation (already done)
#   KTUNE_SKIP_DEMO=1 build only
#   KTUNE_WITH_GUI    ON (default) or OFF: a server without a display can skip the workbench
#   KTUNE_WITH_HIP    ON (default) or OFF: the HIP backend (Debian 12's ROCm 5.2 packages:
#                     hipcc, the HIP runtime, device libraries; about 30 s to install, no GPU needed)
# The workbench is asked for explicitly (-DKTUNE_WITH_GUI=ON), so is the HIP backend, and so is
# the CUDA backend where nvcc is found: a missing dependency then stops the build with what to install, instead of
# silently leaving the component out (CMake's own detection would turn it OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${KTUNE_BUILD_DIR:-build}

if [ "${KTUNE_SKIP_APT:-0}" != 1 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -q
  $sudo apt-get install -y -q --no-install-recommends \
    ca-certificates cmake ninja-build g++ pkg-config \
    nlohmann-json3-dev libcli11-dev libmuparser-dev libopenblas-dev zlib1g-dev \
    qt6-base-dev qt6-base-dev-tools libqt6charts6-dev libqt6svg6-dev libqt6opengl6-dev libgl1-mesa-dev libxkbcommon-dev \
    xvfb xauth python3 python3-numpy python3-jsonschema
  if [ "${KTUNE_WITH_HIP:-ON}" = ON ]; then
    $sudo apt-get install -y -q --no-install-recommends hipcc libamdhip64-dev rocm-device-libs libhiprtc-builtins5
  fi
fi

components=(-DKTUNE_WITH_GUI="${KTUNE_WITH_GUI:-ON}" -DKTUNE_WITH_HIP="${KTUNE_WITH_HIP:-ON}")
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  components+=(-DKTUNE_WITH_CUDA=ON)
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${components[@]}"
cmake --build "$build" --parallel "$(nproc)"

if [ "${KTUNE_SKIP_DEMO:-0}" != 1 ]; then
  # A real tune: every config is validated against a reference and timed; the run lands in
  # tuning_runs/quickstart and the registry diff is printed at the end.
  rm -rf tuning_runs/quickstart
  "$build/app/cli/ktune" tune gemm --backend cpu --shape "M=16,64,256 N=512 K=512" \
    --run-name quickstart --output-dir tuning_runs --registry tuned_data
fi
