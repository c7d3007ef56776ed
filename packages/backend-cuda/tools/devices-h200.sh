#!/usr/bin/env bash
# Issue #16's before/after device call on the GPU machine (NVIDIA driver, no Node, no Vulkan loader): the trees
# before the devices merge (base) and after (new), each bundled by devices-bundle.sh, through the same entry points.
# Layout of G (carried, git-ignored): node.xz (or node.xz.part* split across calls: parts already copied to /tmp by an
# earlier call of the same machine are used), nm.tar.xz (node_modules: koffi, webgpu with dawn.node), base.tar.xz and
# new.tar.xz (DEST of devices-bundle.sh), debs/ (libvulkan1, libglvnd0, libegl1, libglx0: the NVIDIA ICD needs them).
#   usage, from the checkout's root: G=.gpu/gpu16 STEPS="prep conf-cuda ..." bash $G/devices-h200.sh
# Steps: prep (unpack, fixtures regenerated, the Llama-3.2-1B-shaped bf16 folder and Q8_0 GGUF), conf-B, fix-B
# (B = cuda|vulkan|wgpu: base then new), alloc (new), bench-B (base/new interleaved, then `poot compile`'s
# prediction), ttft-B (first token of `poot run` cold then warm, fresh POOT_CACHE_DIR per pair, new tree), anchor,
# vkleak (Vulkan create/dispose cycles in one process: bare instances and executors, decision 1650) and vkwarm (Vulkan
# first token cold vs warm with the pipeline cache on disk, decision 1645: ttft-vulkan's pairs on "hello world").
# $OUT gets run.log and results.tgz (devices-*.json, bench.jsonl: one poot bench --json a line, ttft.jsonl).
set -uo pipefail
G=${G:-.gpu/gpu16}
X=$PWD/.gpu/g16x
R=/tmp/devices-out
mkdir -p $R
N=${NODE:-/tmp/node}
exec > >(tee -a "$OUT/run.log") 2>&1
t0=$(date +%s)
el() { echo "[+$(($(date +%s) - t0))s] $*"; }
# DEADLINE (seconds from the start, default 500): no step starts after it, and each step's timeout ends by it.
DEADLINE=${DEADLINE:-500}
tmo() {
  local r=$((DEADLINE - ($(date +%s) - t0)))
  [ $r -lt 1 ] && r=1
  [ "$1" -lt $r ] && echo "$1" || echo $r
}
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export __EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json}
P=${BENCH_P:-16}
GEN=${BENCH_G:-128}
RUNS=${BENCH_RUNS:-3}
REPS=${BENCH_REPS:-2}
PAIRS=${TTFT_PAIRS:-5}
L1B=${L1B:-/tmp/l1b}
Q8=${Q8:-/tmp/gguf/llama-3.2-1b-random-Q8_0.gguf}

unpack() {
  el unpack
  for f in "$G"/node.xz.part*; do [ -f "$f" ] && cp "$f" /tmp/; done
  if [ ! -x $N ]; then
    if [ -f "$G/node.xz" ]; then xz -dc "$G/node.xz" > $N; else cat /tmp/node.xz.part* | xz -dc > $N; fi
    chmod +x $N
  fi
  $N --version || return 1
  mkdir -p $X
  [ -f "$G/nm.tar.xz" ] && tar -xJf "$G/nm.tar.xz" -C $X
  for v in base new; do [ -f "$G/$v.tar.xz" ] && { rm -rf "${X:?}/$v"; mkdir -p $X/$v && tar -xJf "$G/$v.tar.xz" -C $X/$v; }; done
  if ! ldconfig -p | grep -q libvulkan; then for f in "$G"/debs/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader
  uptime
}

prep() {
  el regen fixtures
  timeout $(tmo 120) $N $X/new/bin/make-fixture-ggufs.mjs fixtures | tail -3
  el make-hf
  [ -f $L1B/model.safetensors ] || timeout $(tmo 120) $N $X/new/bin/make-hf.mjs --out $L1B ${SHAPE:+--shape $SHAPE} | tail -1
  q8gguf
  ls -la $L1B /tmp/gguf
}

