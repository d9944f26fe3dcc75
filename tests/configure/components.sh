#!/usr/bin/env bash
# A component is built only where its code and dependencies are, says why it is off, and is a
# configure error when forced ON without them.
#   components.sh CMAKE SOURCE_DIR SCRATCH_DIR
set -uo pipefail
cmake=$1 src=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch/bin"
fail() { echo "FAIL: $*"; exit 1; }
configure() {  # configure NAME ARGS...: output in $scratch/NAME.log, exit status returned
  local name=$1; shift
  "$cmake" -S "$src" -B "$scratch/$name" -DKTUNE_BUILD_TESTS=OFF -DKTUNE_BUILD_BENCH=OFF "$@" >"$scratch/$name.log" 2>&1
}

# HIP hidden: off saying what to install, and forced ON an error. With ROCm's hipcc and runtime
# installed, it defaults ON.
configure hip-default -DCMAKE_DISABLE_FIND_PACKAGE_hip=ON -DKTUNE_WITH_GUI=OFF || { cat "$scratch/hip-default.log"; fail "configure without HIP failed"; }
grep -q "KTUNE_WITH_HIP:BOOL=OFF" "$scratch/hip-default/CMakeCache.txt" || fail "HIP defaulted ON without hipcc"
grep -q "HIP=OFF (hipcc not found: install hipcc libamdhip64-dev" "$scratch/hip-default.log" || fail "summary does not say why HIP is off"
configure hip-forced -DCMAKE_DISABLE_FIND_PACKAGE_hip=ON -DKTUNE_WITH_GUI=OFF -DKTUNE_WITH_HIP=ON && fail "KTUNE_WITH_HIP=ON without hipcc configured"
grep -q "KTUNE_WITH_HIP=ON, but hipcc not found" "$scratch/hip-forced.log" || fail "no reason given for HIP"
if command -v hipcc >/dev/null && [ -e /usr/include/hip/hip_runtime_api.h ]; then
  configure hip-found -DKTUNE_WITH_GUI=OFF -DKTUNE_WITH_CUDA=OFF || { cat "$scratch/hip-found.log"; fail "configure with HIP failed"; }
  grep -q "KTUNE_WITH_HIP:BOOL=ON" "$scratch/hip-found/CMakeCache.txt" || fail "HIP installed but defaulted OFF"
fi

# Qt Charts hidden: the GUI defaults OFF saying what to install, and forced ON it is an error.
configure gui-default -DCMAKE_DISABLE_FIND_PACKAGE_Qt6Charts=ON || { cat "$scratch/gui-default.log"; fail "configure without Qt Charts failed"; }
grep -q "GUI=OFF (Qt 6 Charts not found: install libqt6charts6-dev" "$scratch/gui-default.log" || fail "summary does not say why the GUI is off"
configure gui-forced -DCMAKE_DISABLE_FIND_PACKAGE_Qt6Charts=ON -DKTUNE_WITH_GUI=ON && fail "KTUNE_WITH_GUI=ON without Qt Charts configured"
grep -q "KTUNE_WITH_GUI=ON, but Qt 6 Charts not found" "$scratch/gui-forced.log" || fail "no reason given for the GUI"

# CUDA hidden: the same.
configure cuda-default -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DKTUNE_WITH_GUI=OFF || fail "configure without CUDA failed"
grep -q "CUDA=OFF (CUDA toolkit not found" "$scratch/cuda-default.log" || fail "summary does not say why CUDA is off"
configure cuda-forced -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DKTUNE_WITH_GUI=OFF -DKTUNE_WITH_CUDA=ON && fail "KTUNE_WITH_CUDA=ON without the toolkit configured"
rm -rf "$scratch"
echo "PASS"
