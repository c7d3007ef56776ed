// Decode GEMV kernels written in the kernel DSL for memory bandwidth: one warp per output row of a
// row-major [N, K] weight, 16-byte loads (8 bf16 or 4 f32 per lane), a subgroup sum per row. Test and tool kernels
// (the driver, launch and CUDA-graph checks, tools/gpu-bench's bandwidth figures): the executor runs kernelgen's
// GEMVs, so these are no longer part of the package (decision 2711).

import { kernel, type Builder, type Val } from "@poot/kernel-dsl";

/** Threads per workgroup of the row GEMVs (8 warps, so 8 rows per workgroup). */
export const GEMV_ROWS_WG = 256;

/** Workgroups of a row GEMV over `n` rows with warps of `subgroupSize` lanes. */
export function gemvRowsGrid(n: number, subgroupSize = 32): [number, number, number] {
  return [Math.ceil(n / (GEMV_ROWS_WG / subgroupSize)), 1, 1];
}

type V4 = Val<"vec4<f32>">;

/** The row of this warp, and the final subgroup sum written by lane 0 (outside divergent control flow). */
function rowGemv(
  k: Builder,
  body: (row: Val<"u32">, acc: { set(v: Val<"f32">): void; get(): Val<"f32"> }) => void,
): void {
  const { buffer, uniform, wid, u32, f32, var_, let_, if_, subgroupAdd, subgroupId, subgroupLane, subgroupSize } = k;
  const y = buffer("y", "f32", "write");
  const N = uniform("N", "u32");
  const row = let_(wid.x.mul(u32(GEMV_ROWS_WG).div(subgroupSize)).add(subgroupId), "row");
  const acc = var_(f32(0), "acc");
  if_(row.lt(N), () => body(row, { set: (v) => acc.set(v), get: () => acc }));
  const total = subgroupAdd(acc);
  if_(subgroupLane.eq(0).and(row.lt(N)), () => y.set(row, total));
}

/** Σ of the lane products of two vec4<f32>, accumulated into `acc` with one rounding per fma. */
function dot4(k: Builder, a: V4, b: V4, acc: Val<"f32">): Val<"f32"> {
  const { fma } = k;
  return fma(a.w, b.w, fma(a.z, b.z, fma(a.y, b.y, fma(a.x, b.x, acc))));
}

/** The bf16 row GEMV body: each lane takes `unroll` 16-byte words per iteration (more loads in flight). */
function rowsBf16(name: string, unroll: number) {
  return kernel(name, { workgroupSize: [GEMV_ROWS_WG, 1, 1] }, (k) => {
    const { buffer, uniform, let_, for_, unpack, vec, subgroupLane, subgroupSize } = k;
    const W = buffer("W", "vec4<u32>", "read");
    const x = buffer("x", "vec4<f32>", "read");
    const K8 = uniform("K8", "u32");
    rowGemv(k, (row, acc) => {
      for_(
        subgroupLane,
        K8,
        subgroupSize.mul(unroll),
        (c0) => {
          // Issue every load of the iteration before the arithmetic, so `unroll` words per lane are in flight.
          const cs = Array.from({ length: unroll }, (_, u) => let_(c0.add(subgroupSize.mul(u)), `c${u}`));
          const ws = cs.map((c, u) => let_(W.at(row.mul(K8).add(c)), `w${u}`));
          cs.forEach((c, u) => {
            const w = ws[u]!;
            const xa = let_(x.at(c.mul(2)), `xa${u}`);
            const xb = let_(x.at(c.mul(2).add(1)), `xb${u}`);
            const p0 = let_(unpack("bf16x2", w.x), `p0_${u}`);
            const p1 = let_(unpack("bf16x2", w.y), `p1_${u}`);
            const p2 = let_(unpack("bf16x2", w.z), `p2_${u}`);
            const p3 = let_(unpack("bf16x2", w.w), `p3_${u}`);
            const wa = vec("vec4<f32>", p0.x, p0.y, p1.x, p1.y);
            const wb = vec("vec4<f32>", p2.x, p2.y, p3.x, p3.y);
            acc.set(dot4(k, wb, xb, dot4(k, wa, xa, acc.get())));
          });
        },
        "c",
      );
    });
  });
}

/**
 * y[n] = Σ_k W[n, k] · x[k] with W bf16, row-major [N, K] read as vec4<u32> words (8 bf16, element 2j in
 * the low half of word j), x f32 read as vec4<f32>. K must be a multiple of 8. Uniforms N, K8 = K / 8.
 * Workgroup 256 (8 warps, one row each); grid {@link gemvRowsGrid}(N).
 */
export const gemvRowsBf16 = rowsBf16("gemv_rows_bf16", 1);

/**
 * {@link gemvRowsBf16} with two 16-byte words per lane per iteration. K must be a multiple of
 * 8 · 2 · subgroup size (512 on NVIDIA). Same uniforms and grid.
 */
export const gemvRowsBf16x2 = rowsBf16("gemv_rows_bf16_x2", 2);

/**
 * y[n] = Σ_k W[n, k] · x[k] with W f32 row-major [N, K] read as vec4<f32>. K must be a multiple of 4.
 * Uniforms N, K4 = K / 4. Workgroup 256; grid {@link gemvRowsGrid}(N).
 */
export const gemvRowsF32 = kernel("gemv_rows_f32", { workgroupSize: [GEMV_ROWS_WG, 1, 1] }, (k) => {
  const { buffer, uniform, let_, for_, subgroupLane, subgroupSize } = k;
  const W = buffer("W", "vec4<f32>", "read");
  const x = buffer("x", "vec4<f32>", "read");
  const K4 = uniform("K4", "u32");
  rowGemv(k, (row, acc) => {
    for_(
      subgroupLane,
      K4,
      subgroupSize,
      (c) => {
        const w = let_(W.at(row.mul(K4).add(c)), "w");
        acc.set(dot4(k, w, x.at(c), acc.get()));
      },
      "c",
    );
  });
});
