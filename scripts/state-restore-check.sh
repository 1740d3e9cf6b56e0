#!/usr/bin/env bash
# Builds scripts/state-restore-check.cpp against an unpatched llama.cpp tree and its built
# libllama, and runs it on MODEL (see the program's header for what it checks).
#
#   scripts/state-restore-check.sh TREE LIBDIR MODEL [--device]
#
# TREE is the llama.cpp source (its include/ and ggml/include/), LIBDIR the directory that holds
# its libllama.so (e.g. a build's bin/). The binary goes to a temporary directory, removed on exit.
set -euo pipefail

if [[ $# -lt 3 ]]; then
    echo "usage: $0 TREE LIBDIR MODEL [--device]" >&2
    exit 2
fi
tree=$1
libdir=$2
model=$3
shift 3

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"${CXX:-c++}" -std=c++17 -O1 -I"$tree/include" -I"$tree/ggml/include" "$here/state-restore-check.cpp" \
    -L"$libdir" -lllama -Wl,-rpath,"$libdir" -o "$tmp/state-restore-check"
# which tree: its commit, or the pin and the patches of a patchctl stamp (an empty list: unpatched)
if [[ -f "$tree/.patchctl-stamp" ]]; then
    echo "llama.cpp: $(grep -E '^(pin|patches) = ' "$tree/.patchctl-stamp" | tr '\n' ' ')"
else
    echo "llama.cpp: $(git -C "$tree" rev-parse HEAD 2>/dev/null || echo unknown)"
fi
echo "model: $model ($(sha256sum "$model" | cut -c1-16))"
"$tmp/state-restore-check" "$model" "$@"
