#!/usr/bin/env bash
# The Vulkan lane on Mesa's software device (lavapipe), from a clean Debian
# machine (issue 25): install the packages, apply the stack, build the worker's
# consumer path with -DGGML_VULKAN=ON out of tree, show the device, run the
# stage CTests on it and check that --n-gpu-layers 99 really offloads.
#
#   bash native/ci/vulkan-lane.sh [WORK_DIR]      (run from the repository root, as root)
#
# Environment: PYTHON (a Python that imports patchctl; default python3),
# CMAKE and CTEST (default from PATH, >= 3.21, with ninja on PATH),
# UPSTREAM (the llama.cpp clone patchctl applies to), VK_LANE_SKIP_APT=1 (the
# packages are already there), VK_LANE_CCACHE=1 (compile through ccache).
#
# Debian 12's libvulkan-dev (1.3.239) lacks VK_EXT_layer_settings
# (vk::LayerSettingEXT, Vulkan-Headers 1.3.272 and later), which the pinned
# ggml-vulkan.cpp uses: the build fails there (native/ci/vulkan-headers-check.sh,
# evidence/vulkan-lane-bookworm-headers.log). The lane then takes the headers
# alone from Debian 13's libvulkan-dev (downloaded with a private apt configuration, extracted, never
# installed); the loader, the driver and glslc stay Debian 12's.
set -euo pipefail

WORK=${1:-${VK_LANE_WORK:-/tmp/vulkan-lane}}
PYTHON=${PYTHON:-python3}
CMAKE=${CMAKE:-cmake}
CTEST=${CTEST:-ctest}
UPSTREAM=${UPSTREAM:-}
REPO=$(pwd)
mkdir -p "$WORK"
t_start=$(date +%s)
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }

if [ "${VK_LANE_SKIP_APT:-0}" != 1 ]; then
  stamp "apt: mesa-vulkan-drivers libvulkan-dev glslc spirv-headers vulkan-tools"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    mesa-vulkan-drivers libvulkan-dev glslc spirv-headers vulkan-tools >/dev/null
fi
dpkg-query -W -f '${Package} ${Version}\n' \
  mesa-vulkan-drivers libvulkan-dev libvulkan1 glslc spirv-headers vulkan-tools
t_apt=$(date +%s)

