// Attention with a warp per key (devices with 32-wide subgroups): the lanes of a warp split the head dim, so a
// key's k and v rows are read by one coalesced warp load each and its score is a subgroup sum; each warp keeps its
// own online softmax over keys warp, warp + W, ... (several keys' loads issued before any arithmetic), and the W
// warps of the workgroup merge through workgroup memory once at the end (decision 0807).

import { kernel } from "@poot/kernel-dsl";
import type { Builder, Kernel, Val, Var } from "@poot/kernel-dsl";
import type { SynthCaps } from "../caps.js";
import { attentionRow, declareAttentionIo, writeAttention } from "./attention-common.js";
import type { AttentionIo, AttentionLayout, AttentionRow } from "./attention-common.js";

/** Subgroup width the warp kernel is written for. */
const WARP = 32;
/** Warps per workgroup. */
export const ATTENTION_WARPS = 4;
/** Keys a warp loads per trip before its arithmetic. */
export const ATTENTION_KEYS_PER_TRIP = 4;

/**
 * Whether the warp-per-key kernel serves a request on these caps: 32-wide subgroups with `splitAttention` (the CUDA
 * executor's caps), limit masks only (a mask tensor takes the lane-per-key kernel), the warps' partials in
 * workgroup memory.
 */
export function warpAttentionFits(caps: SynthCaps, tensorMask: boolean, valueDim: number): boolean {
  const threads = WARP * ATTENTION_WARPS;
  return (
    caps.serialThreads !== true &&
    caps.splitAttention === true &&
    caps.subgroupSize === WARP &&
    caps.maxWorkgroup >= threads &&
    !tensorMask &&
    ATTENTION_WARPS * (valueDim + 2) * 4 <= caps.sharedBytes
  );
}

/** The elements lane `lane` owns of a `n`-long row: lane, lane + 32, ...; `full` when every lane's index is < n. */
function laneDims(b: Builder, lane: Val<"u32">, n: number): { readonly d: Val<"u32">; readonly full: boolean }[] {
  return Array.from({ length: Math.ceil(n / WARP) }, (_, i) => ({
    d: i === 0 ? lane : b.let_(lane.add(i * WARP), `dim${i}`),
    full: (i + 1) * WARP <= n,
  }));
}

/** One element of a row at `base` with element stride `stride`; a dim past the row reads its last element (unused). */
function loadDim(
  b: Builder,
  arr: AttentionIo["K"],
  base: Val<"u32">,
  stride: number,
  dim: { readonly d: Val<"u32">; readonly full: boolean },
  n: number,
): Val<"f32"> {
  const d = dim.full ? dim.d : b.min(dim.d, b.u32(n - 1));
  return b.let_(arr.at(base.add(d.mul(stride))), "e");
}

