// The attention synthesizer: one online-softmax generator for decode and prefill. A workgroup per (query, head)
// spreads the visible keys over its lanes (each keeps a running max, sum and output row), then merges the lanes'
// partial softmaxes through workgroup memory; the lane count is what the device's workgroup memory can hold. On
// devices with 32-wide subgroups (CUDA) a warp takes each key instead, its lanes splitting the head dim
// (attention-warp.ts, decision 0807).

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, Kernel, Val } from "@poot/kernel-dsl";
import { checkCaps, grid2d } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { attentionRow, declareAttentionIo, writeAttention } from "./attention-common.js";
import type { AttentionIo, AttentionLayout, AttentionRow, Strides4 } from "./attention-common.js";
import { keyBlocks, simdAttentionApplies, simdRowOps } from "./attention-cpu.js";
import type { LaneRow } from "./attention-cpu.js";
import { combineKernel } from "./attention-combine.js";
import { ATTENTION_KEYS_PER_TRIP, ATTENTION_WARPS, warpAttentionFits, warpAttentionKernel } from "./attention-warp.js";
import { expF32 } from "./gemv-native.js";
import { checkDType } from "./storage.js";
import type { StorageDType } from "./storage.js";

export type { Strides4 } from "./attention-common.js";

/**
 * Attention: out[b, h, t, :] = softmax_j(mask(softcap(scale · q[b, h, t]·k[b, h / groups, j]))) · v[b, h / groups, j].
 * Tensors are 4-D views given by element strides [batch, head, token, dim] (defaults: q and out token-major
 * [T, H, D]; k and v by `kvLayout`). With a mask, the i32 buffer `limit` holds each query's last visible key
 * (graph-plan's Attention bound): key j is visible iff j ≤ limit (causal), and also j > limit - window (sliding).
 * Scores are s = scale · q·k, then soft-capped (cap · tanh(s / cap)) when `softCap` is set.
 */
export interface AttentionRequest {
  readonly name: string;
  readonly batch?: number;
  readonly queries: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly valueDim?: number;
  /** Keys in the cache (Tk). */
  readonly keys: number;
  readonly scale: number;
  readonly softCap?: number;
  readonly mask: "none" | "causal" | "sliding" | "bool" | "additive";
  /**
   * For `bool` / `additive` masks: the `mask` buffer's dtype (bool is stored as u8; additive is a float added to
   * the soft-capped scores) and element strides [batch, head, query, key] (0 on broadcast axes).
   */
  readonly maskTensor?: { readonly dtype: StorageDType; readonly strides: Strides4 };
  /** Keys kept per query for a sliding mask. */
  readonly window?: number;
  /** Default layouts of k and v: token-major [Tk, Hkv, ·] (`shd`) or head-major [Hkv, Tk, ·] (`hsd`). */
  readonly kvLayout?: "shd" | "hsd";
  /** Explicit element strides (override the defaults). */
  readonly strides?: {
    readonly q?: Strides4;
    readonly k?: Strides4;
    readonly v?: Strides4;
    readonly out?: Strides4;
    readonly limit?: readonly [number, number, number];
  };
  readonly qDtype?: StorageDType;
  readonly kvDtype?: StorageDType;
  readonly outDtype?: StorageDType;
  /**
   * Paged KV: the i32 buffer `pages` [batch, keys / pageSize] names each sequence's pool pages, and key j of
   * batch b is k/v token row pages[b, j / pageSize] · pageSize + j % pageSize (k/v batch strides are then 0).
   */
  readonly paged?: { readonly pageSize: number };
  /**
   * Flash-decode: split each (batch, head, query)'s visible keys over this many workgroups (default 1, no split).
   * Above 1 the kernel writes unnormalized partials (max, sum, acc[Dv]) to the f32 buffer `part` and `combine`
   * (a second dispatch, after it) merges them into `out`. Slices are cut from the live range at run time
   * (at least `minSplitKeys` keys each), so a short live length uses few workgroups and reads only visible keys.
   */
  readonly splits?: number;
  /** Fewest keys one split covers (default: the lane count, so a split never leaves a lane two keys it could drop). */
  readonly minSplitKeys?: number;
}

/** A split attention: the partial kernel, the combine kernel and the f32 elements of the transient `part`. */
export interface SplitAttention {
  readonly combine: SynthKernel;
  readonly partElements: number;
}

const SYNTH = "attention";

