// The attention synthesizer: one online-softmax generator for decode and prefill. A workgroup per (query, head)
// spreads the visible keys over its lanes (each keeps a running max, sum and output row), then merges the lanes'
// partial softmaxes through workgroup memory; the lane count is what the device's workgroup memory can hold.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Val } from "@poot/kernel-dsl";
import { checkCaps, grid2d } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { checkDType, elemOf, storeAs } from "./storage.js";
import type { StorageDType } from "./storage.js";

/**
 * Attention over a KV cache. q [queries, heads, headDim]; k [maxKeys, kvHeads, headDim] and v [maxKeys, kvHeads,
 * valueDim] (token-major, `kvLayout: "shd"`) or [kvHeads, maxKeys, ·] (`"hsd"`); out [queries, heads, valueDim].
 * Runtime `meta` (i32[2]) = [pos0, kvLen]: query t sits at absolute position pos0 + t and keys 0..kvLen-1 exist.
 * Key j is visible to query position p iff j < kvLen, and (causal) j ≤ p, and (window w) j > p - w.
 * Scores are s = scale · q·k, then soft-capped (cap · tanh(s / cap)) when `softCap` is set.
 */
export interface AttentionRequest {
  readonly name: string;
  readonly queries: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly valueDim?: number;
  readonly maxKeys: number;
  readonly scale: number;
  readonly softCap?: number;
  readonly causal: boolean;
  readonly window?: number;
  readonly kvLayout?: "shd" | "hsd";
  readonly qDtype?: StorageDType;
  readonly kvDtype?: StorageDType;
  readonly outDtype?: StorageDType;
}

const SYNTH = "attention";

/** Lanes per workgroup: the largest power of two ≤ maxWorkgroup (and ≤ 128) whose partials fit workgroup memory. */
export function attentionLanes(headDim: number, valueDim: number, caps: SynthCaps): number {
  const fits = (l: number): boolean => (l * (valueDim + 2) + headDim) * 4 <= caps.sharedBytes;
  let lanes = 1;
  while (lanes * 2 <= Math.min(caps.maxWorkgroup, 128) && fits(lanes * 2)) lanes *= 2;
  if (!fits(lanes)) throw new KernelgenError("exceeds_caps", `one lane needs ${(valueDim + 2 + headDim) * 4} bytes of workgroup memory`, { synth: SYNTH, param: "caps.sharedBytes", value: caps.sharedBytes });
  return lanes;
}

