#!/usr/bin/env bash
# On the GPU machine: `poot bench` of the Llama-3.2-1B-shaped bf16 model (tools/random-model/make-hf.mjs) on the
# Vulkan and the WebGPU backend in one call, one process per backend (Dawn and the Vulkan executor each load the
# driver), from the bundle gpu-bundle.sh built (.gpu-vk, and the loader .debs in .gl; both carried).
#   usage, from the checkout's root: bash packages/backend-vulkan/tools/gpu-bench-1b.sh
#   env: OUT (reports: gpu-apis-h200-<backend>.json, bench-<backend>.log; default /tmp/gpu-bench-1b), SHAPE
#   (make-hf's --shape, default llama-3.2-1b; small|tiny for a smoke run), BENCH_P/BENCH_G/BENCH_RUNS (default
#   128/64/3), STEP_TIMEOUT (seconds per backend, default 240), BUNDLE (default .gpu-vk), UNPACK=0 to use an
#   unpacked bundle in place (a smoke run here on lavapipe: BUNDLE=/tmp/g UNPACK=0 VK_DRIVER_FILES=<lvp_icd.json>).
set -uo pipefail
out=${OUT:-/tmp/gpu-bench-1b}
bundle=${BUNDLE:-.gpu-vk}
model=/tmp/llama-1b-${SHAPE:-llama-3.2-1b}
mkdir -p "$out"
t0=$(date +%s)
carried=$bundle
if [ "${UNPACK:-1}" = 1 ]; then
  # The Vulkan loader and glvnd (the NVIDIA ICD needs both; the image has neither), then the bundle's Node and Dawn.
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
  rm -rf /tmp/g && cp -r "$bundle" /tmp/g && bundle=/tmp/g
  xz -d "$bundle/node.xz" "$bundle/node_modules/webgpu/dist/linux-x64/dawn.node.xz" && chmod +x "$bundle/node"
fi
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export __EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json}
"$bundle/node" tools/random-model/make-hf.mjs --out "$model" --shape "${SHAPE:-llama-3.2-1b}" || exit 1
echo "unpacked and model written in $(( $(date +%s) - t0 )) s"
rc=0
# HFUSION_MODES="grouped shared-epilogue": one bench per --horizontal-fusion mode (decision 0402), each mode's
# reports in "$out/<mode>".
for mode in ${HFUSION_MODES:-default}; do
  o=$out; hf=()
  [ "$mode" = default ] || { o=$out/$mode; hf=(BENCH_HFUSION="$mode"); mkdir -p "$o"; }
  for b in vulkan wgpu; do
    env "${hf[@]}" BACKEND=$b SKIP_CONFORMANCE=1 SKIP_FIXTURES=1 BENCH_P=${BENCH_P:-128} BENCH_G=${BENCH_G:-64} BENCH_RUNS=${BENCH_RUNS:-3} \
      timeout "${STEP_TIMEOUT:-240}" "$bundle/node" "$bundle/bin/gpu-apis-h200.js" "$bundle/fixtures/hf" "$model" "$o" > "$o/bench-$b.log" 2>&1
    r=$?
    [ $r = 0 ] || rc=$r
    echo "== $b ($mode): exit $r after $(( $(date +%s) - t0 )) s"
    grep -E '^(bench|[0-9]+ failure)' "$o/bench-$b.log" | cut -c1-1500
  done
done
# Every mode's reports as one poot-bench-result/1 file under $out/bench-results (decision 2110; copy it to the repo's
# bench-results/ for the docs charts). Run from the carried bundle: the writer reads the schema from the checkout.
reports=()
for mode in ${HFUSION_MODES:-default}; do
  o=$out; [ "$mode" = default ] || o=$out/$mode
  for b in vulkan wgpu; do [ -s "$o/gpu-apis-h200-$b.json" ] && reports+=(--report "$mode:$o/gpu-apis-h200-$b.json"); done
done
[ ${#reports[@]} -gt 0 ] && "$bundle/node" "$carried/bin/bench-result.js" --name gpu-apis-1b --backend vulkan --backend wgpu \
  --title "poot --backend vulkan and wgpu on the GPU machine, Llama-3.2-1B-shaped bf16" "${reports[@]}" \
  --commit "$(cat "$carried/bench-commit" 2>/dev/null || echo unknown)" --out "$out/bench-results" \
  --device "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)" \
  --command "bash packages/backend-vulkan/tools/gpu-bench-1b.sh (HFUSION_MODES=${HFUSION_MODES:-default})"
exit $rc
