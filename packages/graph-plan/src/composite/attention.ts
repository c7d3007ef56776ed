// Attention: softmax(mask(softcap(Q K^T * scale))) V for grouped KV heads, as one op whose reference
// semantics replay the recognized primitive chain step by step (same rounding, same summation order).

import { numel, type OpDef, type Tensor } from "@poot/graph-ir";
import { broadcastMap, intParam, mustBroadcast, requireFloat } from "./util.js";

/** How scores are masked: by a bound tensor (causal / sliding window), a mask tensor, or not at all. */
export type AttentionMaskKind =
  /** Keep key j of query i when j <= limit[i] (input 3, i32 broadcast to [..., Tq, 1]). */
  | "causal"
  /** Keep j when limit[i] - window < j <= limit[i]. */
  | "sliding"
  /** Input 3 is a bool keep-mask broadcast to the scores. */
  | "bool"
  /** Input 3 is added to the scores (0 keeps, -inf drops). */
  | "additive"
  /** No mask. */
  | "none";

/** Params of Attention. */
export type AttentionParams = {
  /** Score scale applied after Q K^T (the literal, already an f32 value), or null when the chain had none. */
  readonly scale: number | null;
  /** Soft-cap c: scores become tanh(s / c) * c (before the mask), or null. */
  readonly softCap: number | null;
  /** Mask kind. */
  readonly mask: AttentionMaskKind;
  /** Causal/sliding masks applied as `select(keep, s, -inf)` or as `s + select(keep, 0, -inf)`. */
  readonly maskApply: "select" | "add";
  /** Sliding window length (keys kept per query), 0 unless mask is "sliding". */
  readonly window: number;
  /** Query heads per KV head (GQA group size; 1 for plain multi-head). */
  readonly groups: number;
  /** Flash schedule chosen by flash-region synthesis (not part of the semantics). */
  readonly schedule?: { readonly [k: string]: number | string };
};

const MASKS: readonly string[] = ["causal", "sliding", "bool", "additive", "none"];

