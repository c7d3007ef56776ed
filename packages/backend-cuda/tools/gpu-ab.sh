#!/usr/bin/env bash
# An A/B device call for CUDA speed work (used for decision 0807). Build two bundles with tools/gpu-bundle.sh (the
# baseline from the old commit, the new one from yours) and pack them into a git-excluded folder of the checkout the
# GPU machine receives, e.g. .gpu-cuda2/: node.xz and node_modules/ (koffi) from .gpu/, base.tar.xz and new.tar.xz
# (`tar -C .gpu --exclude=node.xz --exclude=node_modules -cJf DIR/new.tar.xz .`), fixtures.tar.xz (the repo's fixtures/
# hf/ and gguf/ without the F32/F16 GGUFs), this script as DIR/run.sh and the steps as DIR/steps.sh, for example
#   for v in new base new base; do bench $v bf16 60 /tmp/l1b --prompt-tokens 16 --gen-tokens 128 --runs 5; done
#   el alloc; timeout 30 $N $G/new/cuda-decode-alloc.gpu.mjs | tail -2
#   el fixtures; mkdir -p /tmp/fx && tar -xJf $G/fixtures.tar.xz -C /tmp/fx && FIXTURES_WEIGHTS=bf16 $N $G/new/cuda-fixtures.gpu.mjs /tmp/fx
#   el profile; mkdir -p $OUT/new; OUT=$OUT/new $N $G/new/cuda-profile.gpu.mjs /tmp/l1b 16 128 | grep -A30 "^decode step"
# Anchors go to $OUT/anchor.jsonl (python3 hf-anchor.py ...; llama-bench -m GGUF -ngl 99 -p 16 -n 128 -r 5 -o jsonl).
# then run `bash DIR/run.sh` there with DIR carried. The working tree plus DIR must stay under 64 MiB: koffi's doc/,
# vendor/ and C sources may go (keep src/koffi/*.js). Set G below to DIR.
G=${G:-.gpu-cuda2}
exec > >(tee -a "$OUT/run.log") 2>&1
t0=$(date +%s); el() { echo "[+$(( $(date +%s) - t0 ))s] $*"; }
xz -dc $G/node.xz > /tmp/node && chmod +x /tmp/node
for v in base new; do [ -f $G/$v.tar.xz ] && { mkdir -p $G/$v && tar -xJf $G/$v.tar.xz -C $G/$v; }; done
N=/tmp/node
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version --format=csv,noheader
# bench VARIANT LABEL TIMEOUT MODEL [poot bench flags]: one JSON line per run in $OUT/bench.jsonl.
bench() { local v=$1 l=$2 t=$3 m=$4; shift 4; el "bench $v $l"; timeout "$t" $N $G/$v/cli/poot.mjs bench "$m" --backend cuda "$@" --json > /tmp/b.json 2>/tmp/b.err; echo "rc=$?"; echo "BENCH $v $l $(tr -d '\n ' < /tmp/b.json)" >> "$OUT/bench.jsonl"; tail -3 /tmp/b.err; tr -d '\n ' < /tmp/b.json | grep -o '"decodeTokS":[0-9.]*\|"decodeMsPerToken":[0-9.]*\|"prefillTokS":[0-9.]*' | tr '\n' ' '; echo; }
el make-hf; $N $G/new/make-hf.mjs --out /tmp/l1b | tail -1
. $G/steps.sh
# The call's runs as a poot-bench-result/1 file (decision 2110), charted by the docs site once copied to bench-results/:
# every BENCH line of bench.jsonl, against the anchors steps.sh left in $OUT/anchor.jsonl (hf-anchor.py's lines and
# llama.cpp CUDA's `llama-bench -o jsonl` lines).
anchors=(); [ -s "$OUT/anchor.jsonl" ] && anchors=(--anchors "$OUT/anchor.jsonl")
$N $G/new/cuda-bench-result.mjs --name "${BENCH_NAME:-cuda-ab}" --title "${BENCH_TITLE:-poot --backend cuda A/B (new vs base), same call}" \
  --commit "$(cat $G/new/bench-commit 2>/dev/null || echo unknown)" --out "$OUT/bench-results" --bench "$OUT/bench.jsonl" \
  "${anchors[@]}" --device "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)" \
  --command "bash $G/run.sh ($G/steps.sh: poot bench MODEL --backend cuda --json)"
el done