# The Llama-3.2-1B-shaped Q8_0 GGUF the ttft steps read ($Q8), made once per machine.
q8gguf() {
  el make-gguf
  [ -e $Q8 ] || timeout $(tmo 150) $N $X/new/bin/make-random-model.mjs --type Q8_0 --out-dir /tmp/gguf | tail -1
}

# conf B / fix B: base then new, one process each.
conf() { for v in base new; do el "conformance $1 $v"; OUT=$R LABEL=$v BACKEND=$1 timeout "$(tmo ${CONF_T:-150})" $N $X/$v/bin/devices-h200.gpu.mjs conformance | tail -4; done; }
fix() { for v in base new; do el "fixtures $1 $v"; OUT=$R LABEL=$v BACKEND=$1 FIXTURES_WEIGHTS=${FIXTURES_WEIGHTS:-f32} timeout "$(tmo ${FIX_T:-200})" $N $X/$v/bin/devices-h200.gpu.mjs fixtures fixtures | grep -v '"ok":true' | tail -30; done; }

alloc() {
  el alloc
  timeout $(tmo 90) $N $X/new/bin/cuda-decode-alloc.gpu.mjs
  echo "alloc rc=$?"
}

# bench B: REPS rounds of base, new (RUNS timed runs each), then the prediction of `poot compile` (both trees).
bench() {
  local b=$1
  for r in $(seq "$REPS"); do
    for v in base new; do
      el "bench $b $v $r"
      timeout "$(tmo ${BENCH_T:-120})" $N $X/$v/bin/poot.mjs bench $L1B --backend "$b" --prompt-tokens "$P" \
        --gen-tokens "$GEN" --runs "$RUNS" --json > /tmp/b.json 2> /tmp/b.err
      echo "rc=$?"
      tail -2 /tmp/b.err
      echo "BENCH $v $b $(tr -d '\n ' < /tmp/b.json)" >> "$R/bench.jsonl"
      tr -d '\n ' < /tmp/b.json | grep -o '"decodeTokS":[0-9.]*\|"decodeDispatchesPerToken":[0-9a-z.]*\|"decodeLoop":"[a-z-]*"\|"pageSize":[0-9]*\|"pages":[0-9]*' | tr '\n' ' '
      echo
    done
  done
  # The device greedy loop adds its argmax kernel to each step; with --decode-loop steps the step alone is counted.
  if [ "$b" = cuda ]; then
    el "bench $b new steps"
    timeout $(tmo 120) $N $X/new/bin/poot.mjs bench $L1B --backend cuda --prompt-tokens "$P" --gen-tokens "$GEN" \
      --runs 1 --decode-loop steps --json > /tmp/b.json 2> /tmp/b.err
    echo "BENCH new-steps $b $(tr -d '\n ' < /tmp/b.json)" >> "$R/bench.jsonl"
    tr -d '\n ' < /tmp/b.json | grep -o '"decodeTokS":[0-9.]*\|"decodeDispatchesPerToken":[0-9a-z.]*\|"decodeLoop":"[a-z-]*"' | tr '\n' ' '
    echo
  fi
  local ps pg
  ps=$(tr -d '\n ' < /tmp/b.json | grep -o '"pageSize":[0-9]*' | head -1 | cut -d: -f2)
  pg=$(tr -d '\n ' < /tmp/b.json | grep -o '"pages":[0-9]*' | head -1 | cut -d: -f2)
  for v in base new; do
    el "compile $b $v"
    timeout $(tmo 120) $N $X/$v/bin/poot.mjs compile $L1B --target "$b" --mode decode --context $((P + GEN)) \
      --page-size "${ps:-16}" --pages "${pg:-9}" --json > /tmp/c.json 2> /tmp/c.err
    echo "COMPILE $v $b $(tr -d '\n ' < /tmp/c.json | grep -o '"fusedDispatches":[0-9]*\|"launchesPerStep":[0-9]*' | tr '\n' ' ')" | tee -a "$R/bench.jsonl"
    tail -2 /tmp/c.err
  done
}