/** Attention(q [...,H,Tq,D], k [...,Hkv,Tk,D], v [...,Hkv,Tk,Dv], mask?) -> f32 [...,H,Tq,Dv], H = Hkv * groups. */
export const Attention: OpDef<AttentionParams> = {
  arity: { min: 3 }, category: "composite", view: false,
  doc: "grouped-query attention replaying the traced chain: f32 scores, scale, soft-cap, mask, two-pass softmax, P V",
  infer(inputs, p, ctx) {
    const [q, k, v, m] = inputs;
    requireFloat(ctx, "q", q!.dtype);
    requireFloat(ctx, "k", k!.dtype);
    requireFloat(ctx, "v", v!.dtype);
    if (!MASKS.includes(p.mask)) ctx.fail("bad-param", `mask ${JSON.stringify(p.mask)} is not a mask kind`);
    if (p.maskApply !== "select" && p.maskApply !== "add") ctx.fail("bad-param", "maskApply must be select or add");
    const groups = intParam(ctx, p.groups, "groups");
    const r = q!.shape.length;
    if (r < 3 || k!.shape.length !== r || v!.shape.length !== r) ctx.fail("shape-mismatch", "q, k, v need one rank >= 3: [..., heads, tokens, dim]");
    const [h, tq, d] = q!.shape.slice(-3) as [number, number, number];
    const [hk, tk, dk] = k!.shape.slice(-3) as [number, number, number];
    const [hv, tv, dv] = v!.shape.slice(-3) as [number, number, number];
    const batch = q!.shape.slice(0, -3);
    if (k!.shape.slice(0, -3).some((x, i) => x !== batch[i]) || v!.shape.slice(0, -3).some((x, i) => x !== batch[i])) ctx.fail("shape-mismatch", "q, k, v batch dims differ");
    if (dk !== d || hv !== hk || tv !== tk) ctx.fail("shape-mismatch", `k [${hk},${tk},${dk}] / v [${hv},${tv},${dv}] do not match q [${h},${tq},${d}]`);
    if (hk * groups !== h) ctx.fail("shape-mismatch", `${h} query heads are not ${hk} KV heads x ${groups} groups`);
    const scoreShape = [...batch, h, tq, tk];
    const needsInput = p.mask !== "none";
    if (needsInput !== (m !== undefined) || inputs.length > 4) ctx.fail("bad-arity", `mask ${p.mask} takes ${needsInput ? "one" : "no"} mask input`);
    if (m !== undefined) {
      const want = p.mask === "causal" || p.mask === "sliding" ? "i32" : p.mask === "bool" ? "bool" : null;
      if (want !== null && m.dtype !== want) ctx.fail("dtype-mismatch", `a ${p.mask} mask input must be ${want}`);
      if (want === null) requireFloat(ctx, "additive mask", m.dtype);
      const target = want === "i32" ? [...batch, h, tq, 1] : scoreShape;
      const b = mustBroadcast(ctx, target, m.shape, "mask");
      if (b.length !== target.length || b.some((x, i) => x !== target[i])) ctx.fail("shape-mismatch", `mask [${m.shape.join(",")}] does not broadcast to [${target.join(",")}]`);
    }
    if (p.mask === "sliding") intParam(ctx, p.window, "window");
    return { dtype: "f32", shape: [...batch, h, tq, dv] };
  },
  evaluate(inputs, p, out) {
    const [q, k, v, m] = inputs as [Tensor, Tensor, Tensor, Tensor | undefined];
    const r = q.shape.length;
    const [h, tq, d] = q.shape.slice(-3) as [number, number, number];
    const [hk, tk] = k.shape.slice(-3) as [number, number, number];
    const dv = v.shape[r - 1]!;
    const nb = numel(q.shape.slice(0, -3));
    const lim = p.mask === "causal" || p.mask === "sliding";
    const mShape = lim ? [...q.shape.slice(0, -3), h, tq, 1] : [...q.shape.slice(0, -3), h, tq, tk];
    const mm = m === undefined ? null : broadcastMap(mShape, m.shape);
    const f = Math.fround;
    const res = new Float64Array(numel(out.shape));
    const s = new Float64Array(tk);
    for (let b = 0; b < nb; b++) for (let hh = 0; hh < h; hh++) {
      const kvh = b * hk + Math.floor(hh / p.groups);
      for (let i = 0; i < tq; i++) {
        const qOff = ((b * h + hh) * tq + i) * d;
        const row = (b * h + hh) * tq + i;
        for (let j = 0; j < tk; j++) {
          let acc = 0;
          const kOff = (kvh * tk + j) * d;
          for (let c = 0; c < d; c++) acc += q.data[qOff + c]! * k.data[kOff + c]!;
          let x = f(acc);
          if (p.scale !== null) x = f(x * f(p.scale));
          if (p.softCap !== null) x = f(f(Math.tanh(f(x / f(p.softCap)))) * f(p.softCap));
          if (m !== undefined) {
            if (lim) {
              const L = m.data[mm === null ? row : mm[row]!]!;
              const keep = j <= L && (p.mask !== "sliding" || j > L - p.window);
              x = p.maskApply === "select" ? (keep ? x : -Infinity) : f(x + (keep ? 0 : -Infinity));
            } else {
              const mv = m.data[mm === null ? row * tk + j : mm[row * tk + j]!]!;
              x = p.mask === "bool" ? (mv !== 0 ? x : -Infinity) : f(x + mv);
            }
          }
          s[j] = x;
        }
        // Two-pass softmax, each step rounded to f32 as the primitive chain stores it.
        let mx = -Infinity;
        for (let j = 0; j < tk; j++) mx = Math.max(mx, s[j]!);
        let sum = 0;
        for (let j = 0; j < tk; j++) {
          s[j] = f(Math.exp(f(s[j]! - mx)));
          sum += s[j]!;
        }
        sum = f(sum);
        for (let j = 0; j < tk; j++) s[j] = f(s[j]! / sum);
        const oOff = row * dv;
        for (let c = 0; c < dv; c++) {
          let acc = 0;
          for (let j = 0; j < tk; j++) acc += s[j]! * v.data[(kvh * tk + j) * dv + c]!;
          res[oOff + c] = acc;
        }
      }
    }
    return res;
  },
};
