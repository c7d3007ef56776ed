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
  /**
   * Paged KV (decision 0603): when > 0, k and v are page pools of rows [pages·pageSize, Hkv, D] and a last
   * input, the page table i32 [batch, pagesPerSequence], maps key j of batch b to pool row
   * table[b, j / pageSize] · pageSize + j % pageSize (Tk = pagesPerSequence · pageSize). Absent or 0: contiguous.
   */
  readonly pageSize?: number;
};

/** Key count, and the pool row of key j of batch b, of a paged Attention's page table (identity rows when contiguous). */
function keyRows(
  p: AttentionParams,
  table: Tensor | undefined,
  tk: number,
): { tk: number; row: (b: number, j: number) => number } {
  const ps = p.pageSize ?? 0;
  if (ps === 0 || table === undefined) return { tk, row: (_b, j) => j };
  const per = table.shape[1]!;
  return { tk: per * ps, row: (b, j) => table.data[b * per + Math.floor(j / ps)]! * ps + (j % ps) };
}

const MASKS: readonly string[] = ["causal", "sliding", "bool", "additive", "none"];

/** Checks a paged Attention: q [B, H, Tq, D], k/v pools [rows, Hkv, D|Dv], an i32 limit [B, H?, Tq, 1], the page table i32 [B, pages]. */
function inferPaged(
  inputs: readonly { dtype: import("@poot/graph-ir").DType; shape: readonly number[] }[],
  p: AttentionParams,
  ctx: Parameters<OpDef<AttentionParams>["infer"]>[2],
): { dtype: "f32"; shape: number[] } {
  const [q, k, v, m, t] = inputs;
  const ps = intParam(ctx, p.pageSize, "pageSize");
  if (inputs.length !== 5 || m === undefined || t === undefined)
    ctx.fail("bad-arity", "a paged Attention takes q, k pool, v pool, limit and page table");
  if (p.mask !== "causal" && p.mask !== "sliding")
    ctx.fail("bad-param", `a paged Attention needs a causal or sliding mask, got ${p.mask}`);
  requireFloat(ctx, "q", q!.dtype);
  requireFloat(ctx, "k", k!.dtype);
  requireFloat(ctx, "v", v!.dtype);
  if (q!.shape.length !== 4 || k!.shape.length !== 3 || v!.shape.length !== 3)
    ctx.fail("shape-mismatch", "paged Attention: q [B, H, Tq, D] with k/v pools [rows, Hkv, D]");
  const [B, h, tq, d] = q!.shape as [number, number, number, number];
  const [rows, hk, dk] = k!.shape as [number, number, number];
  const [rowsV, hv, dv] = v!.shape as [number, number, number];
  if (rows !== rowsV || hk !== hv || dk !== d || rows % ps !== 0)
    ctx.fail(
      "shape-mismatch",
      `k pool [${k!.shape.join(",")}] / v pool [${v!.shape.join(",")}] do not match q [${q!.shape.join(",")}] in pages of ${ps}`,
    );
  const groups = intParam(ctx, p.groups, "groups");
  if (hk * groups !== h) ctx.fail("shape-mismatch", `${h} query heads are not ${hk} KV heads x ${groups} groups`);
  if (t!.dtype !== "i32" || t!.shape.length !== 2 || t!.shape[0] !== B)
    ctx.fail("shape-mismatch", `the page table must be i32 [${B}, pages], got [${t!.shape.join(",")}]`);
  if (m!.dtype !== "i32") ctx.fail("dtype-mismatch", "a causal/sliding limit must be i32");
  const target = [B, h, tq, 1];
  const bc = mustBroadcast(ctx, target, m!.shape, "mask");
  if (bc.length !== 4 || bc.some((x, i) => x !== target[i]))
    ctx.fail("shape-mismatch", `limit [${m!.shape.join(",")}] does not broadcast to [${target.join(",")}]`);
  if (p.mask === "sliding") intParam(ctx, p.window, "window");
  return { dtype: "f32", shape: [B, h, tq, dv] };
}