/** Lanes per workgroup: the largest power of two ≤ maxWorkgroup (and ≤ 128) whose partials fit workgroup memory. */
export function attentionLanes(headDim: number, valueDim: number, caps: SynthCaps): number {
  // Serial threads (CPU): a workgroup's lanes run one after another on one core, so more lanes add only the merge
  // through workgroup memory; one lane walks every key of its (query, head) (decision 0951).
  const fits = (l: number): boolean => (l * (valueDim + 2) + headDim) * 4 <= caps.sharedBytes;
  let lanes = 1;
  while (caps.serialThreads !== true && lanes * 2 <= Math.min(caps.maxWorkgroup, 128) && fits(lanes * 2)) lanes *= 2;
  if (!fits(lanes))
    throw new KernelgenError(
      "exceeds_caps",
      `one lane needs ${(valueDim + 2 + headDim) * 4} bytes of workgroup memory`,
      { synth: SYNTH, param: "caps.sharedBytes", value: caps.sharedBytes },
    );
  return lanes;
}

/**
 * Splits for flash-decode on a device with `computeUnits` SMs: enough workgroups to fill the device about twice,
 * when the rows alone leave it idle and the cache holds at least two minimum slices (`minSplitKeys`: pass the lane
 * count — below one key per lane a split only adds the combine); 1 otherwise. At most 32.
 */
export function attentionSplits(rows: number, keys: number, computeUnits: number, minSplitKeys = 64): number {
  if (!(computeUnits > 0) || rows >= computeUnits) return 1;
  const bySm = Math.ceil((2 * computeUnits) / rows);
  const byKeys = Math.floor(keys / minSplitKeys);
  return Math.max(1, Math.min(bySm, byKeys, 32));
}

/**
 * Generates the attention kernel. Buffers: q, k, v, limit (causal/sliding) or mask (bool/additive), pages (paged), then out, or
 * `part` when split. Grid: one workgroup per (batch, head, query[, split]).
 */
export function synthesizeAttention(
  req: AttentionRequest,
  caps: SynthCaps,
): SynthKernel & { readonly lanes: number; readonly split?: SplitAttention } {
  const L = attentionLayout(req, caps);
  const warp = warpAttentionFits(caps, L.maskTensor !== undefined, L.Dv);
  const lanes = warp ? 32 * ATTENTION_WARPS : attentionLanes(L.D, L.Dv, caps);
  const k = warp ? warpAttentionKernel(L) : laneAttentionKernel(L, lanes, caps);
  if (L.splits === 1) return { kernel: k, grid: grid2d(L.rows, caps), lanes };
  const combine = combineKernel(
    `${req.name}_combine`,
    { rows: L.rows, splits: L.splits, Tq: L.Tq, H: L.H, Dv: L.Dv, os4: L.os4, outDtype: L.outDtype },
    caps,
  );
  return {
    kernel: k,
    grid: grid2d(L.rows * L.splits, caps),
    lanes,
    split: { combine, partElements: L.rows * L.splits * (L.Dv + 2) },
  };
}

/**
 * Fewest keys a flash-decode split should cover: the lane count of the lane-per-key kernel (below one key per lane
 * a split only adds the combine), or one trip of every warp of the warp-per-key kernel.
 */
export function attentionMinSplitKeys(headDim: number, valueDim: number, caps: SynthCaps, tensorMask = false): number {
  return warpAttentionFits(caps, tensorMask, valueDim)
    ? ATTENTION_WARPS * ATTENTION_KEYS_PER_TRIP
    : attentionLanes(headDim, valueDim, caps);
}

