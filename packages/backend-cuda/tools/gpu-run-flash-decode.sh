#!/usr/bin/env bash
# Flash-decode (decision 0804) on the H200, from a bundle of gpu-bundle.sh copied to $G (default .gpu-cuda2) with the
# round-3 CLI of branch `cuda` as $G/base/cli/poot.mjs (the same-run baseline): correctness (random small model vs
# the eval executor, demo model vs transformers, conformance, no allocation), then Llama-3.2-1B-shaped benches —
# round 3's decode command for this branch and the baseline (context 144: no split), a 1152-key-context decode for
# both (9 splits), per-kernel profiles at both contexts, prefill.
set -u
G=${G:-.gpu-cuda2}; N=/tmp/node; L=$OUT/log.txt
xz -dc $G/node.xz > $N && chmod +x $N
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> $L 2>&1
t0=$(date +%s)
step() { local name=$1 lim=$2; shift 2; local s=$(date +%s); echo "=== $name: $*" >> $L; timeout $lim "$@" > /tmp/$name.out 2>> $L; local rc=$?; cat /tmp/$name.out >> $L; cp /tmp/$name.out $OUT/$name.out; echo "=== $name rc=$rc $(( $(date +%s) - s ))s (at $(( $(date +%s) - t0 ))s)" | tee -a $L; }
step make-hf 30 $N $G/make-hf.mjs --out /tmp/l1b
step make-small 20 $N $G/make-hf.mjs --out /tmp/small --shape small
step vs-eval 50 $N $G/cuda-vs-eval.gpu.mjs /tmp/small 16
step demo 30 $N $G/cuda-demo-model.gpu.mjs
step conformance 30 $N $G/gpu-executor.mjs
step alloc 20 $N $G/cuda-decode-alloc.gpu.mjs
step bench-decode 50 $N $G/cli/poot.mjs bench /tmp/l1b --backend cuda --prompt-tokens 16 --gen-tokens 128 --runs 5
step base-decode 50 $N $G/base/cli/poot.mjs bench /tmp/l1b --backend cuda --prompt-tokens 16 --gen-tokens 128 --runs 5
step profile 40 $N $G/cuda-profile.gpu.mjs /tmp/l1b 16 128
step bench-long 60 $N $G/cli/poot.mjs bench /tmp/l1b --backend cuda --prompt-tokens 1024 --gen-tokens 128 --runs 3
step base-long 60 $N $G/base/cli/poot.mjs bench /tmp/l1b --backend cuda --prompt-tokens 1024 --gen-tokens 128 --runs 3
step profile-long 40 $N $G/cuda-profile.gpu.mjs /tmp/l1b 1024 128
step bench-prefill 30 $N $G/cli/poot.mjs bench /tmp/l1b --backend cuda --prompt-tokens 512 --gen-tokens 2 --runs 3
grep -h "rc=" $L; grep -h "failure\|conformance:\|logitsRelErr\|^pass\|^FAIL" $L | cut -c1-300; grep -h "tok/s" $OUT/*-decode.out $OUT/*-long.out $OUT/bench-prefill.out | cut -c1-200