/** Attention(q [...,H,Tq,D], k [...,Hkv,Tk,D], v [...,Hkv,Tk,Dv], mask?) -> f32 [...,H,Tq,Dv], H = Hkv * groups; paged: see {@link AttentionParams.pageSize}. */
export const Attention: OpDef<AttentionParams> = {
  arity: { min: 3 },
  category: "composite",
  view: false,
  doc: "grouped-query attention replaying the traced chain: f32 scores, scale, soft-cap, mask, two-pass softmax, P V",
  infer(inputs, p, ctx) {
    const ps = p.pageSize ?? 0;
    if (ps !== 0) return inferPaged(inputs, p, ctx);
    const [q, k, v, m] = inputs;
    requireFloat(ctx, "q", q!.dtype);
    requireFloat(ctx, "k", k!.dtype);
    requireFloat(ctx, "v", v!.dtype);
    if (!MASKS.includes(p.mask)) ctx.fail("bad-param", `mask ${JSON.stringify(p.mask)} is not a mask kind`);
    if (p.maskApply !== "select" && p.maskApply !== "add") ctx.fail("bad-param", "maskApply must be select or add");
    const groups = intParam(ctx, p.groups, "groups");
    const r = q!.shape.length;
    if (r < 3 || k!.shape.length !== r || v!.shape.length !== r)
      ctx.fail("shape-mismatch", "q, k, v need one rank >= 3: [..., heads, tokens, dim]");
    const [h, tq, d] = q!.shape.slice(-3) as [number, number, number];
    const [hk, tk, dk] = k!.shape.slice(-3) as [number, number, number];
    const [hv, tv, dv] = v!.shape.slice(-3) as [number, number, number];
    const batch = q!.shape.slice(0, -3);
    if (k!.shape.slice(0, -3).some((x, i) => x !== batch[i]) || v!.shape.slice(0, -3).some((x, i) => x !== batch[i]))
      ctx.fail("shape-mismatch", "q, k, v batch dims differ");
    if (dk !== d || hv !== hk || tv !== tk)
      ctx.fail("shape-mismatch", `k [${hk},${tk},${dk}] / v [${hv},${tv},${dv}] do not match q [${h},${tq},${d}]`);
    if (hk * groups !== h) ctx.fail("shape-mismatch", `${h} query heads are not ${hk} KV heads x ${groups} groups`);
    const scoreShape = [...batch, h, tq, tk];
    const needsInput = p.mask !== "none";
    if (needsInput !== (m !== undefined) || inputs.length > 4)
      ctx.fail("bad-arity", `mask ${p.mask} takes ${needsInput ? "one" : "no"} mask input`);
    if (m !== undefined) {
      const want = p.mask === "causal" || p.mask === "sliding" ? "i32" : p.mask === "bool" ? "bool" : null;
      if (want !== null && m.dtype !== want) ctx.fail("dtype-mismatch", `a ${p.mask} mask input must be ${want}`);
      if (want === null) requireFloat(ctx, "additive mask", m.dtype);
      const target = want === "i32" ? [...batch, h, tq, 1] : scoreShape;
      const b = mustBroadcast(ctx, target, m.shape, "mask");
      if (b.length !== target.length || b.some((x, i) => x !== target[i]))
        ctx.fail("shape-mismatch", `mask [${m.shape.join(",")}] does not broadcast to [${target.join(",")}]`);
    }
    if (p.mask === "sliding") intParam(ctx, p.window, "window");
    return { dtype: "f32", shape: [...batch, h, tq, dv] };
  },
  evaluate(inputs, p, out, ctx) {
    const paged = (p.pageSize ?? 0) !== 0;
    const [q, k, v, m, table] = inputs as [Tensor, Tensor, Tensor, Tensor | undefined, Tensor | undefined];
    if (paged) {
      const pages = k.shape[0]! / p.pageSize!;
      table!.data.forEach((x, i) => {
        if (!(x >= 0 && x < pages))
          ctx.fail("index-out-of-range", `page table entry ${x} at position ${i} is outside [0, ${pages})`);
      });
    }
    const r = q.shape.length;
    const [h, tq, d] = q.shape.slice(-3) as [number, number, number];
    // Contiguous k/v [..., Hkv, Tk, D] are read at row (b·Hkv + kvh)·Tk + j; pools [rows, Hkv, D] at row·Hkv + kvh.
    const hk = paged ? k.shape[1]! : k.shape[r - 3]!;
    const keys = keyRows(p, table, paged ? 0 : k.shape[r - 2]!);
    const tk = keys.tk;
    const kvAt = paged
      ? (b: number, kvh: number, j: number) => keys.row(b, j) * hk + kvh
      : (b: number, kvh: number, j: number) => (b * hk + kvh) * tk + j;
    const dv = v.shape[v.shape.length - 1]!;
    const nb = numel(q.shape.slice(0, -3));
    const lim = p.mask === "causal" || p.mask === "sliding";
    const mShape = lim ? [...q.shape.slice(0, -3), h, tq, 1] : [...q.shape.slice(0, -3), h, tq, tk];
    const mm = m === undefined ? null : broadcastMap(mShape, m.shape);
    const f = Math.fround;
    const res = new Float64Array(numel(out.shape));
    const s = new Float64Array(tk);
    for (let b = 0; b < nb; b++)
      for (let hh = 0; hh < h; hh++) {
        const g = Math.floor(hh / p.groups);
        for (let i = 0; i < tq; i++) {
          const qOff = ((b * h + hh) * tq + i) * d;
          const row = (b * h + hh) * tq + i;
          for (let j = 0; j < tk; j++) {
            let acc = 0;
            const kOff = kvAt(b, g, j) * d;
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
            for (let j = 0; j < tk; j++) acc += s[j]! * v.data[kvAt(b, g, j) * dv + c]!;
            res[oOff + c] = acc;
          }
        }
      }
    return res;
  },
};
