#!/usr/bin/env bash
# Upstream's own ctest at the pin and after prefixes of the stack, one section per tree, in the
# form `patchctl draft-outreach` compares (docs/FORMATS.md, "A log of upstream's ctest").
#
#   scripts/upstream-ctest-prefixes.sh SRC BUILD LABEL=COMMIT...
#
# SRC is a git work tree of the upstream holding the stack's patches as commits (`patchctl edit
# LAST --full` makes one); each COMMIT is checked out there in turn and built in BUILD with
# upstream's tests on and its tools off. The work tree is put back on its commit at the end.
set -euo pipefail
src=$1 build=$2
shift 2
start=$(git -C "$src" rev-parse HEAD)
trap 'git -C "$src" checkout -q --detach "$start"' EXIT
flags=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
       -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF)
if [ -n "${CTEST_PREFIXES_CCACHE:-}" ]; then
    flags+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
rc=0
cmake -S "$src" -B "$build" -G Ninja "${flags[@]}" >/dev/null || rc=$?
echo "configure: cmake ${flags[*]} (rc $rc)"
for spec in "$@"; do
    label=${spec%%=*} commit=${spec#*=}
    git -C "$src" checkout -q --detach "$commit"
    echo "== $label: $(git -C "$src" log -1 --format='%h %s')"
    t0=$(date +%s)
    set +e
    out=$(ninja -C "$build" -k 0 2>&1)
    brc=$?
    set -e
    failed=$(grep '^FAILED: ' <<<"$out" || true)
    echo "build: ninja -k 0 rc=$brc in $(( $(date +%s) - t0 )) s; failed targets: $(grep -c . <<<"$failed" || true)"
    [ -n "$failed" ] && sed 's/^/  /' <<<"$failed"
    t0=$(date +%s)
    set +e
    out=$(ctest --test-dir "$build" -j2 --timeout 600 2>&1)
    crc=$?
    set -e
    echo "ctest: rc=$crc in $(( $(date +%s) - t0 )) s"
    grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' <<<"$out" \
        | sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.*/\1 /; s/  +/ /g; s/^/  /' | sort
    grep -E 'tests passed|tests failed' <<<"$out" || true
done
