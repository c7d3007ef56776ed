#!/usr/bin/env bash
# Bundles bench/serve-cuda.gpu.ts (from sources, like packages/backend-cuda/tools/gpu-bundle.sh) into .gpu/ with
# Node and koffi, for the GPU machine:  xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && /tmp/node .gpu/serve-cuda.gpu.mjs
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
bash tools/gpu/pack.sh
esb="$(find node_modules/.pnpm -maxdepth 5 -path '*node_modules/esbuild/bin/esbuild' | head -1)"
"$esb" packages/serve/bench/serve-cuda.gpu.ts --bundle --platform=node --format=esm --target=node20 --conditions=source \
  --external:koffi --external:webgpu \
  --banner:js="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);" \
  --outfile=".gpu/serve-cuda.gpu.mjs" --log-level=warning
echo "bundled .gpu/serve-cuda.gpu.mjs"