# par: the checks whose figures do not depend on time, as concurrent processes (16 host cores, one GPU): Vulkan and
# WebGPU fixture logits base and new (the new tree's fixtures include the quantized llama3-* checkpoints), CUDA's
# quantized checkpoints (new), the conformance suite on cuda, vulkan and wgpu (new), cuda-decode-alloc (new), and the
# Q8_0 GGUF the ttft steps read. Each process's stdout goes to $R/par-NAME.log.
par() {
  el par
  local q=llama3-gptq,llama3-awq,llama3-fp8,llama3-fp8-static pids=()
  run1() { local n=$1; shift; ( "$@" > "$R/par-$n.log" 2>&1; echo "rc=$?" >> "$R/par-$n.log" ) & pids+=($!); }
  [ -e $Q8 ] || run1 make-gguf timeout $(tmo 200) $N $X/new/bin/make-random-model.mjs --type Q8_0 --out-dir /tmp/gguf
  for b in ${PAR_FIX:-vulkan wgpu}; do
    for v in base new; do
      run1 "fix-$b-$v" env OUT=$R LABEL=$v BACKEND=$b FIXTURES_WEIGHTS=f32 timeout $(tmo ${FIX_T:-300}) $N $X/$v/bin/devices-h200.gpu.mjs fixtures fixtures
    done
  done
  run1 quant-cuda env OUT=$R LABEL=new-quant BACKEND=cuda FAMILIES=$q timeout $(tmo 200) $N $X/new/bin/devices-h200.gpu.mjs fixtures fixtures
  for b in ${PAR_CONF:-cuda vulkan wgpu}; do
    run1 "conf-$b" env OUT=$R LABEL=new BACKEND=$b timeout $(tmo 200) $N $X/new/bin/devices-h200.gpu.mjs conformance
  done
  [ -z "${PAR_ALLOC-x}" ] || run1 alloc timeout $(tmo 120) $N $X/new/bin/cuda-decode-alloc.gpu.mjs
  wait "${pids[@]}"
  for f in "$R"/par-*.log; do echo "== $f"; grep -v '"ok":true' "$f" | tail -${PAR_TAIL:-12}; done
  el "par done"
}

# ttft B: PAIRS pairs of fresh `poot run` processes (new tree), cold (empty POOT_CACHE_DIR, and TMPDIR: CUDA's JIT
# cache is under it) then warm (both as the cold run left them). XDG_CACHE_HOME, CUDA_CACHE_PATH (the driver's PTX
# JIT cache) and __GL_SHADER_DISK_CACHE_PATH (the NVIDIA Vulkan driver's pipeline cache) are the pair's folder too,
# so a cold start finds no cache of any layer. POOT_TIMING=1: each process's phase lines land in ttft.jsonl.
# ttft B [PAIRS [PROMPT]]: those pairs and that prompt instead of PAIRS (PAIRS_OTHER for b != cuda) and "Hello".
ttft() {
  local b=$1
  local pairs=$PAIRS
  [ "$b" = cuda ] || pairs=${PAIRS_OTHER:-$PAIRS}
  pairs=${2:-$pairs}
  for i in $(seq "$pairs"); do
    local d
    d=$(mktemp -d /tmp/poot-ttft-XXXX)
    for k in cold warm; do
      el "ttft $b $k $i"
      POOT_TIMING=1 XDG_CACHE_HOME=$d CUDA_CACHE_PATH=$d/nv __GL_SHADER_DISK_CACHE_PATH=$d/gl TMPDIR=$d POOT_CACHE_DIR=$d timeout $(tmo 120) $N $X/new/bin/first-token-once.mjs $N $X/new/bin/poot.mjs run $Q8 --backend "$b" \
        --prompt "${3:-Hello}" --max-tokens 1 --temperature 0 | sed "s/^/TTFT $b $k /" | tee -a "$R/ttft.jsonl"
    done
    rm -rf "$d"
  done
}

