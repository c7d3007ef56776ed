set -u
G=.gpu-x; N=/tmp/node; L=$OUT/log.txt; t0=$(date +%s)
cat /tmp/nodeA $G/nodeB | xz -dc > $N && chmod +x $N && $N --version
mkdir -p .gpu && tar -xJf $G/b.tar.xz -C .gpu
step() { local name=$1 lim=$2; shift 2; local s=$(date +%s); echo "=== $name: $*" >> $L; timeout $lim "$@" >> $L 2>&1; local rc=$?; echo "=== $name rc=$rc $(( $(date +%s) - s ))s (at $(( $(date +%s) - t0 ))s)" | tee -a $L; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >> $L
step conformance 60 $N .gpu/gpu-executor.mjs
step make-hf 60 $N .gpu/make-hf.mjs --out /tmp/l1b
BF="/tmp/l1b --backend cuda --prompt-tokens 16 --gen-tokens 128 --runs 3 --json"
step bf16-all-1 45 $N .gpu/cli/poot.mjs bench $BF
step bf16-all-2 30 $N .gpu/cli/poot.mjs bench $BF
step bf16-ngl8 60 $N .gpu/cli/poot.mjs bench /tmp/l1b --backend cuda --prompt-tokens 16 --gen-tokens 32 --runs 1 --json --gpu-layers 8
step bf16-paged-half 60 $N .gpu/cli/poot.mjs bench /tmp/l1b --backend cuda --prompt-tokens 16 --gen-tokens 16 --runs 1 --json --gpu-layers 16 --device-memory 1300M
step fixtures 110 $N .gpu/cuda-fixtures.gpu.mjs fixtures
echo "total $(( $(date +%s) - t0 ))s" | tee -a $L
grep -o '"decodeTokS":[0-9.]*\|"graphLaunchesPerToken":[0-9.a-z]*\|"decodeDispatchesPerToken":[0-9.a-z]*\|"pageIns":[0-9]*\|"fractionOfFloor":[0-9.]*' $L | tr '\n' ' '
tail -c 3000 $L
