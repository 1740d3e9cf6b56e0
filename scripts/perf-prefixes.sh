#!/usr/bin/env bash
# Performance and perplexity of upstream at the pin and after each prefix of the stack, as
# CONTRIBUTING.md asks of a PR: `llama-bench` pp512/tg128 in interleaved rounds (every round runs
# every tree once, the order rotated) and `llama-perplexity` on one text, whose output must be
# the pin's digit for digit. With CTEST=1 also upstream's own ctest per tree, in the form
# `patchctl draft-outreach` compares (docs/FORMATS.md, "A log of upstream's ctest").
#
#   scripts/perf-prefixes.sh UPSTREAM WORK BENCH_MODEL PPL_MODEL TEXT ROUNDS
#
# Needs: a llama.cpp clone at the pin (partial: --exclude 'models/*.gguf'), cmake, ninja, a C++
# compiler, two GGUF models, a text file.
#
# The trees are the pin and the pin with the first K patches of stack/series, K = 1..N, labelled
# pin, p1..pN: each is written by `patchctl -C WORK/stacks/LABEL apply --into WORK/LABEL/src
# --upstream UPSTREAM`, WORK/stacks/LABEL being this stack with its series cut after K patches.
# Options before UPSTREAM: --dry-run prints the steps and runs none; --exclude GLOB (repeatable)
# goes to `patchctl apply` (a partial clone lacks its largest blobs: 'models/*.gguf');
# --cmake-arg ARG (repeatable) goes to every configure, e.g. -DGGML_NATIVE=OFF with the CPU
# features named, where the CPU reports AMX that its virtual machine does not run (llama-bench's
# q8_0 matmuls then stop with SIGILL in ggml's AMX kernels, at the pin too). Each tree
# is built in WORK/LABEL/build-tools (llama-bench, llama-perplexity) and, with CTEST=1,
# WORK/LABEL/build-tests (upstream's tests on, tools off). The first LABEL is the baseline.
# CCACHE=1 compiles through ccache, with the trees' paths made relative so that the files a
# prefix leaves alone hit the cache. Writes WORK/perf.json for `patchctl record --metrics`.
set -euo pipefail
usage() {
    echo "usage: $0 [--dry-run] [--exclude GLOB]... [--cmake-arg ARG]... UPSTREAM WORK BENCH_MODEL PPL_MODEL TEXT ROUNDS" >&2
    exit 2
}
dry= excludes=() cmake_args=()
while [ $# -gt 0 ]; do
    case $1 in
        --dry-run) dry=1; shift ;;
        --exclude) [ $# -ge 2 ] || usage; excludes+=(--exclude "$2"); shift 2 ;;
        --cmake-arg) [ $# -ge 2 ] || usage; cmake_args+=("$2"); shift 2 ;;
        --) shift; break ;;
        -*) echo "$0: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -eq 6 ] || usage