# vkleak: VKLEAK_CYCLES (default 60) create/dispose cycles per process, new tree (packages/cli/bench/vk-leak.gpu.ts):
# bare instances destroyed each cycle (retain 0: the driver's own per-process limit, if that is what #16 hit), bare
# devices with their instance destroyed each cycle (retain 0), then executors on VKLEAK_MODEL (default the committed fixtures/gguf/formats/llama3-Q4_0.gguf; $Q8 works, slower) with
# the shared instance kept (retain 1, decision 1650) and destroyed each cycle (retain 0, the tree before it). One JSON
# line per cycle (ok, ms, fds, threads, RSS, live Vulkan objects) in $R/vkleak.jsonl; the failures and a summary here.
vkleak() {
  local c=${VKLEAK_CYCLES:-60} m=${VKLEAK_MODEL:-fixtures/gguf/formats/llama3-Q4_0.gguf} run
  for run in ${VKLEAK_RUNS:-instance:0 device:0 executor:1 executor:0}; do
    el "vkleak ${run%:*} retain=${run#*:}"
    VKLEAK_RETAIN=${run#*:} timeout "$(tmo ${VKLEAK_T:-90})" $N $X/new/bin/vk-leak.gpu.mjs "${run%:*}" "$c" "$m" \
      > /tmp/vkleak.out 2>&1
    echo "rc=$?"
    cat /tmp/vkleak.out >> "$R/vkleak.jsonl"
    grep -v '"ok":true' /tmp/vkleak.out | head -4
    grep '"cycle":1,\|"cycle":30,\|"cycle":'"$c"',' /tmp/vkleak.out | cut -c1-300
  done
}

# vkwarm: Vulkan first token, cold then warm (the pipeline cache on disk, decision 1645), VKWARM_PAIRS (default 3)
# pairs of fresh processes through ttft: `POOT_TIMING=1 poot run $Q8 --backend vulkan --prompt "hello world"
# --max-tokens 1`, each pair a fresh POOT_CACHE_DIR / XDG_CACHE_HOME (and the NVIDIA driver's own shader cache).
vkwarm() {
  q8gguf
  ttft vulkan "${VKWARM_PAIRS:-3}" "hello world"
}

# anchor: transformers eager bf16 on the same folder (hf-anchor.py), for scale only.
anchor() {
  el anchor
  PYTHONUNBUFFERED=1 timeout "$(tmo 120)" python3 packages/backend-cuda/tools/hf-anchor.py $L1B eager --prompt-tokens "$P" \
    --gen-tokens "$GEN" --runs 3 | tee -a "$R/anchor.jsonl"
}

unpack || exit 1
for s in ${STEPS:-prep alloc bench-cuda conf-cuda ttft-cuda fix-cuda}; do
  [ $(($(date +%s) - t0)) -ge "$DEADLINE" ] && { echo "SKIPPED $s (deadline)"; continue; }
  case $s in
    prep) prep ;;
    regen) el regen fixtures; timeout $(tmo 120) $N $X/new/bin/make-fixture-ggufs.mjs fixtures | tail -3 ;;
    par) par ;;
    conf-*) conf "${s#conf-}" ;;
    fix-*) fix "${s#fix-}" ;;
    alloc) alloc ;;
    bench-*) bench "${s#bench-}" ;;
    ttft-*) ttft "${s#ttft-}" ;;
    anchor) anchor ;;
    vkleak) vkleak ;;
    vkwarm) vkwarm ;;
    *) echo "unknown step $s" ;;
  esac
  # At most 8 files come back from $OUT: every result file of the call in one archive, rewritten after each step.
  tar -czf "$OUT/results.tgz" -C $R .
done
el done
