#!/usr/bin/env bash
# The Vulkan lane on Mesa's software device (lavapipe), from a clean Debian
# machine: install the packages, apply the stack, build the worker's
# consumer path with -DGGML_VULKAN=ON out of tree, show the device, run the
# stage CTests on it and check that --n-gpu-layers 99 really offloads.
#
#   bash native/ci/vulkan-lane.sh [WORK_DIR]      (as root, or a user with sudo -n)
#   bash native/ci/vulkan-lane.sh --step setup|ctest|check|archs WORK_DIR [BUILD_DIR]
#
# The steps are the lane's pieces that `patchctl ci run --lane vulkan` (and so
# the vulkan job of the workflow `patchctl ci github` writes) runs around its own
# apply, configure and build: setup (the packages when missing, the headers
# check and fallback, the device; it writes WORK_DIR/lane.cmake, the cache
# entries configure loads with -C), ctest (the stage CTests on the device) and
# check (the offload check). BUILD_DIR defaults to WORK_DIR/build.
#
# Environment: PYTHON (a Python that imports patchctl; default python3),
# CMAKE and CTEST (default from PATH, >= 3.21, with ninja on PATH),
# UPSTREAM (the llama.cpp clone patchctl applies to), VK_LANE_SKIP_APT=1 (the
# packages are already there), VK_LANE_CCACHE=1 (compile through ccache),
# VK_LANE_ARCHS=1 (also test-llama-archs -r/-b/-f on the device: the archs step;
# VK_LANE_ARCHS_MODES picks some of r b f),
# VK_LANE_DEVICE=lavapipe (lavapipe even where a GPU-type device is present;
# default auto: a GPU when vulkaninfo shows one, else lavapipe).
#
# Debian 12's libvulkan-dev (1.3.239) lacks VK_EXT_layer_settings
# (vk::LayerSettingEXT, Vulkan-Headers 1.3.272 and later), which the pinned
# ggml-vulkan.cpp uses: the build fails there (native/ci/vulkan-headers-check.sh,
# evidence/vulkan-lane-bookworm-headers.log). The lane then takes the headers
# alone from Debian 13's libvulkan-dev (downloaded with a private apt configuration, extracted, never
# installed); the loader, the driver and glslc stay Debian 12's. That fallback
# is Debian's only: elsewhere (Ubuntu 22.04) too old headers stop the lane with
# one line; Ubuntu 24.04's libvulkan-dev 1.3.275 needs no fallback.
set -euo pipefail

STEP=all
if [ "${1:-}" = --step ]; then
  STEP=${2:-}
  shift 2 || shift 1
  case "$STEP" in
    setup|ctest|check|archs) ;;
    *) echo "vulkan-lane.sh: --step takes setup, ctest, check or archs, not '$STEP'" >&2; exit 2 ;;
  esac
fi
WORK=${1:-${VK_LANE_WORK:-/tmp/vulkan-lane}}
BUILD=${2:-$WORK/build}
PYTHON=${PYTHON:-python3}
CMAKE=${CMAKE:-cmake}
CTEST=${CTEST:-ctest}
UPSTREAM=${UPSTREAM:-}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "$WORK"
t_start=$(date +%s)
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
PACKAGES=(mesa-vulkan-drivers libvulkan-dev glslc spirv-headers vulkan-tools)

# The packages (apt-get through sudo -n unless root), when one is missing.
packages() {
  if [ "${VK_LANE_SKIP_APT:-0}" != 1 ]; then
    local missing=() p
    for p in "${PACKAGES[@]}"; do
      dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q ' installed$' || missing+=("$p")
    done
    if [ "${#missing[@]}" = 0 ]; then
      stamp "apt: ${PACKAGES[*]}: installed already"
    else
      local as_root=()
      [ "$(id -u)" = 0 ] || as_root=(sudo -n)
      stamp "apt: ${PACKAGES[*]}"
      "${as_root[@]}" apt-get update -qq
      DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${PACKAGES[@]}" >/dev/null
    fi
  fi
  dpkg-query -W -f '${Package} ${Version}\n' \
    mesa-vulkan-drivers libvulkan-dev libvulkan1 glslc spirv-headers vulkan-tools
}

