#!/usr/bin/env bash
# Builds .gpu/ at the repo root for a run on the GPU machine: Node and koffi through tools/gpu/pack.sh,
# then tools/gpu-check.ts, tools/gpu-executor.ts and serve's bench/cuda-demo-model.gpu.ts bundled from sources (the `source` export condition, so no `pnpm build` first).
#   usage: packages/backend-cuda/tools/gpu-bundle.sh     then on the GPU machine:
#   xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && /tmp/node .gpu/gpu-check.mjs && /tmp/node .gpu/gpu-executor.mjs
#   && /tmp/node .gpu/cuda-demo-model.gpu.mjs   (from the repo root: it reads models/demo)
#   Llama-3.2-1B-shaped: /tmp/node .gpu/make-hf.mjs --out /tmp/l1b && /tmp/node .gpu/cli/poot.mjs bench /tmp/l1b
#   --backend cuda --weights bf16 --prompt-tokens 16 --gen-tokens 128; .gpu/cuda-profile.gpu.mjs /tmp/l1b (per kernel);
#   .gpu/cuda-decode-alloc.gpu.mjs (a decode step allocates no device memory); .gpu/cuda-fixtures.gpu.mjs FIXTURES (the
#   fixtures/ hf families and gguf files against their own reference logits; run `pnpm fixtures` first so the
#   regenerated GGUF files are there to copy);
#   packed GGUFs of the same shape: /tmp/node .gpu/make-random-model.mjs --type Q8_0|Q4_K_M|F16 --out-dir /tmp/gguf
#   bench JSON (poot-bench-result/1, decision 2110): gpu-check.mjs writes $OUT/bench-results/ itself; for `poot bench
#   --backend cuda --json` runs, /tmp/node .gpu/cuda-bench-result.mjs --name cuda-decode --title T --commit "$(cat
#   .gpu/bench-commit)" --out $OUT/bench-results --json new:bf16:FILE ... --anchors anchor.jsonl (see gpu-ab.sh)
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
bash tools/gpu/pack.sh
esb="$(find node_modules/.pnpm -maxdepth 5 -path '*node_modules/esbuild/bin/esbuild' | head -1)"
# vitest is replaced by a small shim so the executor conformance suite runs without vitest.
for src in packages/backend-cuda/tools/gpu-check.ts packages/backend-cuda/tools/gpu-executor.ts packages/backend-cuda/tools/cuda-bench-result-cli.ts packages/serve/bench/cuda-demo-model.gpu.ts \
  packages/cli/bench/poot-cli.gpu.ts packages/serve/bench/cuda-profile.gpu.ts packages/cli/bench/cuda-decode-alloc.gpu.ts packages/serve/bench/cuda-vs-eval.gpu.ts packages/cli/bench/cuda-fixtures.gpu.ts \
  packages/cli/bench/cuda-greedy.gpu.ts; do
  entry=$(basename "${src%.ts}")
  "$esb" "$src" --bundle --platform=node --format=esm --target=node20 --conditions=source \
    --external:koffi --external:webgpu --alias:vitest=./packages/backend-cuda/tools/vitest-shim.ts \
    --banner:js="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);" \
    --outfile=".gpu/$entry.mjs" --log-level=warning
  echo "bundled .gpu/$entry.mjs"
done
# The bench-result writers record the commit bundled (the GPU machine's copy of the tree has no git history).
mv .gpu/cuda-bench-result-cli.mjs .gpu/cuda-bench-result.mjs
sha=$(git rev-parse HEAD)
git diff --quiet HEAD -- . ':(exclude)bench-results' || sha="$sha-dirty"
echo "$sha" > .gpu/bench-commit
# The CLI reads its version from ../package.json next to its module: it lives in .gpu/cli/ beside a stub.
mkdir -p .gpu/cli && mv .gpu/poot-cli.gpu.mjs .gpu/cli/poot.mjs
node -e 'const v = require("./packages/cli/package.json").version; require("fs").writeFileSync(".gpu/package.json", JSON.stringify({ name: "poot-gpu-bundle", private: true, version: v, type: "module" }) + "\n")'
# The CPU backend starts its threads from worker-node.js beside the module that imports it (as dist/ lays it out in
# an install): bundle that entry beside the CLI, or a --gpu-layers split's CPU half cannot start its threads.
"$esb" packages/backend-cpu/src/worker-node.ts --bundle --platform=node --format=esm --target=node20 --conditions=source \
  --banner:js="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);" \
  --outfile=.gpu/cli/worker-node.js --log-level=warning
# kernelgen's imported kernels are read from ../assets next to the module: beside cli/ as in an install (the CLI
# bundle refuses to start without them, issue #22; bundles directly in .gpu/ look in the repo root's assets/).
rm -rf .gpu/assets && cp -r packages/kernelgen/assets .gpu/assets
# The random Llama-3.2-1B-shaped model is written on the GPU machine's disk by a dependency-free script.
cp tools/random-model/make-hf.mjs .gpu/make-hf.mjs
# The random GGUF writer imports @poot/models' dist at run time: bundle a copy importing it from source instead.
tmp=packages/serve/bench/.make-random-model.$$.mjs
sed -e '/^const modelsDist = /,/^const { QUANT_FORMATS, encodeGGUFHeader } = await import/d' \
  -e '1i import { QUANT_FORMATS, encodeGGUFHeader } from "@poot/models";' tools/random-model/make-random-model.mjs > "$tmp"
"$esb" "$tmp" --bundle --platform=node --format=esm --target=node20 --conditions=source --outfile=.gpu/make-random-model.mjs --log-level=warning
rm -f "$tmp"
echo "bundled .gpu/make-random-model.mjs"