upstream=$1 work=$(realpath -m "$2") bench_model=$3 ppl_model=$4 text=$5 rounds=$6
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
patchctl=${PATCHCTL:-patchctl}
fail() { echo "$0: $*" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || fail "ROUNDS must be a positive number, not '$rounds'"
[ -e "$upstream" ] || fail "UPSTREAM $upstream does not exist: give a llama.cpp clone holding the pin"
for f in "$bench_model" "$ppl_model" "$text"; do
    [ -f "$f" ] || fail "$f is not a file"
done
[ -f "$root/stack/series" ] || fail "$root/stack/series not found: run the script of a clone of the project"
# the series' entries (a line: the patch's file name, then an optional -pN), in apply order
mapfile -t series < <(grep -vE '^[[:space:]]*(#|$)' "$root/stack/series")
labels=(pin)
pin=$(sed -nE 's/^commit = "([0-9a-f]{40})"$/\1/p' "$root/stack/upstream.toml")
mapfile -t subjects < <("$patchctl" -C "$root" series --json | python3 -c \
    'import json, sys; print("\n".join(p["subject"] for p in json.load(sys.stdin)["patches"]))')
[ "${#subjects[@]}" = "${#series[@]}" ] || fail "patchctl series lists ${#subjects[@]} patches, stack/series ${#series[@]}"
for ((k = 1; k <= ${#series[@]}; k++)); do labels+=("p$k"); done
# run a command, or with --dry-run print it
run() {
    if [ -n "$dry" ]; then
        printf '%q ' "$@" | sed 's/ $//'
        echo
    else
        "$@"
    fi
}
# the same, its output dropped when it runs
runq() {
    if [ -n "$dry" ]; then run "$@"; else "$@" >/dev/null; fi
}
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF "${cmake_args[@]}")
if [ -n "${CCACHE:-}" ]; then
    export CCACHE_BASEDIR=$work CCACHE_NOHASHDIR=1
    common+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
threads=$(nproc)

for ((k = 0; k < ${#labels[@]}; k++)); do
    label=${labels[$k]}
    stack=$work/stacks/$label/stack
    tree=$work/$label/src
    # this stack with its series cut after k patches
    run mkdir -p "$stack/patches"
    run cp "$root/stack/upstream.toml" "$stack/upstream.toml"
    if [ -n "$dry" ]; then
        echo "(series: the comments of stack/series and its first $k entries, into $stack/series)"
    else
        { grep -E '^[[:space:]]*#' "$root/stack/series" || true
          printf '%s\n' "${series[@]:0:$k}"; } > "$stack/series"
    fi
    for entry in "${series[@]:0:$k}"; do
        run cp "$root/stack/patches/${entry%% *}" "$stack/patches/"
    done
    # --force: the tree is this script's own, and upstream's ctest leaves files in it (its
    # grammar and JSON schema tests write .tmp files where they run), which a plain apply of
    # the next run would refuse as hand edits
    run "$patchctl" -C "$work/stacks/$label" apply --into "$tree" --upstream "$upstream" \
        "${excludes[@]}" -q --force
    # the section header upstream's ctest log is read by: the pin's commit and subject, or the
    # tree `patchctl apply` wrote (its stamp) and the subject of the prefix's last patch
    if [ "$k" = 0 ]; then
        id=$pin subject=$(git -C "$upstream" log -1 --format=%s "$pin" 2>/dev/null || true)
    else
        id=$([ -n "$dry" ] || sed -nE 's/^tree = "([0-9a-f]+)"$/\1/p' "$tree/.patchctl-stamp")
        subject=${subjects[$((k - 1))]}
    fi
    echo "== $label: ${id:0:9}${id:+ }$subject"
    t0=$(date +%s)
    runq cmake -S "$tree" -B "$work/$label/build-tools" "${common[@]}" -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_TOOLS=ON
    runq ninja -C "$work/$label/build-tools" llama-bench llama-perplexity
    [ -n "$dry" ] || echo "build: llama-bench llama-perplexity in $(( $(date +%s) - t0 )) s"
    if [ -n "${CTEST:-}" ]; then
        if [ -n "$dry" ]; then
            run cmake -S "$tree" -B "$work/$label/build-tests" "${common[@]}" \
                -DLLAMA_BUILD_TESTS=ON -DLLAMA_BUILD_TOOLS=OFF
            run ninja -C "$work/$label/build-tests" -k 0
            run ctest --test-dir "$work/$label/build-tests" -j2 --timeout 600
            continue
        fi
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

if [ -n "$dry" ]; then
    for label in "${labels[@]}"; do
        run "$work/$label/build-tools/bin/llama-perplexity" -m "$ppl_model" -f "$text" -c 128 \
            -b 128 -t "$threads" --no-warmup
    done
    echo "(then $rounds round(s) of llama-bench -m $bench_model -p 512 -n 128 -r 1 -t $threads -o jsonl, every tree once a round; WORK/perf.json)"
    exit 0
fi

# perplexity of a tree: the chunks' values and the final estimate, in WORK/LABEL/perplexity.txt
perplexity() {
    "$work/$1/build-tools/bin/llama-perplexity" -m "$ppl_model" -f "$text" -c 128 -b 128 \
        -t "$threads" --no-warmup > "$work/$1/perplexity.log" 2>&1
    # the values only: a log line's prefix holds its timestamp
    { grep -E '^\[[0-9]+\]' "$work/$1/perplexity.log" || true
      grep -oE 'Final estimate: .*' "$work/$1/perplexity.log" || true; } > "$work/$1/perplexity.txt"
}
# llama-perplexity's worker threads add their partial sums in the order they finish, so a chunk's
# running value can differ in its last digit between two runs of one binary (seen: 1 run in 6).
# A tree whose values differ from the pin's runs again, up to 3 runs in all: one run with the
# pin's values digit for digit makes it identical, and perf.json says how many runs it took.
for label in "${labels[@]}"; do
    perplexity "$label"
    runs=1
    while [ "$label" != "${labels[0]}" ] && [ "$runs" -lt 3 ] &&
            ! cmp -s "$work/$label/perplexity.txt" "$work/${labels[0]}/perplexity.txt"; do
        perplexity "$label"
        runs=$((runs + 1))
    done
    echo "$runs" > "$work/$label/perplexity.runs"
    echo "perplexity $label: $(grep 'Final estimate' "$work/$label/perplexity.txt") ($runs run(s))"
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
ppl_runs = {label: int((work / label / "perplexity.runs").read_text()) for label in labels}
out = {"labels": labels, "runs": runs, "perplexity": ppl, "perplexity_runs": ppl_runs, "tests": {}}
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