# Vulkan headers: the system's when new enough, else Debian 13's (on Debian only).
# Sets VK_INCLUDE and writes it to $WORK/lane.cmake for `ci run`'s configure.
header_version() { sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\).*/\1/p' "$1/vulkan/vulkan_core.h"; }
headers() {
  VK_INCLUDE=/usr/include
  stamp "vulkan.hpp: VK_EXT_layer_settings?"
  if ! bash "$REPO/native/ci/vulkan-headers-check.sh"; then
    local os
    # shellcheck source=/dev/null
    os=$(. "${VK_LANE_OS_RELEASE:-/etc/os-release}" 2>/dev/null; echo "${ID:-unknown} ${VERSION_ID:-}")
    if [ "${os%% *}" != debian ]; then
      echo "FAIL: the system's Vulkan headers (VK_HEADER_VERSION $(header_version /usr/include)) are" \
        "too old for the pin, and the fallback (Debian 13's libvulkan-dev) needs Debian, not" \
        "${os% }: install Vulkan-Headers 1.3.272 or later (Ubuntu 24.04's libvulkan-dev 1.3.275 is)"
      exit 1
    fi
    stamp "the system's Vulkan headers are too old for the pin: Debian 13's libvulkan-dev headers"
    local A="$WORK/apt-trixie"
    mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/debs"
    echo "deb http://deb.debian.org/debian trixie main" >"$A/sources.list"
    local opts=(-o "Dir::Etc::SourceList=$A/sources.list" -o Dir::Etc::SourceParts=/dev/null
                -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache" -o Debug::NoLocking=1)
    apt-get "${opts[@]}" update -qq
    rm -f "$A"/debs/*.deb
    (cd "$A/debs" && apt-get "${opts[@]}" download libvulkan-dev 2>/dev/null)
    rm -rf "$A/root"
    dpkg-deb -x "$A"/debs/libvulkan-dev_*.deb "$A/root"
    echo "headers: $(basename "$A"/debs/libvulkan-dev_*.deb) (VK_HEADER_VERSION $(header_version "$A/root/usr/include"))"
    VK_INCLUDE="$A/root/usr/include"
  fi
  printf 'set(Vulkan_INCLUDE_DIR "%s" CACHE PATH "native/ci/vulkan-lane.sh --step setup" FORCE)\n' \
    "$VK_INCLUDE" >"$WORK/lane.cmake"
}

# The device: a GPU-type device through the loader's default when there is one
# (and VK_LANE_DEVICE is not lavapipe), else lavapipe's ICD; ggml-vulkan skips
# CPU-type devices unless named. With an argument, say which and show it.
device() {
  if [ "${VK_LANE_DEVICE:-auto}" != lavapipe ] &&
     vulkaninfo --summary 2>/dev/null | grep -qE 'PHYSICAL_DEVICE_TYPE_(DISCRETE|INTEGRATED|VIRTUAL)_GPU'; then
    [ -z "${1:-}" ] || stamp "vulkaninfo --summary (the loader's default: a GPU-type device)"
  else
    local icds=(/usr/share/vulkan/icd.d/lvp_icd.*.json)
    ICD=${icds[0]}
    if [ ! -f "$ICD" ]; then
      echo "FAIL: no GPU-type Vulkan device and no lavapipe ICD ($ICD): install mesa-vulkan-drivers"
      exit 1
    fi
    export VK_ICD_FILENAMES="$ICD"
    export GGML_VK_VISIBLE_DEVICES=0
    [ -z "${1:-}" ] || stamp "vulkaninfo --summary (VK_ICD_FILENAMES=$ICD)"
  fi
  [ -z "${1:-}" ] || vulkaninfo --summary 2>/dev/null | sed -n '/^Vulkan Instance Version/p;/^Devices:/,$p'
}

setup() {
  packages
  t_apt=$(date +%s)
  headers
  device show
}

apply_stack() {
  stamp "patchctl apply"
  rm -rf "$WORK/tree" "$BUILD"
  local apply=("$PYTHON" -m patchctl apply --into "$WORK/tree" --exclude 'models/*.gguf' --exclude 'docs/ops/*')
  [ -n "$UPSTREAM" ] && apply+=(--upstream "$UPSTREAM")
  "${apply[@]}"
}

configure_and_build() {
  # ggml turns ccache on by itself when it finds it (GGML_CCACHE): off unless asked,
  # so the lane's build time is a clean build's.
  local launcher=(-DGGML_CCACHE=OFF)
  if [ "${VK_LANE_CCACHE:-0}" = 1 ]; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  stamp "configure"
  "$CMAKE" -C "$WORK/lane.cmake" -S "$REPO/native" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DWORKER_UPSTREAM_DIR="$WORK/tree" -DGGML_VULKAN=ON "${launcher[@]}" | grep -E 'Vulkan|glslc|worker:'
  t_conf=$(date +%s)
  stamp "build ($(nproc) cores)"
  "$CMAKE" --build "$BUILD" -j "$(nproc)" | tail -n 1
}

# The stage CTests on the device: their pass lines, or everything when one fails.
ctests() {
  stamp "ctest -R '^(pipeline|frame|core)\\.' on Vulkan"
  local log="$WORK/ctest.log"
  if ! (cd "$BUILD" && "$CTEST" -R '^(pipeline|frame|core)\.' -j "$(nproc)" --output-on-failure \
        --no-tests=error) >"$log" 2>&1; then
    cat "$log"
    exit 1
  fi
  grep -E 'Test +#|tests passed|tests failed|Total Test' "$log"
}

# stage_log LAYERS NGL LOG [UNTIL]: start a stage with llama.cpp's log in LOG, wait until
# it has placed its layers (or until the log shows UNTIL), stop it (the log is removed
# first: a redirect truncates only once the background job runs, so the wait could read
# the last stage's log).
stage_log() {
  rm -f "$3"
  WORKER_LLAMA_LOG=1 "$W" --stage --model "$M" --layers "$1" --n-gpu-layers "$2" --listen 127.0.0.1:0 \
    --timeout-ms 2000 2>"$3" >/dev/null &
  local pid=$!
  for _ in $(seq 100); do grep -qs "${4:-offloaded}" "$3" && break; sleep 0.1; done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

offload_check() {
  stamp "offload check: --n-gpu-layers 99 on the tiny model"
  W="$BUILD/bin/worker"
  M="$BUILD/tests/pipeline/tiny-llama.gguf"
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
    stage_log "${split##*,}" 99 "$O/stage.log"
    echo "stage ${split##*,}: $(grep -E 'offloaded|Vulkan0 model buffer' "$O/stage.log" | tr -s ' ' | tr '\n' ';')"
    "$W" --drive --model "$M" --split "$split" --steps 6 --n-gpu-layers 99 --check-local --json >"$O/split.json"
    echo "split $split: $(digest "$O/split.json")"
  done
  # A partial --n-gpu-layers counts within each stage's range: with 1,
  # stage [0,2) puts its layer 1 on Vulkan0 and its layer 0 on the CPU, stage
  # [2,4) its output (layer 4) on Vulkan0 and its layers 2 and 3 on the CPU.
  stamp "partial offload: --n-gpu-layers 1 on the stages [0,2) and [2,4)"
  for layers in 0:2 2:4; do
    stage_log "$layers" 1 "$O/partial.log"
    placed=$(grep -o 'layer *[0-9]* assigned to device [A-Za-z0-9_]*' "$O/partial.log" | tr -s ' ' | sort -u | tr '\n' ';')
    echo "stage $layers, --n-gpu-layers 1: $placed"
    want=$([ "$layers" = 0:2 ] && echo 'layer 1 assigned to device Vulkan0' || echo 'layer 4 assigned to device Vulkan0')
    grep -q "$want" <<<"$placed" || { echo "FAIL: stage $layers did not place its last layer on Vulkan0"; exit 1; }
  done
  "$W" --drive --model "$M" --split 0:2,2:4 --steps 6 --n-gpu-layers 1 --json >"$O/split.json"
  echo "split 0:2,2:4, --n-gpu-layers 1: $(digest "$O/split.json")"
  # Two devices: the device twice (GGML_VK_VISIBLE_DEVICES=0,0, two ggml devices on one
  # physical device). llama.cpp turns on pipeline parallelism only for a model that
  # offloads every unit it has (n_gpu_layers() above its layer count): a stage that
  # offloads all the units it holds gets it too (the full model 5, [1,3) 2, [3,4) its layer
  # and the output), and loses it with one of them on the CPU. The chain of such stages
  # gives the full model's bits.
  stamp "two devices (the device twice): pipeline parallelism of a stage that offloads all it holds"
  local spec layers ngl want got
  for spec in 0:4/5/1 0:4/4/0 1:3/2/1 1:3/1/0 3:4/2/1 3:4/1/0; do
    IFS=/ read -r layers ngl want <<<"$spec"
    GGML_VK_VISIBLE_DEVICES=0,0 stage_log "$layers" "$ngl" "$O/two.log" 'graph splits'
    got=$(grep -c 'pipeline parallelism enabled' "$O/two.log" || true)
    echo "stage $layers, --n-gpu-layers $ngl: pipeline parallelism $([ "$got" = 1 ] && echo on || echo off);$(grep -o 'assigned to device [A-Za-z0-9_]*' "$O/two.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
    [ "$got" = "$want" ] || { echo "FAIL: stage $layers with --n-gpu-layers $ngl: pipeline parallelism $got, not $want"; exit 1; }
  done
  GGML_VK_VISIBLE_DEVICES=0,0 "$W" --drive --model "$M" --split 0:1,1:3,3:4 --steps 6 --n-gpu-layers 1,2,2 \
    --check-local --json >"$O/two.json"
  echo "two devices, split 0:1,1:3,3:4, --n-gpu-layers 1,2,2: $(digest "$O/two.json")"
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
  # Mixed chains: one --n-gpu-layers per stage, --check-local
  # against the full model placed the same way (local_n_gpu_layers). [0,2) on the
  # CPU + [2,4) on Vulkan0 is bit-identical only without ggml-vulkan's fusions;
  # with them, the difference is measured and printed, not failed.
  stamp "mixed chains: a CPU stage and a Vulkan stage"
  for layers in 0:2/0 2:4/99; do
    stage_log "${layers%/*}" "${layers#*/}" "$O/mixed.log"
    echo "stage ${layers%/*}, --n-gpu-layers ${layers#*/}: $(grep -o 'layer *[0-9]* assigned to device [A-Za-z0-9_]*' "$O/mixed.log" | tr -s ' ' | sort -u | tr '\n' ';')"
  done
  GGML_VK_DISABLE_FUSION=1 "$W" --drive --model "$M" --split 0:2,2:4 --n-gpu-layers 0,99 --steps 6 --check-local --json >"$O/mixed.json"
  echo "split 0:2,2:4, --n-gpu-layers 0,99, fusions off: $(digest "$O/mixed.json") against --n-gpu-layers $("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["local_n_gpu_layers"])' "$O/mixed.json")"
  "$W" --drive --model "$M" --split 0:2,2:4 --n-gpu-layers 1,99 --steps 6 --check-local --json >"$O/mixed.json"
  echo "split 0:2,2:4, --n-gpu-layers 1,99: $(digest "$O/mixed.json")"
  for seed in 1 2 3 4 5 6 7 8 9 10; do
    "$W" --drive --model "$M" --local --n-gpu-layers 3 --seed "$seed" --prompt 8 --steps 32 --logits-out "$O/ref-$seed.bin" >/dev/null
    "$W" --drive --model "$M" --split 0:2,2:4 --n-gpu-layers 0,99 --seed "$seed" --prompt 8 --steps 32 --logits-out "$O/mix-$seed.bin" >/dev/null
  done
  "$PYTHON" - "$O" <<'PY'
