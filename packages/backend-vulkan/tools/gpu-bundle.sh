#!/usr/bin/env bash
# Builds .gpu/ (Node, koffi, bundled entry points) and .gl/ (the Vulkan loader .debs) at the repo root for a run
# on the GPU machine, which has the NVIDIA driver but neither Node nor libvulkan. Then, on the GPU machine:
#   for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node
#   /tmp/node .gpu/gpu-vulkan.mjs; python3 packages/backend-vulkan/tools/make-llama1b.py /tmp/llama1b .gpu/llama-3.2-1b.json
#   /tmp/node .gpu/vulkan-demo-model.gpu.mjs
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
pack=/work/shared/tools/gpu-pack
# gpu-pack appends to .git/info/exclude, which a worktree does not have (.git is a file there): skip that line.
sed 's|^grep -qx .*exclude$|true|' "$pack" > "${TMPDIR:-/tmp}/gpu-pack.$$"
bash "${TMPDIR:-/tmp}/gpu-pack.$$"
rm -f "${TMPDIR:-/tmp}/gpu-pack.$$"
esb="$(find node_modules/.pnpm -maxdepth 5 -path '*node_modules/esbuild/bin/esbuild' | head -1)"
# The conformance checks call vitest's expect: a small shim stands in for vitest there.
for src in packages/backend-vulkan/tools/gpu-vulkan.ts packages/serve/bench/vulkan-demo-model.gpu.ts; do
  entry=$(basename "${src%.ts}")
  "$esb" "$src" --bundle --platform=node --format=esm --target=node20 --conditions=source \
    --external:koffi --external:webgpu --alias:vitest=./packages/backend-cuda/tools/vitest-shim.ts \
    --banner:js="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);" \
    --outfile=".gpu/$entry.mjs" --log-level=warning
  echo "bundled .gpu/$entry.mjs"
done
cp ../shared/fixtures/configs/llama-3.2-1b.json .gpu/ 2>/dev/null || cp /work/shared/fixtures/configs/llama-3.2-1b.json .gpu/
mkdir -p .gl /tmp/amd64/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
[ -n "$(ls .gl/*.deb 2>/dev/null)" ] || { apt-get $o -q update >/dev/null; (cd .gl && apt-get $o -q download libvulkan1 >/dev/null); }
du -sh .gpu .gl