/** Checks the request and resolves its defaults (strides by layout, dtypes, splits). */
function attentionLayout(req: AttentionRequest, caps: SynthCaps): AttentionLayout {
  checkCaps(SYNTH, caps);
  const { queries: Tq, heads: H, kvHeads: Hkv, headDim: D, keys: S } = req;
  const Bn = req.batch ?? 1;
  const Dv = req.valueDim ?? D;
  if (![Bn, Tq, H, Hkv, D, Dv, S].every((d) => Number.isInteger(d) && d >= 1))
    throw new KernelgenError("bad_shape", "attention dims must be positive integers", { synth: SYNTH, param: "shape" });
  if (H % Hkv !== 0)
    throw new KernelgenError("bad_shape", `heads ${H} is not a multiple of kvHeads ${Hkv}`, {
      synth: SYNTH,
      param: "kvHeads",
      value: Hkv,
    });
  if (req.mask === "sliding" && !(Number.isInteger(req.window) && (req.window as number) >= 1))
    throw new KernelgenError("bad_param", `window ${req.window}`, { synth: SYNTH, param: "window", value: req.window });
  if (req.softCap !== undefined && !(req.softCap > 0))
    throw new KernelgenError("bad_param", `softCap ${req.softCap}`, {
      synth: SYNTH,
      param: "softCap",
      value: req.softCap,
    });
  const qDtype = checkDType(SYNTH, "q", req.qDtype ?? "f32", ["f32", "bf16", "f16"]);
  const kvDtype = checkDType(SYNTH, "kv", req.kvDtype ?? "f32", ["f32", "bf16", "f16"]);
  const outDtype = checkDType(SYNTH, "out", req.outDtype ?? "f32", ["f32", "bf16", "f16"]);
  const kvDefault = (w: number): Strides4 =>
    req.kvLayout === "hsd" ? [Hkv * S * w, S * w, w, 1] : [S * Hkv * w, w, Hkv * w, 1];
  const ps = req.paged?.pageSize;
  if (ps !== undefined && !(Number.isInteger(ps) && ps >= 1 && S % ps === 0))
    throw new KernelgenError("bad_param", `pageSize ${ps} does not divide ${S} keys`, {
      synth: SYNTH,
      param: "paged.pageSize",
      value: ps,
    });
  const tensorMask = req.mask === "bool" || req.mask === "additive" ? req.maskTensor : undefined;
  if ((req.mask === "bool" || req.mask === "additive") && tensorMask === undefined)
    throw new KernelgenError("bad_param", `a ${req.mask} mask needs maskTensor`, { synth: SYNTH, param: "maskTensor" });
  const splits = req.splits ?? 1;
  const minSplit = req.minSplitKeys ?? attentionMinSplitKeys(D, Dv, caps, tensorMask !== undefined);
  if (!(Number.isInteger(splits) && splits >= 1 && splits <= 1024))
    throw new KernelgenError("bad_param", `splits ${splits}`, { synth: SYNTH, param: "splits", value: splits });
  if (!(Number.isInteger(minSplit) && minSplit >= 1))
    throw new KernelgenError("bad_param", `minSplitKeys ${minSplit}`, {
      synth: SYNTH,
      param: "minSplitKeys",
      value: minSplit,
    });
  return {
    name: req.name,
    batch: Bn,
    Tq,
    H,
    Hkv,
    D,
    Dv,
    S,
    qs4: req.strides?.q ?? [Tq * H * D, D, H * D, 1],
    ks4: req.strides?.k ?? kvDefault(D),
    vs4: req.strides?.v ?? kvDefault(Dv),
    os4: req.strides?.out ?? [Tq * H * Dv, Dv, H * Dv, 1],
    ls3: req.strides?.limit ?? [Tq, 0, 1],
    mask: req.mask,
    ...(req.window === undefined ? {} : { window: req.window }),
    scale: req.scale,
    ...(req.softCap === undefined ? {} : { softCap: req.softCap }),
    ...(tensorMask === undefined ? {} : { maskTensor: tensorMask }),
    ...(ps === undefined ? {} : { pageSize: ps }),
    splits,
    minSplit,
    rows: Bn * H * Tq,
    qDtype,
    kvDtype,
    outDtype,
  };
}

/**
 * The lane-per-key kernel: each lane walks keys lane, lane + lanes, ...; lanes merge through workgroup memory. On
 * serial-thread caps with SIMD loads the lone lane's dot and value accumulation run on vec4s (attention-cpu.ts).
 */
