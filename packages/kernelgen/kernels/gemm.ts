// Tiled GEMM: C[M, N] = A[M, K] · B with B [K, N] or [N, K] (uniform transB), TILE×TILE tiles staged in shared
// memory. B may be f32 or bf16 (widened on load); loads past the matrix edge read as zero, so any M, N, K works.

import { kernel } from "@poot/kernel-dsl";
import type { Builder } from "@poot/kernel-dsl";

/** Workgroup [TILE, TILE]; grid [ceil(N/TILE), ceil(M/TILE)]; each thread accumulates one C element in f32. */
function gemmBody(elem: "f32" | "bf16") {
  return (k: Builder): void => {
    const { buffer, uniform, shared, spec, lid, wid, f32, u32, var_, let_, for_, if_, barrier } = k;
    const A = buffer("A", "f32", "read");
    const Bm = buffer("B", elem, "read");
    const C = buffer("C", "f32", "write");
    const M = uniform("M", "u32");
    const N = uniform("N", "u32");
    const K = uniform("K", "u32");
    const transB = uniform("transB", "u32");
    const T = spec("TILE");
    const As = shared("As", "f32", { spec: "TILE2" });
    const Bs = shared("Bs", "f32", { spec: "TILE2" });
    const lx = let_(lid.x, "lx");
    const ly = let_(lid.y, "ly");
    const row = let_(wid.y.mul(T).add(ly), "row");
    const col = let_(wid.x.mul(T).add(lx), "col");
    const acc = var_(f32(0), "acc");
    for_(
      u32(0),
      K,
      T,
      (t0) => {
        const a = var_(f32(0), "a");
        const ka = let_(t0.add(lx), "ka");
        if_(row.lt(M).and(ka.lt(K)), () => a.set(A.at(row.mul(K).add(ka))));
        As.set(ly.mul(T).add(lx), a);
        const bv = var_(f32(0), "bv");
        const kb = let_(t0.add(ly), "kb");
        // transB = 1: B is [N, K] (HF linear layout); the index choice is uniform over the launch.
        if_(kb.lt(K).and(col.lt(N)), () =>
          bv.set(Bm.at(k.select(transB.ne(0), col.mul(K).add(kb), kb.mul(N).add(col)))),
        );
        Bs.set(ly.mul(T).add(lx), bv);
        barrier();
        for_(u32(0), T, 1, (kk) => acc.set(acc.add(As.at(ly.mul(T).add(kk)).mul(Bs.at(kk.mul(T).add(lx))))), "kk");
        // The next iteration overwrites the tiles: everyone must be done reading them.
        barrier();
      },
      "t0",
    );
    if_(row.lt(M).and(col.lt(N)), () => C.set(row.mul(N).add(col), acc));
  };
}

const opts = { workgroupSize: [{ spec: "TILE" }, { spec: "TILE" }, 1] as const, specs: { TILE: 16, TILE2: 256 } };

/** Tiled GEMM, f32 operands. Specs TILE=16, TILE2 = TILE². Uniforms M, N, K, transB (0: B [K, N]; 1: B [N, K]). */
export const gemm_tiled_f32 = kernel("gemm_tiled_f32", opts, gemmBody("f32"));
/** Tiled GEMM with a bf16 B (weights). Same launch as gemm_tiled_f32. */
export const gemm_tiled_bf16 = kernel("gemm_tiled_bf16", opts, gemmBody("bf16"));
