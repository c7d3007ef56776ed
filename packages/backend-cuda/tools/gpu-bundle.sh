#!/usr/bin/env bash
# Builds .gpu/ at the repo root for a run on the GPU machine: Node and koffi through the shared gpu-pack,
# then tools/gpu-check.ts bundled from sources (the `source` export condition, so no `pnpm build` first).
#   usage: packages/backend-cuda/tools/gpu-bundle.sh     then on the GPU machine:
#   xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && /tmp/node .gpu/gpu-check.mjs
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
"$esb" packages/backend-cuda/tools/gpu-check.ts --bundle --platform=node --format=esm --target=node20 --conditions=source \
  --external:koffi --external:webgpu \
  --banner:js="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);" \
  --outfile=.gpu/gpu-check.mjs --log-level=warning
echo "bundled .gpu/gpu-check.mjs"
