#!/usr/bin/env bash
# Builds one of the checks of upstream's own behaviour, scripts/CHECK.cpp, against an unpatched
# llama.cpp tree and its built libllama, and runs it on MODEL (see the program's header for what
# it checks).
#
#   scripts/upstream-check.sh CHECK TREE LIBDIR MODEL [ARGS...]
#
# CHECK is state-restore-check, nextn-toggle-check, embd-split-check or lora-check, each also run by a script
# of its name.
# TREE is the llama.cpp source (its include/, ggml/include/ and src/ for the staging header
# llama-ext.h), LIBDIR the directory that holds its libllama.so (e.g. a build's bin/). The binary
# goes to a temporary directory, removed on exit.
set -euo pipefail

if [[ $# -lt 4 ]]; then
    echo "usage: $0 CHECK TREE LIBDIR MODEL [ARGS...]" >&2
    exit 2
fi
check=$1
tree=$2
libdir=$3
model=$4
shift 4

here=$(cd "$(dirname "$0")" && pwd)
if [[ ! "$check" =~ ^[a-z-]+$ || ! -f "$here/$check.cpp" ]]; then
    echo "$0: no check named '$check' in $here" >&2
    exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"${CXX:-c++}" -std=c++17 -O1 -I"$tree/include" -I"$tree/ggml/include" -I"$tree/src" "$here/$check.cpp" \
    -L"$libdir" -lllama -lggml-base -Wl,-rpath,"$libdir" -o "$tmp/$check"
# which tree: its commit, or the pin and the patches of a patchctl stamp (an empty list: unpatched)
if [[ -f "$tree/.patchctl-stamp" ]]; then
    echo "llama.cpp: $(grep -E '^(pin|patches) = ' "$tree/.patchctl-stamp" | tr '\n' ' ')"
else
    echo "llama.cpp: $(git -C "$tree" rev-parse HEAD 2>/dev/null || echo unknown)"
fi
echo "model: $model ($(sha256sum "$model" | cut -c1-16))"
"$tmp/$check" "$model" "$@"
