// Decode GEMV for up to MAXB rows of x: y[b, n] = Σ_k x[b, k] · W(k, n), W f32 or bf16, as [K, N] (`kn`) or
// [N, K] (`nk`, HF linear). Each weight element is read once for all rows; loads are coalesced in both layouts.

import { kernel } from "@poot/kernel-dsl";
import type { Builder } from "@poot/kernel-dsl";

type WeightElem = "f32" | "bf16";

/**
 * [K, N]: workgroup [WGX, WGY], ceil(N / WGX) workgroups linearized as g = wid.y·nwg.x + wid.x (a grid split over
 * x and y past the per-axis limit). Thread (tx, ty) owns column n = g·WGX + tx and the
 * k ≡ ty (mod WGY) terms (adjacent threads read adjacent columns); the WGY partials are added in ty order.
 */
function knBody(elem: WeightElem) {
  return (k: Builder): void => {
    const { buffer, uniform, shared, spec, lid, wid, nwg, f32, u32, var_, let_, for_, if_, barrier, privateArray } = k;
    const W = buffer("W", elem, "read");
    const x = buffer("x", "f32", "read");
    const y = buffer("y", "f32", "write");
    const K = uniform("K", "u32");
    const N = uniform("N", "u32");
    const B = uniform("B", "u32");
    const WGX = spec("WGX");
    const WGY = spec("WGY");
    const tx = let_(lid.x, "tx");
    const ty = let_(lid.y, "ty");
    const n = let_(wid.y.mul(nwg.x).add(wid.x).mul(WGX).add(tx), "n");
    const part = shared("part", "f32", { spec: "PART" });
    const acc = privateArray("acc", "f32", { spec: "MAXB" });
    if_(n.lt(N), () => {
      for_(
        ty,
        K,
        WGY,
        (kk) => {
          const w = let_(W.at(kk.mul(N).add(n)), "w");
          for_(u32(0), B, 1, (b) => acc.set(b, acc.at(b).add(x.at(b.mul(K).add(kk)).mul(w))), "b");
        },
        "k",
      );
    });
    for_(u32(0), B, 1, (b) => part.set(b.mul(WGX).add(tx).mul(WGY).add(ty), acc.at(b)), "b");
    barrier();
    if_(ty.eq(0).and(n.lt(N)), () => {
      for_(
        u32(0),
        B,
        1,
        (b) => {
          const s = var_(f32(0), "s");
          const base = let_(b.mul(WGX).add(tx).mul(WGY), "base");
          for_(u32(0), WGY, 1, (j) => s.set(s.add(part.at(base.add(j)))), "j");
          y.set(b.mul(N).add(n), s);
        },
        "b",
      );
    });
  };
}

/**
 * [N, K]: one workgroup of WG lanes per output n = wid.y·nwg.x + wid.x (N workgroups, split over grid x and y past
 * the per-axis limit; workgroups with n ≥ N write nothing); lanes stride along the row of W (coalesced), each
 * keeping one partial per batch row; a shared-memory tree per batch row sums the lanes.
 */
function nkBody(elem: WeightElem) {
  return (k: Builder): void => {
    const { buffer, uniform, shared, spec, lid, wid, nwg, u32, var_, let_, for_, if_, while_, barrier, privateArray } =
      k;
    const W = buffer("W", elem, "read");
    const x = buffer("x", "f32", "read");
    const y = buffer("y", "f32", "write");
    const K = uniform("K", "u32");
    const N = uniform("N", "u32");
    const B = uniform("B", "u32");
    const WG = spec("WG");
    const part = shared("part", "f32", { spec: "PART" });
    const acc = privateArray("acc", "f32", { spec: "MAXB" });
    const t = let_(lid.x, "tid");
    const n = let_(wid.y.mul(nwg.x).add(wid.x), "n");
    if_(n.lt(N), () => {
      for_(
        t,
        K,
        WG,
        (kk) => {
          const w = let_(W.at(n.mul(K).add(kk)), "w");
          for_(u32(0), B, 1, (b) => acc.set(b, acc.at(b).add(x.at(b.mul(K).add(kk)).mul(w))), "b");
        },
        "k",
      );
    });
    for_(u32(0), B, 1, (b) => part.set(b.mul(WG).add(t), acc.at(b)), "b");
    barrier();
    const s = var_(WG.shr(1), "s");
    while_(s.gt(0), () => {
      if_(t.lt(s), () => {
        for_(
          u32(0),
          B,
          1,
          (b) => part.set(b.mul(WG).add(t), part.at(b.mul(WG).add(t)).add(part.at(b.mul(WG).add(t).add(s)))),
          "b",
        );
      });
      barrier();
      s.set(s.shr(1));
    });
    if_(t.eq(0).and(n.lt(N)), () => for_(u32(0), B, 1, (b) => y.set(b.mul(N).add(n), part.at(b.mul(WG))), "b"));
  };
}

const kn = {
  workgroupSize: [{ spec: "WGX" }, { spec: "WGY" }, 1] as const,
  specs: { WGX: 32, WGY: 4, MAXB: 8, PART: 1024 },
};
const nk = { workgroupSize: [{ spec: "WG" }, 1, 1] as const, specs: { WG: 64, MAXB: 8, PART: 512 } };

/** GEMV, f32 [K, N] weight. Specs WGX=32, WGY=4, MAXB=8, PART = MAXB·WGX·WGY. Uniforms K, N, B (≤ MAXB). ceil(N/WGX) workgroups, linearized over grid x/y. */
export const gemv_f32_kn = kernel("gemv_f32_kn", kn, knBody("f32"));
/** GEMV, bf16 [K, N] weight (widened exactly on load). Same launch as gemv_f32_kn. */
export const gemv_bf16_kn = kernel("gemv_bf16_kn", kn, knBody("bf16"));
/** GEMV, f32 [N, K] weight. Specs WG=64 (a power of two), MAXB=8, PART = MAXB·WG. Uniforms K, N, B. N workgroups, linearized over grid x/y. */
export const gemv_f32_nk = kernel("gemv_f32_nk", nk, nkBody("f32"));
/** GEMV, bf16 [N, K] weight. Same launch as gemv_f32_nk. */
export const gemv_bf16_nk = kernel("gemv_bf16_nk", nk, nkBody("bf16"));
