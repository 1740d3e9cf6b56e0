#!/usr/bin/env bash
# Performance and perplexity of upstream at the pin and after each prefix of the stack, as
# CONTRIBUTING.md asks of a PR: `llama-bench` pp512/tg128 in interleaved rounds (every round runs
# every tree once, the order rotated) and `llama-perplexity` on one text, whose output must be
# the pin's digit for digit. With CTEST=1 also upstream's own ctest per tree, in the form
# `patchctl draft-outreach` compares (docs/FORMATS.md, "A log of upstream's ctest").
#
#   scripts/perf-prefixes.sh SRC WORK BENCH_MODEL PPL_MODEL TEXT ROUNDS LABEL=COMMIT...
#
# SRC is a git repository of the upstream holding the stack's patches as commits (`patchctl edit
# LAST --full` makes one); each COMMIT is checked out into WORK/LABEL/src (the files whose blobs a
# partial clone lacks left out, as `patchctl edit --full` leaves them), built in WORK/LABEL/build-tools (llama-bench, llama-perplexity) and, with
# CTEST=1, WORK/LABEL/build-tests (upstream's tests on, tools off). The first LABEL is the
# baseline. CCACHE=1 compiles through ccache, with the trees' paths made relative so that the
# files a prefix leaves alone hit the cache. Writes WORK/perf.json for `patchctl record --metrics`.
set -euo pipefail
src=$1 work=$(realpath -m "$2") bench_model=$3 ppl_model=$4 text=$5 rounds=$6
shift 6
mkdir -p "$work"
labels=()
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF)
if [ -n "${CCACHE:-}" ]; then
    export CCACHE_BASEDIR=$work CCACHE_NOHASHDIR=1
    common+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
threads=$(nproc)

for spec in "$@"; do
    label=${spec%%=*} commit=${spec#*=}
    labels+=("$label")
    tree=$work/$label/src
    echo "== $label: $(git -C "$src" log -1 --format='%h %s' "$commit")"
    # every file the upstream clone has (a partial clone lacks its largest blobs: they are left
    # out); a file already in the tree is kept, so a rerun only adds what is missing
    mkdir -p "$tree"
    export GIT_INDEX_FILE=$work/$label/index
    git -C "$src" read-tree "$commit"
    python3 - "$src" "$commit" "$tree" <<'EOF_PRESENT' | git -C "$src" --work-tree="$tree" checkout-index -z --stdin
import os, subprocess, sys
src, commit, tree = sys.argv[1:]
def git(*args):
    return subprocess.run(["git", "-C", src, *args], check=True, capture_output=True).stdout
missing = {ln[1:] for ln in git("rev-list", "--objects", "--missing=print", "--no-walk",
                                commit).splitlines() if ln.startswith(b"?")}
entries = [e.split(b"\t", 1) for e in git("ls-files", "-s", "-z").split(b"\0") if e]
sys.stdout.buffer.write(b"".join(path + b"\0" for meta, path in entries
                                 if meta.split()[1] not in missing and
                                 not os.path.lexists(os.path.join(tree.encode(), path))))
EOF_PRESENT
    unset GIT_INDEX_FILE
    t0=$(date +%s)
    cmake -S "$tree" -B "$work/$label/build-tools" "${common[@]}" -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_TOOLS=ON >/dev/null
    ninja -C "$work/$label/build-tools" llama-bench llama-perplexity >/dev/null
    echo "build: llama-bench llama-perplexity in $(( $(date +%s) - t0 )) s"
    if [ -n "${CTEST:-}" ]; then
        t0=$(date +%s)
        cmake -S "$tree" -B "$work/$label/build-tests" "${common[@]}" -DLLAMA_BUILD_TESTS=ON \
            -DLLAMA_BUILD_TOOLS=OFF >/dev/null
        set +e
        out=$(ninja -C "$work/$label/build-tests" -k 0 2>&1)
        brc=$?
        set -e
        failed=$(grep '^FAILED: ' <<<"$out" || true)
        echo "build: ninja -k 0 rc=$brc in $(( $(date +%s) - t0 )) s; failed targets: $(grep -c . <<<"$failed" || true)"
        [ -n "$failed" ] && sed 's/^/  /' <<<"$failed"
        t0=$(date +%s)
        set +e
        out=$(ctest --test-dir "$work/$label/build-tests" -j2 --timeout 600 2>&1)
        crc=$?
        set -e
        echo "ctest: rc=$crc in $(( $(date +%s) - t0 )) s"
        grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' <<<"$out" \
            | sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.*/\1 /; s/  +/ /g; s/^/  /' | sort
        grep -E 'tests passed|tests failed' <<<"$out" || true
    fi
done

# perplexity: one run per tree; the chunks' values and the final estimate
for label in "${labels[@]}"; do
    "$work/$label/build-tools/bin/llama-perplexity" -m "$ppl_model" -f "$text" -c 128 -b 128 \
        -t "$threads" --no-warmup > "$work/$label/perplexity.log" 2>&1
    # the values only: a log line's prefix holds its timestamp
    { grep -E '^\[[0-9]+\]' "$work/$label/perplexity.log" || true
      grep -oE 'Final estimate: .*' "$work/$label/perplexity.log" || true; } > "$work/$label/perplexity.txt"
    echo "perplexity $label: $(grep 'Final estimate' "$work/$label/perplexity.txt")"
done

# llama-bench: ROUNDS rounds, each tree once per round, the order rotated every round
: > "$work/bench.jsonl"
n=${#labels[@]}
for ((r = 0; r < rounds; r++)); do
    for ((i = 0; i < n; i++)); do
        label=${labels[$(( (i + r) % n ))]}
        "$work/$label/build-tools/bin/llama-bench" -m "$bench_model" -p 512 -n 128 -r 1 \
            -t "$threads" -o jsonl 2>/dev/null \
            | sed "s/^{/{\"label\": \"$label\", \"round\": $r, /" >> "$work/bench.jsonl"
    done
    echo "bench round $((r + 1))/$rounds done (load $(cut -d' ' -f1 /proc/loadavg))"
done

python3 - "$work" "${labels[@]}" <<'EOF'
import json, statistics, sys
from pathlib import Path
work, labels = Path(sys.argv[1]), sys.argv[2:]
runs = [json.loads(line) for line in (work / "bench.jsonl").read_text().splitlines() if line]
ppl = {label: (work / label / "perplexity.txt").read_text() for label in labels}
out = {"labels": labels, "runs": runs, "perplexity": ppl, "tests": {}}
base = labels[0]
for test, key in (("pp512", "n_prompt"), ("tg128", "n_gen")):
    med = {label: statistics.median(r["avg_ts"] for r in runs
                                   if r["label"] == label and r[key] > 0) for label in labels}
    out["tests"][test] = {label: {"median_tps": round(med[label], 2),
                                  "ratio": round(med[label] / med[base], 4)} for label in labels}
    print(f"{test}: " + ", ".join(f"{label} {med[label]:.2f} t/s ({med[label] / med[base]:.3f})"
                                  for label in labels))
same = [label for label in labels if ppl[label] == ppl[base] and ppl[base].strip()]
out["perplexity_identical"] = same
print(f"perplexity identical to {base}: {', '.join(same)} of {', '.join(labels)}")
(work / "perf.json").write_text(json.dumps(out, indent=1) + "\n")
sys.exit(0 if len(same) == len(labels) else 1)
EOF