# Vulkan headers: the system's when new enough, else Debian 13's.
header_version() { sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\).*/\1/p' "$1/vulkan/vulkan_core.h"; }
VK_INCLUDE=/usr/include
stamp "vulkan.hpp: VK_EXT_layer_settings?"
if ! bash "$REPO/native/ci/vulkan-headers-check.sh"; then
  stamp "the system's Vulkan headers are too old for the pin: Debian 13's libvulkan-dev headers"
  A="$WORK/apt-trixie"
  mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/debs"
  echo "deb http://deb.debian.org/debian trixie main" >"$A/sources.list"
  opts=(-o "Dir::Etc::SourceList=$A/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache" -o Debug::NoLocking=1)
  apt-get "${opts[@]}" update -qq
  rm -f "$A"/debs/*.deb
  (cd "$A/debs" && apt-get "${opts[@]}" download libvulkan-dev 2>/dev/null)
  rm -rf "$A/root"
  dpkg-deb -x "$A"/debs/libvulkan-dev_*.deb "$A/root"
  echo "headers: $(basename "$A"/debs/libvulkan-dev_*.deb) (VK_HEADER_VERSION $(header_version "$A/root/usr/include"))"
  VK_INCLUDE="$A/root/usr/include"
fi

# The device: lavapipe's ICD; ggml-vulkan skips CPU-type devices unless named.
icds=(/usr/share/vulkan/icd.d/lvp_icd.*.json)
ICD=${icds[0]}
export VK_ICD_FILENAMES="$ICD"
export GGML_VK_VISIBLE_DEVICES=0
stamp "vulkaninfo --summary (VK_ICD_FILENAMES=$ICD)"
vulkaninfo --summary 2>/dev/null | sed -n '/^Vulkan Instance Version/p;/^Devices:/,$p'

stamp "patchctl apply"
rm -rf "$WORK/tree" "$WORK/build"
apply=("$PYTHON" -m patchctl apply --into "$WORK/tree" --exclude 'models/*.gguf' --exclude 'docs/ops/*')
[ -n "$UPSTREAM" ] && apply+=(--upstream "$UPSTREAM")
"${apply[@]}"
t_apply=$(date +%s)

# ggml turns ccache on by itself when it finds it (GGML_CCACHE): off unless asked,
# so the lane's build time is a clean build's.
launcher=(-DGGML_CCACHE=OFF)
if [ "${VK_LANE_CCACHE:-0}" = 1 ]; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
stamp "configure"
"$CMAKE" -S "$REPO/native" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DWORKER_UPSTREAM_DIR="$WORK/tree" -DGGML_VULKAN=ON -DVulkan_INCLUDE_DIR="$VK_INCLUDE" \
  "${launcher[@]}" | grep -E 'Vulkan|glslc|worker:'
t_conf=$(date +%s)
stamp "build ($(nproc) cores)"
"$CMAKE" --build "$WORK/build" -j "$(nproc)" | tail -n 1
t_build=$(date +%s)

stamp "ctest -R '^(pipeline|frame|core)\\.' on Vulkan"
(cd "$WORK/build" && "$CTEST" -R '^(pipeline|frame|core)\.' -j "$(nproc)" --output-on-failure) |
  grep -E 'Test +#|tests passed|tests failed|Total Test'
t_test=$(date +%s)

stamp "offload check: --n-gpu-layers 99 on the tiny model"
W="$WORK/build/bin/worker"
M="$WORK/build/tests/pipeline/tiny-llama.gguf"
O="$WORK/offload"
mkdir -p "$O"
digest() { "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["logits_fnv1a64"], d.get("identical_to_local"), d["tokens"])' "$1"; }
WORKER_LLAMA_LOG=1 "$W" --drive --model "$M" --local --steps 6 --n-gpu-layers 99 --json >"$O/local.json" 2>"$O/local.log"
grep -E 'ggml_vulkan: [0-9]|using device|offloaded|assigned to device|model buffer size|KV buffer size|compute buffer size' "$O/local.log" | sort | uniq -c
echo "layers assigned per device: $(grep -o 'assigned to device [A-Za-z0-9_]*' "$O/local.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
grep -q 'offloaded 5/5 layers to GPU' "$O/local.log" || { echo "FAIL: the full model did not offload 5/5 layers"; exit 1; }
echo "local, Vulkan:   $(digest "$O/local.json")"
"$W" --drive --model "$M" --local --steps 6 --json >"$O/local-cpu.json"
echo "local, CPU:      $(digest "$O/local-cpu.json")"
for split in 0:2,2:4 0:1,1:3,3:4; do
  WORKER_LLAMA_LOG=1 "$W" --stage --model "$M" --layers "${split##*,}" --n-gpu-layers 99 --listen 127.0.0.1:0 \
    --timeout-ms 2000 2>"$O/stage.log" >/dev/null &
  pid=$!
  for _ in $(seq 50); do grep -q offloaded "$O/stage.log" && break; sleep 0.1; done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "stage ${split##*,}: $(grep -E 'offloaded|Vulkan0 model buffer' "$O/stage.log" | tr -s ' ' | tr '\n' ';')"
  "$W" --drive --model "$M" --split "$split" --steps 6 --n-gpu-layers 99 --check-local --json >"$O/split.json"
  echo "split $split: $(digest "$O/split.json")"
done
# A partial --n-gpu-layers counts within each stage's range (issue 23): with 1,
# stage [0,2) puts its layer 1 on Vulkan0 and its layer 0 on the CPU, stage
# [2,4) its output (layer 4) on Vulkan0 and its layers 2 and 3 on the CPU.
stamp "partial offload: --n-gpu-layers 1 on the stages [0,2) and [2,4)"
for layers in 0:2 2:4; do
  WORKER_LLAMA_LOG=1 "$W" --stage --model "$M" --layers "$layers" --n-gpu-layers 1 --listen 127.0.0.1:0 \
    --timeout-ms 2000 2>"$O/partial.log" >/dev/null &
  pid=$!
  for _ in $(seq 50); do grep -q offloaded "$O/partial.log" && break; sleep 0.1; done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  placed=$(grep -o 'layer *[0-9]* assigned to device [A-Za-z0-9_]*' "$O/partial.log" | tr -s ' ' | sort -u | tr '\n' ';')
  echo "stage $layers, --n-gpu-layers 1: $placed"
  want=$([ "$layers" = 0:2 ] && echo 'layer 1 assigned to device Vulkan0' || echo 'layer 4 assigned to device Vulkan0')
  grep -q "$want" <<<"$placed" || { echo "FAIL: stage $layers did not place its last layer on Vulkan0"; exit 1; }
done
"$W" --drive --model "$M" --split 0:2,2:4 --steps 6 --n-gpu-layers 1 --json >"$O/split.json"
echo "split 0:2,2:4, --n-gpu-layers 1: $(digest "$O/split.json")"
# A larger llama (8 layers, n_embd 256, 1024-token vocabulary) in f16 and q8_0:
# the chain against the full model on the same device (--check-local exits 1
# unless the logits are the same bits).
for type in f16 q8_0; do
  "$W" --write-tiny-model "$O/m-$type.gguf" --n-layer 8 --n-embd 256 --n-head 8 --n-head-kv 4 \
    --n-ff 512 --n-vocab 1024 --type "$type" >/dev/null
  for split in 0:4,4:8 0:3,3:6,6:8; do
    "$W" --drive --model "$O/m-$type.gguf" --split "$split" --prompt 40 --steps 8 --n-gpu-layers 99 \
      --check-local --json >"$O/split.json"
    echo "$type split $split: $(digest "$O/split.json")"
  done
done
t_end=$(date +%s)
stamp "done"
echo "wall seconds: apt $((t_apt - t_start)), apply $((t_apply - t_apt)), configure $((t_conf - t_apply)), build $((t_build - t_conf)), ctest $((t_test - t_build)), offload check $((t_end - t_test)); configure+build+tests $((t_test - t_apply)); total $((t_end - t_start))"