/** The per-warp online softmax over the workgroup's keys; returns the warp's running max, sum and lane accumulators. */
function warpKeys(
  b: Builder,
  L: AttentionLayout,
  io: AttentionIo,
  r: AttentionRow,
  lane: Val<"u32">,
  warp: Val<"u32">,
): { m: Var<"f32">; l: Var<"f32">; acc: Var<"f32">[] } {
  const { let_, var_, for_, if_, f32, exp, tanh, max, select, subgroupAdd } = b;
  const U = ATTENTION_KEYS_PER_TRIP,
    W = ATTENTION_WARPS;
  const kd = laneDims(b, lane, L.D),
    vd = laneDims(b, lane, L.Dv);
  const qRow = r.at(L.qs4, r.h, r.t);
  // This lane's query elements (0 past the head dim, so those lanes add nothing to a score).
  const qv = kd.map((dim) => {
    const e = loadDim(b, io.q, qRow, L.qs4[3], dim, L.D);
    return dim.full ? e : let_(select(dim.d.lt(L.D), e, f32(0)), "qd");
  });
  const m = var_(f32(-Infinity), "m");
  const l = var_(f32(0), "l");
  const acc = vd.map((_, i) => var_(f32(0), `acc${i}`));
  for_(
    r.lo.add(warp),
    r.hi,
    W * U,
    (j0) => {
      // Keys j0, j0 + W, ...: a key past hi reads key j0 again and is skipped below (j0 < hi inside the loop).
      const keys = Array.from({ length: U }, (_, u) => {
        const ju = u === 0 ? j0 : let_(j0.add(u * W), `j${u}`);
        const valid = u === 0 ? undefined : let_(ju.lt(r.hi), `ok${u}`);
        const row = r.tokenRow(valid === undefined ? ju : let_(select(valid, ju, j0), `jc${u}`));
        const kRow = r.at(L.ks4, r.kvh, row),
          vRow = r.at(L.vs4, r.kvh, row);
        return {
          valid,
          k: kd.map((dim) => loadDim(b, io.K, kRow, L.ks4[3], dim, L.D)),
          v: vd.map((dim) => loadDim(b, io.V, vRow, L.vs4[3], dim, L.Dv)),
        };
      });
      for (const key of keys) {
        let part: Val<"f32"> = qv[0]!.mul(key.k[0]!);
        for (let i = 1; i < kd.length; i++) part = b.fma(qv[i]!, key.k[i]!, part);
        let s = let_(subgroupAdd(part).mul(L.scale), "s");
        if (L.softCap !== undefined) s = let_(tanh(s.div(L.softCap)).mul(L.softCap), "s_cap");
        const keep = key.valid === undefined ? s.gt(-Infinity) : key.valid.and(s.gt(-Infinity));
        // A skipped key (past the range, or a -inf score) changes nothing; the condition is the same on every lane.
        if_(keep, () => {
          const mNew = let_(max(m, s), "m_new");
          const corr = let_(exp(m.sub(mNew)), "corr");
          const pj = let_(exp(s.sub(mNew)), "pj");
          l.set(l.mul(corr).add(pj));
          acc.forEach((a, i) => a.set(a.mul(corr).add(pj.mul(key.v[i]!))));
          m.set(mNew);
        });
      }
    },
    "j",
  );
  return { m, l, acc };
}

/** @internal The warp-per-key attention kernel for a checked layout (see {@link warpAttentionFits}). */
export function warpAttentionKernel(L: AttentionLayout): Kernel {
  const W = ATTENTION_WARPS;
  return kernel(L.name, { workgroupSize: [W * WARP, 1, 1] }, (b) => {
    const { let_, var_, if_, lid, f32, exp, max, barrier } = b;
    const io = declareAttentionIo(b, L);
    const sm = b.shared("sm", "f32", W);
    const sl = b.shared("sl", "f32", W);
    const sacc = b.shared("sacc", "f32", W * L.Dv);
    const r = attentionRow(b, L, io);
    const tid = let_(lid.x, "tid");
    const lane = let_(tid.rem(WARP), "lane");
    const warp = let_(tid.div(WARP), "warp");
    const { m, l, acc } = warpKeys(b, L, io, r, lane, warp);
    if_(lane.eq(0), () => {
      sm.set(warp, m);
      sl.set(warp, l);
    });
    laneDims(b, lane, L.Dv).forEach((dim, i) => {
      const put = (): void => sacc.set(warp.mul(L.Dv).add(dim.d), acc[i]!);
      if (dim.full) put();
      else if_(dim.d.lt(L.Dv), put);
    });
    barrier();
    // The warps' partial softmaxes merge as the lanes' do in the lane-per-key kernel.
    const M = var_(f32(-Infinity), "M");
    for (let w = 0; w < W; w++) M.set(max(M, sm.at(w)));
    const ew = Array.from({ length: W }, (_, w) => let_(exp(sm.at(w).sub(M)), `e${w}`));
    const den = var_(f32(0), "den");
    for (let w = 0; w < W; w++) den.set(den.add(sl.at(w).mul(ew[w]!)));
    writeAttention(b, L, io, r, M, den, tid, W * WARP, (d) => {
      const num = var_(f32(0), "num");
      for (let w = 0; w < W; w++) num.set(num.add(sacc.at(d.add(w * L.Dv)).mul(ew[w]!)));
      return num;
    });
  });
}
