#!/usr/bin/env bash
# tools/gpu/pack.sh: fills .gpu/ at the repo root with what a run on the GPU machine needs besides the working tree.
# That machine has CUDA, Python and PyTorch but no Node.js, so we bring one: this Node binary (xz-compressed), koffi
# with its linux-x64 prebuilt as plain files (pnpm's symlinks do not survive the transfer), and each ENTRY.ts given
# bundled by esbuild into .gpu/<name>.mjs with everything inlined except koffi and webgpu (native add-ons).
#   usage: bash tools/gpu/pack.sh [ENTRY.ts ...]      (the backend-cuda and serve bundle scripts call it)
#   there: xz -dc .gpu/node.xz > /tmp/node && chmod +x /tmp/node && /tmp/node .gpu/<name>.mjs
# .gpu/ is git-ignored (.gitignore), so it travels as an ignored path named in the run's carry list.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
out=.gpu
mkdir -p "$out"

if [ ! -s "$out/node.xz" ]; then
  echo "compressing $(command -v node) into $out/node.xz (about a minute, once)"
  xz -T2 -6 -c "$(readlink -f "$(command -v node)")" > "$out/node.xz.tmp" && mv "$out/node.xz.tmp" "$out/node.xz"
fi

# koffi as installed by pnpm for any workspace package, resolved to its real folder.
koffi=""
for pkg in packages/*; do
  if [ -e "$pkg/node_modules/koffi" ]; then koffi=$(readlink -f "$pkg/node_modules/koffi"); break; fi
done
if [ -n "$koffi" ]; then
  rm -rf "$out/node_modules/koffi" "$out/node_modules/@koromix"
  mkdir -p "$out/node_modules/@koromix"
  cp -rL "$koffi" "$out/node_modules/koffi"
  # The prebuilt binary package sits beside koffi in pnpm's store (its optional dependency).
  prebuilt="$(dirname "$koffi")/@koromix/koffi-linux-x64"
  [ -d "$prebuilt" ] || prebuilt=$(find node_modules/.pnpm -maxdepth 4 -type d -path '*@koromix/koffi-linux-x64' | head -1)
  if [ -n "$prebuilt" ] && [ -d "$prebuilt" ]; then
    cp -rL "$prebuilt" "$out/node_modules/@koromix/koffi-linux-x64"
    rm -rf "$out/node_modules/@koromix/koffi-linux-x64/musl_x64"   # glibc there; the musl build only adds size
  else
    echo "warning: koffi's linux-x64 prebuilt was not found; the bundle will not load native libraries" >&2
  fi
else
  echo "warning: no workspace package has koffi installed (run pnpm install); nothing of it was packed" >&2
fi

esbuild=$(find node_modules/.pnpm -maxdepth 5 -path '*node_modules/esbuild/bin/esbuild' | head -1)
[ -n "$esbuild" ] || { echo "esbuild not found under node_modules/.pnpm (run pnpm install)" >&2; exit 1; }
for entry in "$@"; do
  name=$(basename "${entry%.*}")
  # `source` condition: workspace packages are bundled from their TypeScript sources, no build needed first.
  "$esbuild" "$entry" --bundle --platform=node --format=esm --target=node20 --conditions=source \
    --external:koffi --external:webgpu \
    --banner:js="import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);" \
    --outfile="$out/$name.mjs" --log-level=warning
  echo "bundled $out/$name.mjs"
done
echo "size of $out: $(du -sh "$out" | cut -f1) (the working tree plus carried paths must stay under 64 MiB)"