/** Generates the attention kernel. Buffers: q, k, v, meta, out. Grid: one workgroup per (query, head). */
export function synthesizeAttention(req: AttentionRequest, caps: SynthCaps): SynthKernel & { readonly lanes: number } {
  checkCaps(SYNTH, caps);
  const { queries: Tq, heads: H, kvHeads: Hkv, headDim: D, maxKeys: S } = req;
  const Dv = req.valueDim ?? D;
  if (![Tq, H, Hkv, D, Dv, S].every((d) => Number.isInteger(d) && d >= 1)) throw new KernelgenError("bad_shape", "attention dims must be positive integers", { synth: SYNTH, param: "shape" });
  if (H % Hkv !== 0) throw new KernelgenError("bad_shape", `heads ${H} is not a multiple of kvHeads ${Hkv}`, { synth: SYNTH, param: "kvHeads", value: Hkv });
  if (req.window !== undefined && !(Number.isInteger(req.window) && req.window >= 1)) throw new KernelgenError("bad_param", `window ${req.window}`, { synth: SYNTH, param: "window", value: req.window });
  if (req.softCap !== undefined && !(req.softCap > 0)) throw new KernelgenError("bad_param", `softCap ${req.softCap}`, { synth: SYNTH, param: "softCap", value: req.softCap });
  const qDtype = checkDType(SYNTH, "q", req.qDtype ?? "f32", ["f32", "bf16", "f16"]);
  const kvDtype = checkDType(SYNTH, "kv", req.kvDtype ?? "f32", ["f32", "bf16", "f16"]);
  const outDtype = checkDType(SYNTH, "out", req.outDtype ?? "f32", ["f32", "bf16", "f16"]);
  const lanes = attentionLanes(D, Dv, caps);
  const group = H / Hkv;
  const hsd = req.kvLayout === "hsd";
  const k = kernel(req.name, { workgroupSize: [lanes, 1, 1] }, (b) => {
    const { let_, var_, for_, if_, wid, nwg, lid, f32, i32, barrier, exp, tanh, max, min, select, privateArray, return_ } = b;
    const q = b.buffer("q", elemOf(qDtype), "read") as Arr<"f32">;
    const K = b.buffer("k", elemOf(kvDtype), "read") as Arr<"f32">;
    const Vb = b.buffer("v", elemOf(kvDtype), "read") as Arr<"f32">;
    const meta = b.buffer("meta", "i32", "read");
    const out = b.buffer("out", elemOf(outDtype), "write");
    const qs = b.shared("qs", "f32", D);
    const sm = b.shared("sm", "f32", lanes);
    const sl = b.shared("sl", "f32", lanes);
    const sacc = b.shared("sacc", "f32", lanes * Dv);
    const wgId = let_(wid.y.mul(nwg.x).add(wid.x), "wg");
    if_(wgId.ge(Tq * H), () => return_());
    const t = let_(wgId.div(H), "t");
    const h = let_(wgId.rem(H), "h");
    const kvh = let_(h.div(group), "kvh");
    const lane = let_(lid.x, "lane");
    const pos0 = let_(meta.at(0), "pos0");
    const kvLen = let_(min(max(meta.at(1), i32(0)), i32(S)), "kv_len");
    const p = let_(pos0.add(t.i32()), "p");
    // Visible keys form one contiguous range [lo, hi): no per-key mask test in the loop.
    const hiI = req.causal ? min(kvLen, p.add(1)) : kvLen;
    const hi = let_(max(hiI, i32(0)).u32(), "hi");
    const lo = let_(req.window === undefined ? b.u32(0) : max(p.sub(req.window - 1), i32(0)).u32(), "lo");
    for_(lane, D, lanes, (d) => qs.set(d, q.at(t.mul(H * D).add(h.mul(D)).add(d))), "d");
    barrier();
    const m = var_(f32(-Infinity), "m");
    const l = var_(f32(0), "l");
    const acc = privateArray("acc", "f32", Dv);
    const rowOf = (j: Val<"u32">, width: number): Val<"u32"> => (hsd ? kvh.mul(S).add(j).mul(width) : j.mul(Hkv).add(kvh).mul(width));
    for_(lo.add(lane), hi, lanes, (j) => {
      const kr = let_(rowOf(j, D), "kr");
      const dot = var_(f32(0), "dot");
      for_(b.u32(0), D, 1, (d) => dot.set(dot.add(qs.at(d).mul(K.at(kr.add(d))))), "dd");
      let s = let_(dot.mul(req.scale), "s");
      if (req.softCap !== undefined) s = let_(tanh(s.div(req.softCap)).mul(req.softCap), "s_cap");
      const mNew = let_(max(m, s), "m_new");
      // exp(-inf - finite) = 0 rescales nothing on the first key.
      const corr = let_(exp(m.sub(mNew)), "corr");
      const pj = let_(exp(s.sub(mNew)), "pj");
      l.set(l.mul(corr).add(pj));
      const vr = let_(rowOf(j, Dv), "vr");
      for_(b.u32(0), Dv, 1, (d) => acc.set(d, acc.at(d).mul(corr).add(pj.mul(Vb.at(vr.add(d))))), "dv");
      m.set(mNew);
    }, "j");
    sm.set(lane, m);
    sl.set(lane, l);
    for_(b.u32(0), Dv, 1, (d) => sacc.set(lane.mul(Dv).add(d), acc.at(d)), "d");
    barrier();
    const M = var_(f32(-Infinity), "M");
    for_(b.u32(0), lanes, 1, (i) => M.set(max(M, sm.at(i))), "i");
    const den = var_(f32(0), "den");
    for_(b.u32(0), lanes, 1, (i) => den.set(den.add(sl.at(i).mul(exp(sm.at(i).sub(M))))), "i");
    for_(lane, Dv, lanes, (d) => {
      const num = var_(f32(0), "num");
      for_(b.u32(0), lanes, 1, (i) => num.set(num.add(sacc.at(i.mul(Dv).add(d)).mul(exp(sm.at(i).sub(M))))), "i");
      // A query with no visible key gets zeros (the graph's softmax over nothing would be NaN).
      const o = let_(select(den.gt(0), num.div(den), f32(0)), "o");
      storeAs(b, out, outDtype, t.mul(H * Dv).add(h.mul(Dv)).add(d), o);
    }, "d");
  });
  return { kernel: k, grid: grid2d(Tq * H, caps), lanes };
}