function laneAttentionKernel(L: AttentionLayout, lanes: number, caps: SynthCaps): Kernel {
  const { D, Dv } = L;
  const simd = simdAttentionApplies(L, caps, lanes);
  return kernel(L.name, { workgroupSize: [lanes, 1, 1] }, (b) => {
    const { let_, var_, for_, if_, lid, f32, u32, barrier, tanh, max } = b;
    // The SIMD (CPU) row's exps in kernel IR: the Wasm would call out of the module for each (decision 2450).
    const exp = simd ? (v: Val<"f32">): Val<"f32"> => expF32(b, v) : b.exp;
    const io = declareAttentionIo(b, L);
    const qsh = simd ? undefined : b.shared("qs", "f32", D);
    const sm = b.shared("sm", "f32", lanes);
    const sl = b.shared("sl", "f32", lanes);
    const sacc = b.shared("sacc", "f32", lanes * Dv);
    const r = attentionRow(b, L, io);
    const lane = let_(lid.x, "lane");
    const simdRow = qsh === undefined ? simdRowOps(b, L, io, r) : undefined;
    const row = simdRow ?? scalarRowOps(b, L, io, r, qsh!, lane, lanes);
    const m = var_(f32(-Infinity), "m");
    const l = var_(f32(0), "l");
    const blockAcc = simdRow?.acc();
    const acc = blockAcc ?? row.acc();
    const score = (dot: Val<"f32">): Val<"f32"> => {
      const s = let_(dot.mul(L.scale), "s");
      return L.softCap === undefined ? s : let_(tanh(s.div(L.softCap)).mul(L.softCap), "s_cap");
    };
    // The SIMD row without a mask tensor takes the keys in blocks, then the rest one by one (attention-cpu.ts).
    const first =
      blockAcc !== undefined && L.maskTensor === undefined
        ? keyBlocks(b, L, r, { score, m, l, acc: blockAcc })
        : r.lo.add(lane);
    for_(
      first,
      r.hi,
      lanes,
      (jj) => {
        const j = r.tokenRow(jj);
        const kr = r.at(L.ks4, r.kvh, j);
        let s = score(acc.dot(kr));
        let keep: Val<"bool"> = b.bool(true);
        if (io.mask !== undefined && L.maskTensor !== undefined) {
          const ms = L.maskTensor.strides;
          const mv = io.mask.at(
            r.bb.mul(ms[0]).add(r.h.mul(ms[1])).add(r.t.mul(ms[2])).add(jj.mul(ms[3])),
          ) as Val<"f32">;
          if (L.mask === "bool") keep = let_((mv as unknown as Val<"u32">).ne(0), "keep");
          else s = let_(s.add(mv), "s_mask");
        }
        // A dropped key (or one whose score is -inf) changes nothing: skip it so exp(-inf - -inf) never appears.
        if_(keep.and(s.gt(-Infinity)), () => {
          const mNew = let_(max(m, s), "m_new");
          // exp(-inf - finite) = 0 rescales nothing on the first key.
          const corr = let_(exp(m.sub(mNew)), "corr");
          const pj = let_(exp(s.sub(mNew)), "pj");
          l.set(l.mul(corr).add(pj));
          acc.accumulate(r.at(L.vs4, r.kvh, j), corr, pj);
          m.set(mNew);
        });
      },
      "j",
    );
    sm.set(lane, m);
    sl.set(lane, l);
    acc.flush(sacc, lane);
    barrier();
    const M = var_(f32(-Infinity), "M");
    for_(u32(0), lanes, 1, (i) => M.set(max(M, sm.at(i))), "i");
    const den = var_(f32(0), "den");
    for_(u32(0), lanes, 1, (i) => den.set(den.add(sl.at(i).mul(exp(sm.at(i).sub(M))))), "i");
    writeAttention(b, L, io, r, M, den, lane, lanes, (d) => {
      const num = var_(f32(0), "num");
      for_(u32(0), lanes, 1, (i) => num.set(num.add(sacc.at(i.mul(Dv).add(d)).mul(exp(sm.at(i).sub(M))))), "i");
      return num;
    });
  });
}

/**
 * The scalar row ops: the lanes stage q in workgroup memory; acc (a private array, declared by `acc()` after the
 * running max and sum) takes one element per step.
 */
function scalarRowOps(
  b: Builder,
  L: AttentionLayout,
  io: AttentionIo,
  r: AttentionRow,
  qsh: Arr<"f32">,
  lane: Val<"u32">,
  lanes: number,
): LaneRow {
  const { let_, var_, for_, u32, f32, barrier, privateArray } = b;
  const { D, Dv } = L;
  const qRow = r.at(L.qs4, r.h, r.t);
  for_(lane, D, lanes, (d) => qsh.set(d, io.q.at(qRow.add(d.mul(L.qs4[3])))), "d");
  barrier();
  return {
    acc: () => {
      const acc = privateArray("acc", "f32", Dv);
      return {
        dot: (kr) => {
          const dot = var_(f32(0), "dot");
          for_(u32(0), D, 1, (d) => dot.set(dot.add(qsh.at(d).mul(io.K.at(kr.add(d.mul(L.ks4[3])))))), "dd");
          return dot;
        },
        accumulate: (vr, corr, pj) =>
          for_(
            u32(0),
            Dv,
            1,
            (d) =>
              acc.set(
                d,
                acc
                  .at(d)
                  .mul(corr)
                  .add(pj.mul(io.V.at(vr.add(d.mul(L.vs4[3]))))),
              ),
            "dv",
          ),
        flush: (sacc, ln) => for_(u32(0), Dv, 1, (d) => sacc.set(ln.mul(Dv).add(d), acc.at(d)), "d"),
      };
    },
  };
}
