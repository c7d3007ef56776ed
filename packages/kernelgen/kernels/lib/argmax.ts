// Argmax building blocks shared by the argmax and sampler kernels: the (value, index) order and a
// workgroup tree reduction over shared memory. Ties go to the lowest index and NaN counts as the maximum.

import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";

/**
 * True if candidate (v, i) beats the current best (bv, bi): numpy.argmax order, where NaN is the maximum
 * (the first NaN wins) and among equal values the lowest index wins.
 */
export function beats(v: Val<"f32">, i: Val<"u32">, bv: Val<"f32">, bi: Val<"u32">): Val<"bool"> {
  const vn = v.ne(v);
  const bn = bv.ne(bv);
  const earlier = i.lt(bi);
  return bn.and(vn.and(earlier)).or(bn.not().and(vn.or(v.gt(bv)).or(v.eq(bv).and(earlier))));
}

/**
 * Reduces each thread's (best, bestIdx) over the workgroup through shared arrays `sv`/`si` of length WG (a
 * power of two); afterwards every thread reads the winner from sv[0]/si[0]. Ends with a barrier.
 */
export function blockArgmax(
  k: Builder,
  wg: Val<"u32">,
  tid: Val<"u32">,
  best: Var<"f32">,
  bestIdx: Var<"u32">,
  sv: Arr<"f32">,
  si: Arr<"u32">,
): { v: Val<"f32">; i: Val<"u32"> } {
  const { var_, while_, if_, barrier, let_ } = k;
  sv.set(tid, best);
  si.set(tid, bestIdx);
  barrier();
  const s = var_(wg.shr(1), "s");
  while_(s.gt(0), () => {
    if_(tid.lt(s), () => {
      const ov = sv.at(tid.add(s));
      const oi = si.at(tid.add(s));
      const mv = sv.at(tid);
      const mi = si.at(tid);
      if_(beats(ov, oi, mv, mi), () => {
        sv.set(tid, ov);
        si.set(tid, oi);
      });
    });
    barrier();
    s.set(s.shr(1));
  });
  const v = let_(sv.at(0), "win_v");
  const i = let_(si.at(0), "win_i");
  // Everyone has read the winner before anyone may overwrite the arrays again.
  barrier();
  return { v, i };
}

/** Workgroup sum or max of `x` through shared array `sh` (length WG, a power of two); every thread gets it. */
export function blockReduce(
  k: Builder,
  op: "add" | "max",
  wg: Val<"u32">,
  tid: Val<"u32">,
  x: Val<"f32">,
  sh: Arr<"f32">,
): Val<"f32"> {
  const { var_, while_, if_, barrier, let_, max } = k;
  sh.set(tid, x);
  barrier();
  const s = var_(wg.shr(1), "rs");
  while_(s.gt(0), () => {
    if_(tid.lt(s), () => {
      const a = sh.at(tid);
      const b = sh.at(tid.add(s));
      sh.set(tid, op === "add" ? a.add(b) : max(a, b));
    });
    barrier();
    s.set(s.shr(1));
  });
  const r = let_(sh.at(0), op === "add" ? "bsum" : "bmax");
  barrier();
  return r;
}
