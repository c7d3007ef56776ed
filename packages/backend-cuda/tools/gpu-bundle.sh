#!/usr/bin/env bash
# Builds .gpu/ at the repo root for a run on the GPU machine: Node and koffi through the shared gpu-pack,
# then tools/gpu-check.ts, tools/gpu-executor.ts and serve's bench/cuda-demo-model.gpu.ts bundled from sources (the `source` export condition, so no `pnpm build` first).
#   usage: packages/backend-cuda/tools/gpu-bundle.sh     then on the GPU machine:
#   xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && /tmp/node .gpu/gpu-check.mjs && /tmp/node .gpu/gpu-executor.mjs
#   && /tmp/node .gpu/cuda-demo-model.gpu.mjs   (from the repo root: it reads models/demo)
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
pack=../shared/tools/gpu-pack
[ -x "$pack" ] || pack=/work/shared/tools/gpu-pack
# gpu-pack appends to .git/info/exclude, which a worktree does not have (.git is a file there): skip that line.
sed 's|^grep -qx .*exclude$|true|' "$pack" > "${TMPDIR:-/tmp}/gpu-pack.$$"
bash "${TMPDIR:-/tmp}/gpu-pack.$$"
rm -f "${TMPDIR:-/tmp}/gpu-pack.$$"
esb="$(find node_modules/.pnpm -maxdepth 5 -path '*node_modules/esbuild/bin/esbuild' | head -1)"
# vitest is replaced by a small shim so the executor conformance suite runs without vitest.
for src in packages/backend-cuda/tools/gpu-check.ts packages/backend-cuda/tools/gpu-executor.ts packages/serve/bench/cuda-demo-model.gpu.ts; do
  entry=$(basename "${src%.ts}")
  "$esb" "$src" --bundle --platform=node --format=esm --target=node20 --conditions=source \
    --external:koffi --external:webgpu --alias:vitest=./packages/backend-cuda/tools/vitest-shim.ts \
    --banner:js="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);" \
    --outfile=".gpu/$entry.mjs" --log-level=warning
  echo "bundled .gpu/$entry.mjs"
done
