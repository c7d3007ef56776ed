#!/usr/bin/env bash
# Bundles one tree's programs for a before/after device call (issue #16's evidence): run it once in the tree before
# a change and once in the tree after, with the same DEST layout, so both measure through the same entry points.
#   usage: bash packages/backend-cuda/tools/devices-bundle.sh DEST        (from the tree's root, after pnpm install)
# A tree that lacks packages/cli/bench/devices-h200.gpu.ts (an older commit) gets it copied in from
# ENTRY_FROM (a newer checkout) first (its own hf-family.ts measures the same logits; it lacks the greedy-loop ids).
# DEST gets, all from sources (the `source` export condition, no build):
#   bin/poot.mjs (the CLI) with worker-node.js and sync-worker.js beside it (the CPU backend's threads, the WebGPU
#   device worker), bin/devices-h200.gpu.mjs (conformance and fixtures per --backend), bin/cuda-decode-alloc.gpu.mjs,
#   bin/vk-leak.gpu.mjs (Vulkan create/dispose cycles, when the tree has it), bin/make-fixture-ggufs.mjs (regenerates fixtures/generated.json's files on the machine), bin/make-hf.mjs and
#   bin/make-random-model.mjs (the Llama-3.2-1B-shaped models), assets/ (kernelgen's, at ../assets of bin/ as in an
#   install), package.json (the CLI's version) and bench-commit. koffi and webgpu stay external: put one node_modules
#   holding them (tools/gpu/pack.sh, backend-vulkan/tools/gpu-bundle.sh) in a folder above DEST.
set -euo pipefail
dest=$1
root=$(git rev-parse --show-toplevel)
cd "$root"
mkdir -p "$dest/bin"
if [ ! -f packages/cli/bench/devices-h200.gpu.ts ]; then
  cp "$ENTRY_FROM/packages/cli/bench/devices-h200.gpu.ts" packages/cli/bench/
fi
esb="$(find node_modules/.pnpm -maxdepth 5 -path '*node_modules/esbuild/bin/esbuild' | head -1)"
common=(--bundle --platform=node --format=esm --target=node20 --conditions=source --external:koffi --external:webgpu
  --minify-whitespace --alias:vitest=./packages/backend-cuda/tools/vitest-shim.ts
  --banner:js="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);" --log-level=error)
"$esb" packages/cli/bench/poot-cli.gpu.ts "${common[@]}" --outfile="$dest/bin/poot.mjs"
[ ! -f packages/backend-cpu/src/worker-node.ts ] || "$esb" packages/backend-cpu/src/worker-node.ts "${common[@]}" --outfile="$dest/bin/worker-node.js"
"$esb" packages/backend-wgpu/src/sync-worker.ts "${common[@]}" --outfile="$dest/bin/sync-worker.js"
"$esb" packages/cli/bench/devices-h200.gpu.ts "${common[@]}" --outfile="$dest/bin/devices-h200.gpu.mjs"
"$esb" packages/cli/bench/cuda-decode-alloc.gpu.ts "${common[@]}" --outfile="$dest/bin/cuda-decode-alloc.gpu.mjs"
# Vulkan create/dispose cycles (decision 1650); trees older than it have no entry point for it.
[ ! -f packages/cli/bench/vk-leak.gpu.ts ] || "$esb" packages/cli/bench/vk-leak.gpu.ts "${common[@]}" --outfile="$dest/bin/vk-leak.gpu.mjs"
"$esb" packages/models/scripts/make-fixture-ggufs.ts "${common[@]}" --outfile="$dest/bin/make-fixture-ggufs.mjs"
cp tools/random-model/make-hf.mjs "$dest/bin/make-hf.mjs"
cp "${ENTRY_FROM:-.}/packages/cli/bench/first-token-once.mjs" "$dest/bin/first-token-once.mjs"
# The random GGUF writer imports @poot/models' dist at run time: a copy importing it from source instead.
tmp=packages/serve/bench/.make-random-model.$$.mjs
sed -e '/^const modelsDist = /,/^const { QUANT_FORMATS, encodeGGUFHeader } = await import/d' \
  -e '1i import { QUANT_FORMATS, encodeGGUFHeader } from "@poot/models";' tools/random-model/make-random-model.mjs > "$tmp"
"$esb" "$tmp" "${common[@]}" --outfile="$dest/bin/make-random-model.mjs"
rm -f "$tmp"
rm -rf "$dest/assets" && cp -r packages/kernelgen/assets "$dest/assets"
printf '{ "name": "poot-gpu-bundle", "private": true, "type": "module", "version": "%s" }\n' \
  "$(node -p 'require("./packages/cli/package.json").version')" > "$dest/package.json"
sha=$(git rev-parse HEAD)
git diff --quiet HEAD -- . ':(exclude)bench-results' ':(exclude)packages/cli/bench' || sha="$sha-dirty"
echo "$sha" > "$dest/bench-commit"
du -sh "$dest"
