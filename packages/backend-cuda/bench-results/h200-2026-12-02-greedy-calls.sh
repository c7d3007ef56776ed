# Device calls of branch cuda-speed (issue #22, decision 2201), one H200 lease (calls A, B, C), 2026-12-02 08:24-08:33 UTC.
# main = d965cec (bundle /tmp/L/main), new = 205de87 (bundle /tmp/L/new), both gpu-bundle.sh in the installed layout.
# --- call A (.gpu-cs-a/a.sh)
# call A of the final lease: keep node's first part on the machine; the transformers anchors (same shape, random init)
cp .gpu-cs-a/node.part1 /tmp/node.part1 && ls -la /tmp/node.part1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,driver_version,memory.total --format=csv,noheader | tee $OUT/machine.txt
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)" | tee -a $OUT/machine.txt
timeout 170 python3 .gpu-cs-a/hf-anchor.py .gpu-cs-a/l1b-config compiled-loop eager compiled --runs 3 > $OUT/anchor.jsonl 2> $OUT/anchor.err; echo "anchor rc=$?"
cat $OUT/anchor.jsonl; grep -v "^W1202\|cudagraph_utils" $OUT/anchor.err | tail -4
# --- call B (.gpu-cs/b.sh): its bf16 benches and cuda-greedy passed --weights bf16, which reads model.bf16.safetensors (absent): they exited 1 at once
# call B of the final lease: main's bundle (baseline) and this branch's (new), installed layout, one H200
set -u
G=.gpu-cs; N=/tmp/node; L=$OUT/log.txt; t0=$(date +%s)
cat /tmp/node.part1 $G/node.part2 | xz -dc > $N && chmod +x $N && $N --version
for v in main new; do mkdir -p /tmp/L/$v && tar -xJf $G/$v.tar.xz -C /tmp/L/$v; done
step() { local name=$1 lim=$2; shift 2; local s=$(date +%s); echo "=== $name: $*" >> $L; timeout $lim "$@" > $OUT/$name.out 2>> $L; local rc=$?; echo "=== $name rc=$rc $(( $(date +%s) - s ))s (at $(( $(date +%s) - t0 ))s)" | tee -a $L; }
B() { local v=$1 name=$2 lim=$3 m=$4; shift 4; step $name $lim $N /tmp/L/$v/cli/poot.mjs bench $m --backend cuda "$@" --json; tr -d '\n ' < $OUT/$name.out | grep -o '"decodeTokS":[0-9.]*\|"decodeMsPerToken":[0-9.]*\|"decodeDispatchesPerToken":[0-9.a-z]*\|"graphLaunchesPerToken":[0-9.a-z]*\|"hostMsPerToken":[0-9.a-z]*\|"prefillTokS":[0-9.]*\|"fractionOfFloor":[0-9.]*\|"floorMsPerToken":[0-9.]*' | tr '\n' ' '; echo; }
step make-hf 60 $N /tmp/L/new/make-hf.mjs --out /tmp/l1b
( $N /tmp/L/new/make-random-model.mjs --type Q4_K_M --out-dir /tmp/gguf > $OUT/make-q4.out 2>&1; $N /tmp/L/new/make-random-model.mjs --type Q8_0 --out-dir /tmp/gguf > $OUT/make-q8.out 2>&1; echo made > /tmp/gguf-made ) &
step greedy 120 $N /tmp/L/new/cuda-greedy.gpu.mjs /tmp/l1b 100; cat $OUT/greedy.out
BF="/tmp/l1b --weights bf16 --prompt-tokens 16 --gen-tokens 128 --runs 5"
B new bf16-new-1 60 $BF
B main bf16-main-1 60 $BF
B new bf16-steps-1 60 $BF --decode-loop steps
B new bf16-new-2 60 $BF
B main bf16-main-2 60 $BF
B new bf16-k16 60 $BF --tokens-per-launch 16
while [ ! -f /tmp/gguf-made ]; do sleep 1; done; ls -la /tmp/gguf >> $L
Q="--prompt-tokens 16 --gen-tokens 128 --runs 3"
B new q8-new 70 /tmp/gguf/llama-3.2-1b-random-Q8_0.gguf $Q
B main q8-main 70 /tmp/gguf/llama-3.2-1b-random-Q8_0.gguf $Q
B new q4-new 90 /tmp/gguf/llama-3.2-1b-random-Q4_K_M.gguf $Q
B main q4-main 90 /tmp/gguf/llama-3.2-1b-random-Q4_K_M.gguf $Q
step fixtures 120 env FIXTURES_WEIGHTS=bf16 $N /tmp/L/new/cuda-fixtures.gpu.mjs fixtures; tail -4 $OUT/fixtures.out
step profile-q4 60 $N /tmp/L/new/cuda-profile.gpu.mjs /tmp/gguf/llama-3.2-1b-random-Q4_K_M.gguf 16 128
B new ngl8 60 $BF --gen-tokens 32 --runs 1 --gpu-layers 8
step conformance 40 $N /tmp/L/new/gpu-executor.mjs; tail -2 $OUT/conformance.out
echo "total $(( $(date +%s) - t0 ))s"
# --- call C (inline, the bf16 A/B again without --weights; each 'new' first run hit the 30 s limit while the PTX cache was cold)
N=/tmp/node; BF="/tmp/l1b --backend cuda --prompt-tokens 16 --gen-tokens 128 --runs 5 --json"; for v in new main new:steps new main; do b=${v%%:*}; x=""; [ "$v" = "new:steps" ] && x="--decode-loop steps"; timeout 30 $N /tmp/L/$b/cli/poot.mjs bench $BF $x > $OUT/$v.json 2>$OUT/$v.err; echo "$v rc=$? ..."; done
