N=/tmp/node; L=$OUT/log3.txt
[ -x $N ] || { echo "no node"; exit 3; }
[ -f .gpu/cli/poot.mjs ] || { mkdir -p .gpu && tar -xJf .gpu-x/b.tar.xz -C .gpu; }
cp .gpu-x/worker-node.js .gpu/cli/worker-node.js
[ -d /tmp/l1b ] || $N .gpu/make-hf.mjs --out /tmp/l1b >> $L 2>&1
timeout 70 $N .gpu/cli/poot.mjs bench /tmp/l1b --backend cuda --prompt-tokens 16 --gen-tokens 32 --runs 1 --json --gpu-layers 8 >> $L 2>&1; echo "ngl8 rc=$?" | tee -a $L
timeout 100 $N .gpu/cli/poot.mjs bench /tmp/l1b --backend cuda --prompt-tokens 16 --gen-tokens 8 --runs 1 --json --gpu-layers 16 --device-memory 1300M >> $L 2>&1; echo "paged rc=$?" | tee -a $L
grep -o '"decodeTokS":[^,]*\|"pageIns":[^,]*\|"prefillTokS":[^,]*\|"unitsPerToken":[^,]*\|"handoffsPerToken":[^,]*\|"stallMs":[^,]*' $L