import struct, sys
d, V, rows, bad, worst = sys.argv[1], 256, 0, 0, 0.0
for seed in range(1, 11):
    a, b = (open(f"{d}/{k}-{seed}.bin", "rb").read() for k in ("ref", "mix"))
    a, b = (struct.unpack(f"<{len(x) // 4}f", x) for x in (a, b))
    for r in range(len(a) // V):
        ra, rb = a[r * V:(r + 1) * V], b[r * V:(r + 1) * V]
        rows += 1
        if ra != rb:
            bad += 1
            worst = max(worst, max(abs(x - y) for x, y in zip(ra, rb)))
print(f"mixed 0,99 with ggml-vulkan's fusions on, seeds 1-10: {bad} of {rows} logit rows differ from --n-gpu-layers 3, at most {worst:.3g}")
PY
}

# The hooks on the device (VK_LANE_ARCHS=1, or --step archs): upstream's
# test-llama-archs, built in the same tree, runs -r, -b and -f with every layer
# offloaded to the device ggml-vulkan names Vulkan0 (-d). About half an hour on
# lavapipe and 2 cores.
archs() {
  stamp "test-llama-archs -r/-b/-f -d Vulkan0"
  if [ ! -x "$BUILD/bin/test-llama-archs" ]; then
    "$CMAKE" -S "$REPO/native" -B "$BUILD" -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_COMMON=ON >/dev/null
    "$CMAKE" --build "$BUILD" -j "$(nproc)" --target test-llama-archs | tail -n 1
  fi
  mkdir -p "$WORK/archs"
  local m
  for m in ${VK_LANE_ARCHS_MODES:-r b f}; do
    "$BUILD/bin/test-llama-archs" -s 42 -d Vulkan0 "-$m" "$WORK/archs" >"$WORK/archs-$m.log" 2>&1 ||
      { grep -E '^\|.*\|FAIL' "$WORK/archs-$m.log"; tail -n 2 "$WORK/archs-$m.log"; exit 1; }
    grep -E '^(layer ranges|boundary I/O|filtered state)' "$WORK/archs-$m.log"
  done
}

case "$STEP" in
  setup) setup; exit 0 ;;
  ctest) device; ctests; exit 0 ;;
  check) device; offload_check; exit 0 ;;
  archs) device; archs; exit 0 ;;
esac
setup
apply_stack
t_apply=$(date +%s)
configure_and_build
t_build=$(date +%s)
ctests
t_test=$(date +%s)
offload_check
t_check=$(date +%s)
[ "${VK_LANE_ARCHS:-0}" != 1 ] || archs
t_end=$(date +%s)
stamp "done"
echo "wall seconds: apt $((t_apt - t_start)), apply $((t_apply - t_apt)), configure $((t_conf - t_apply)), build $((t_build - t_conf)), ctest $((t_test - t_build)), offload check $((t_check - t_test)), test-llama-archs $((t_end - t_check)); configure+build+tests $((t_test - t_apply)); total $((t_end - t_start))"
