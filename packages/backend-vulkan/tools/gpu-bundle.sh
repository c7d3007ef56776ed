#!/usr/bin/env bash
# Builds the bundle that runs the Vulkan and WebGPU backends' checks on the GPU machine (NVIDIA driver, but neither
# Node nor libvulkan there): packages/cli/bench/gpu-apis-h200.gpu.ts and the wgpu device worker bundled with
# esbuild, Node, koffi and Dawn's dawn.node (xz), kernelgen's kernel assets, the repo's fixtures/hf families,
# and (in DEST/../.gl) the Vulkan loader and glvnd .debs.
#   usage: packages/backend-vulkan/tools/gpu-bundle.sh [DEST]      (default DEST: <repo root>/.gpu-vk)
# DEST and DEST/../.gl must be git-ignored in the checkout that travels (.git/info/exclude). The layout:
#   DEST/bin/{gpu-apis-h200.js,sync-worker.js}  DEST/assets (= bin/../assets, where kernelgen looks)
#   DEST/node_modules/{koffi,@koromix/koffi-linux-x64,webgpu}  DEST/package.json  DEST/fixtures/hf/<family>
# On the GPU machine, from the checkout's root (carry .gpu-vk and .gl):
#   for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; cp -r .gpu-vk /tmp/g
#   xz -d /tmp/g/node.xz /tmp/g/node_modules/webgpu/dist/linux-x64/dawn.node.xz; chmod +x /tmp/g/node
#   export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
#   export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
#   BACKEND=vulkan /tmp/g/node /tmp/g/bin/gpu-apis-h200.js /tmp/g/fixtures/hf models/demo "$OUT"   (then BACKEND=wgpu)
# The Llama-3.2-1B-shaped bf16 bench on both backends in one call: bash packages/backend-vulkan/tools/gpu-bench-1b.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
dest=$(mkdir -p "${1:-$root/.gpu-vk}" && cd "${1:-$root/.gpu-vk}" && pwd)
gl="$(dirname "$dest")/.gl"
mkdir -p "$dest/bin" "$dest/node_modules/@koromix" "$dest/fixtures/hf"

# Node (the binary running this script: the bundles target its version).
[ -s "$dest/node.xz" ] || { echo "compressing $(command -v node) (minutes, once)"; xz -T1 -9 -c "$(readlink -f "$(command -v node)")" > "$dest/node.xz.tmp" && mv "$dest/node.xz.tmp" "$dest/node.xz"; }

# koffi and its linux-x64 prebuilt as plain files (pnpm's links do not travel).
k=$(readlink -f packages/backend-vulkan/node_modules/koffi)
rm -rf "$dest/node_modules/koffi" "$dest/node_modules/@koromix/koffi-linux-x64"
cp -rL "$k" "$dest/node_modules/koffi"
# Its C/C++ sources, vendored libraries and docs are not needed to load it (what travels is limited to 64 MiB).
rm -rf "$dest/node_modules/koffi/vendor" "$dest/node_modules/koffi/doc"
find "$dest/node_modules/koffi/src" -type f ! -name '*.js' ! -name '*.cjs' ! -name '*.json' -delete
pre=$(find node_modules/.pnpm -maxdepth 4 -type d -path '*@koromix/koffi-linux-x64' | head -1)
[ -n "$pre" ] && cp -rL "$pre" "$dest/node_modules/@koromix/koffi-linux-x64" && rm -rf "$dest/node_modules/@koromix/koffi-linux-x64/musl_x64"

# Dawn: the webgpu package's loader and its linux-x64 addon only (compressed; unpacked there).
w=$(find node_modules/.pnpm -maxdepth 3 -type d -path '*node_modules/webgpu' | head -1)
mkdir -p "$dest/node_modules/webgpu/dist/linux-x64"
cp "$w/index.js" "$w/package.json" "$dest/node_modules/webgpu/"
[ -s "$dest/node_modules/webgpu/dist/linux-x64/dawn.node.xz" ] || xz -T1 -6 -c "$w/dist/linux-x64/dawn.node" > "$dest/node_modules/webgpu/dist/linux-x64/dawn.node.xz"

# kernelgen reads its library kernels from ../assets relative to its module (bin/ in the bundle).
rm -rf "$dest/assets" && cp -r packages/kernelgen/assets "$dest/assets"
# ESM for bin/*.js; poot's version (`cliVersion` reads ../package.json relative to the bundle).
printf '{ "name": "poot-gpu-bundle", "private": true, "type": "module", "version": "%s" }\n' "$(node -p 'require("./packages/cli/package.json").version')" > "$dest/package.json"

esb="$(find node_modules/.pnpm -maxdepth 5 -path '*node_modules/esbuild/bin/esbuild' | head -1)"
common=(--bundle --platform=node --format=esm --target=node20 --conditions=source --external:koffi --external:webgpu
  --minify-whitespace --minify-syntax
  --banner:js="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);" --log-level=warning)
# The conformance suite calls vitest's describe/it/expect: the shim backend-cuda's GPU checks use stands in.
"$esb" packages/cli/bench/gpu-apis-h200.gpu.ts "${common[@]}" --alias:vitest=./packages/backend-cuda/tools/vitest-shim.ts --outfile="$dest/bin/gpu-apis-h200.js"
"$esb" packages/backend-wgpu/src/sync-worker.ts "${common[@]}" --outfile="$dest/bin/sync-worker.js"
# The bench-result writer (decision 2110): the call's reports as a poot-bench-result/1 file; it reads the schema from
# the checkout, so it runs from the carried bundle, not a copy outside the tree. The commit bundled goes beside it.
"$esb" packages/backend-cuda/tools/cuda-bench-result-cli.ts "${common[@]}" --alias:vitest=./packages/backend-cuda/tools/vitest-shim.ts --outfile="$dest/bin/bench-result.js"
sha=$(git rev-parse HEAD); git diff --quiet HEAD -- . ':(exclude)bench-results' || sha="$sha-dirty"; echo "$sha" > "$dest/bench-commit"

# Fixture families: f32 weights and transformers' references (no bf16 weights, no tokenizer: the checks pass ids).
for fam in llama3 qwen3 gemma3 olmoe qwen35; do
  mkdir -p "$dest/fixtures/hf/$fam"
  for f in config.json generation_config.json model.safetensors reference.json reference.safetensors; do
    [ -f "$root/fixtures/hf/$fam/$f" ] && cp "$root/fixtures/hf/$fam/$f" "$dest/fixtures/hf/$fam/"
  done
done

# The Vulkan loader and glvnd (amd64) as .debs, unpacked with dpkg -x there (device README): with libvulkan1 alone
# the NVIDIA ICD (libGLX_nvidia, which needs libGLdispatch) fails with VK_ERROR_INCOMPATIBLE_DRIVER.
mkdir -p "$gl" /tmp/amd64/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
updated=0
for pkg in libvulkan1 libglvnd0 libegl1 libglx0; do
  [ -n "$(ls "$gl/${pkg}"_*.deb 2>/dev/null)" ] && continue
  # shellcheck disable=SC2086
  [ $updated = 1 ] || { apt-get $o -q update >/dev/null; updated=1; }
  # shellcheck disable=SC2086
  (cd "$gl" && apt-get $o -q download "$pkg" >/dev/null)
done
du -sh "$dest" "$gl"
