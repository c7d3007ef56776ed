// Decode GEMV over a row-major [K, N] weight (f32 or bf16): y[b, n] = Σ_k x[b, k] · W[k, n].
// Adjacent threads take adjacent columns n (coalesced rows of W); WGY threads split K, combined in shared memory.

import { kernel } from "@poot/kernel-dsl";
import type { Builder } from "@poot/kernel-dsl";

type WeightElem = "f32" | "bf16";

/**
 * Workgroup [WGX, WGY]; grid [ceil(N / WGX)]. Thread (tx, ty) owns column n = wid.x·WGX + tx and the k ≡ ty
 * (mod WGY) terms for every batch row; the WGY partials are added in ty order by the ty = 0 thread.
 * Batched: x is [B, K], y [B, N] with B ≤ MAXB, so each weight element is read once for all B rows.
 */
function gemvBody(elem: WeightElem, batched: boolean) {
  return (k: Builder): void => {
    const { buffer, uniform, shared, spec, lid, wid, f32, u32, var_, let_, for_, if_, barrier, privateArray } = k;
    const W = buffer("W", elem, "read");
    const x = buffer("x", "f32", "read");
    const y = buffer("y", "f32", "write");
    const K = uniform("K", "u32");
    const N = uniform("N", "u32");
    const B = batched ? uniform("B", "u32") : u32(1);
    const WGX = spec("WGX");
    const WGY = spec("WGY");
    const tx = let_(lid.x, "tx");
    const ty = let_(lid.y, "ty");
    const n = let_(wid.x.mul(WGX).add(tx), "n");
    const part = shared("part", "f32", batched ? { spec: "PART" } : { spec: "PART" });
    if (batched) {
      const acc = privateArray("acc", "f32", { spec: "MAXB" });
      if_(n.lt(N), () => {
        for_(ty, K, WGY, (kk) => {
          const w = let_(W.at(kk.mul(N).add(n)), "w");
          for_(u32(0), B, 1, (b) => acc.set(b, acc.at(b).add(x.at(b.mul(K).add(kk)).mul(w))), "b");
        }, "k");
      });
      for_(u32(0), B, 1, (b) => part.set(b.mul(WGX).add(tx).mul(WGY).add(ty), acc.at(b)), "b");
    } else {
      const acc = var_(f32(0), "acc");
      if_(n.lt(N), () => {
        for_(ty, K, WGY, (kk) => acc.set(acc.add(x.at(kk).mul(W.at(kk.mul(N).add(n))))), "k");
      });
      part.set(tx.mul(WGY).add(ty), acc);
    }
    barrier();
    if_(ty.eq(0).and(n.lt(N)), () => {
      for_(u32(0), B, 1, (b) => {
        const s = var_(f32(0), "s");
        const base = let_(b.mul(WGX).add(tx).mul(WGY), "base");
        for_(u32(0), WGY, 1, (j) => s.set(s.add(part.at(base.add(j)))), "j");
        y.set(b.mul(N).add(n), s);
      }, "b");
    });
  };
}

const single = { workgroupSize: [{ spec: "WGX" }, { spec: "WGY" }, 1] as const, specs: { WGX: 64, WGY: 4, PART: 256 } };
const batched = { workgroupSize: [{ spec: "WGX" }, { spec: "WGY" }, 1] as const, specs: { WGX: 32, WGY: 4, MAXB: 8, PART: 1024 } };

/** GEMV, f32 weight. Specs WGX=64, WGY=4, PART = WGX·WGY. Uniforms K, N. Grid [ceil(N/WGX)]. */
export const gemv_f32 = kernel("gemv_f32", single, gemvBody("f32", false));
/** GEMV, bf16 weight (widened exactly on load). Same launch as gemv_f32. */
export const gemv_bf16 = kernel("gemv_bf16", single, gemvBody("bf16", false));
/** Batched GEMV (B ≤ MAXB rows of x), f32 weight. Specs WGX=32, WGY=4, MAXB=8, PART = MAXB·WGX·WGY. Uniforms K, N, B. */
export const gemv_batched_f32 = kernel("gemv_batched_f32", batched, gemvBody("f32", true));
/** Batched GEMV, bf16 weight. Same launch as gemv_batched_f32. */
export const gemv_batched_bf16 = kernel("gemv_batched_bf16", batched, gemvBody("bf16", true));
