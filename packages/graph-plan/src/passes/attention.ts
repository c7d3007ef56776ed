// Attention recognition: MatMul(softmax(mask(softcap(Q K^T * scale))), V) over repeat-KV heads becomes one
// Attention. Gates refuse what the flash kernel cannot prove safe; each refusal names its first failed check.

import { isLiteral, type Eqn, type Operand, type ValueId } from "@poot/graph-ir";
import type { AttentionMaskKind } from "../composite/attention.js";
import type { Rewrite, Rule, RuleContext } from "../rules.js";
import { defIs, defOf, iotaOf, isLastAxis, peelUnitViews, peelWiden, scalarOf } from "./match.js";

type Fail = { readonly check: string; readonly detail: string };
const fail = (check: string, detail: string): Fail => ({ check, detail });
const isFail = (x: unknown): x is Fail => typeof x === "object" && x !== null && "check" in x;

type Mask = { kind: AttentionMaskKind; apply: "select" | "add"; input?: ValueId; window: number };

/** True when `o` is an iota counting key positions (along the scores' last axis of length tk). */
function isKeyIndex(cx: RuleContext, o: Operand | undefined, tk: number): boolean {
  if (o === undefined || isLiteral(o)) return false;
  const p = iotaOf(cx.draft, peelUnitViews(cx.draft, o));
  if (p === undefined) return false;
  const ax = p.axis < 0 ? p.axis + p.shape.length : p.axis;
  return ax === p.shape.length - 1 && p.shape[ax] === tk && p.shape.every((s, i) => i === ax || s === 1);
}

/** Whether a bool condition reads any position iota (then it must be exactly causal or sliding). */
function readsIota(cx: RuleContext, v: ValueId, depth = 0): boolean {
  if (iotaOf(cx.draft, v) !== undefined) return true;
  const e = cx.draft.def(v);
  if (e === undefined || depth > 8) return false;
  return e.inputs.some((o) => !isLiteral(o) && readsIota(cx, o, depth + 1));
}

function causalBound(cx: RuleContext, c: Eqn | undefined, tk: number): ValueId | undefined {
  if (c === undefined) return undefined;
  const [a, b] = c.inputs;
  // keep j <= L, written Le(j, L) or Ge(L, j); L must be constant along the key axis.
  const L = c.op === "Le" && isKeyIndex(cx, a, tk) ? b : c.op === "Ge" && isKeyIndex(cx, b, tk) ? a : undefined;
  if (L === undefined || isLiteral(L)) return undefined;
  const lv = cx.draft.values[L]!;
  return lv.dtype === "i32" && lv.shape[lv.shape.length - 1] === 1 ? L : undefined;
}

function windowOf(cx: RuleContext, c: Eqn | undefined, L: ValueId, tk: number): number | undefined {
  if (c === undefined) return undefined;
  // keep j > L - W, written Gt(j, Sub(L, W)) or Lt(Sub(L, W), j).
  const [a, b] = c.inputs;
  const lower = c.op === "Gt" && isKeyIndex(cx, a, tk) ? b : c.op === "Lt" && isKeyIndex(cx, b, tk) ? a : undefined;
  const sub = defIs(cx.draft, lower, "Sub");
  if (sub === undefined || sub.inputs[0] !== L) return undefined;
  const w = scalarOf(cx.draft, sub.inputs[1]);
  return w !== undefined && Number.isInteger(w) && w > 0 ? w : undefined;
}

function condMask(cx: RuleContext, cond: ValueId, tk: number, apply: "select" | "add"): Mask | Fail {
  const d = cx.draft;
  const c = d.def(cond);
  const L = causalBound(cx, c, tk);
  if (L !== undefined) return { kind: "causal", apply, input: L, window: 0 };
  if (c?.op === "And") {
    for (const [p, q] of [
      [0, 1],
      [1, 0],
    ] as const) {
      const L2 = causalBound(cx, defOf(d, c.inputs[p]), tk);
      if (L2 === undefined) continue;
      const w = windowOf(cx, defOf(d, c.inputs[q]), L2, tk);
      if (w !== undefined) return { kind: "sliding", apply, input: L2, window: w };
    }
  }
  if (readsIota(cx, cond))
    return fail(
      "mask-form",
      "the mask compares key positions but is neither causal (j <= L) nor a sliding window (L - W < j <= L) with L constant along the keys",
    );
  return { kind: "bool", apply: "select", input: cond, window: 0 };
}

/** Parses scores = softcap(MatMul(Q, K^T) * scale). */
function scores(
  cx: RuleContext,
  s: ValueId,
): { q: ValueId; kT: ValueId; mm: Eqn; scale: number | null; softCap: number | null } | Fail {
  const d = cx.draft;
  let cur = s,
    softCap: number | null = null,
    scale: number | null = null;
  const capMul = defIs(d, cur, "Mul");
  const tanh = capMul && defIs(d, capMul.inputs[0], "Tanh");
  if (capMul !== undefined && tanh !== undefined) {
    const div = defIs(d, tanh.inputs[0], "Div");
    const c1 = scalarOf(d, capMul.inputs[1]),
      c2 = div && scalarOf(d, div.inputs[1]);
    if (div === undefined || c1 === undefined || c1 !== c2 || !isLiteral(capMul.inputs[1]!))
      return fail("softcap-form", "tanh soft-capping must be tanh(s / c) * c with one literal c");
    softCap = c1;
    cur = div.inputs[0] as number;
  }
  const mul = defIs(d, cur, "Mul");
  if (mul !== undefined) {
    const lit = [1, 0].find((i) => isLiteral(mul.inputs[i]!));
    if (lit === undefined) return fail("scale-form", "the score scale is not a literal");
    scale = (mul.inputs[lit] as { lit: number }).lit;
    cur = mul.inputs[1 - lit] as number;
  }
  const mm = defIs(d, cur, "MatMul");
  if (mm === undefined) return fail("scores-matmul", "the softmax input is not (a scaled, capped, masked) Q @ K^T");
  return { q: mm.inputs[0] as number, kT: mm.inputs[1] as number, mm, scale, softCap };
}

/** Undoes repeat_kv (reshape -> broadcast over a new group axis -> reshape); a bare head broadcast is refused. */
function kvHeads(cx: RuleContext, v: ValueId): { src: ValueId; groups: number } | Fail {
  const d = cx.draft;
  const r1 = defIs(d, v, "Reshape");
  const b = r1 && defIs(d, r1.inputs[0], "Broadcast");
  const r0 = b && defIs(d, b.inputs[0], "Reshape");
  if (r1 !== undefined && b !== undefined && r0 !== undefined) {
    const src = d.values[r0.inputs[0] as number]!.shape,
      e = d.values[r0.out]!.shape,
      bo = d.values[b.out]!.shape,
      o = d.values[v]!.shape;
    const r = src.length;
    const ok =
      e.length === r + 1 &&
      e[r - 2] === 1 &&
      bo.length === r + 1 &&
      o.length === r &&
      src.slice(0, r - 2).every((x, i) => e[i] === x && bo[i] === x) &&
      e.slice(r - 1).every((x, i) => x === src[r - 2 + i] && bo[r - 1 + i] === x) &&
      o[r - 3] === src[r - 3]! * bo[r - 2]! &&
      o.slice(r - 2).every((x, i) => x === src[r - 2 + i]);
    if (!ok)
      return fail(
        "kv-repeat",
        "the KV repeat is not reshape [.., Hkv, 1, T, D] -> broadcast [.., Hkv, n, T, D] -> reshape [.., Hkv*n, T, D]",
      );
    return { src: peelWiden(d, r0.inputs[0] as number), groups: bo[r - 2]! };
  }
  if (defIs(d, v, "Broadcast") !== undefined)
    return fail(
      "kv-head-broadcast",
      "K/V is a bare broadcast of a single KV head; only the repeat-KV group structure is proved to map query head h to KV head h / groups",
    );
  return { src: v, groups: 1 };
}

/** True when a KV tensor is (a view or update of) a persistent State buffer. */
function fromState(cx: RuleContext, v: ValueId): boolean {
  for (let i = 0; i < 16; i++) {
    if (cx.draft.storageOf(v) === "state") return true;
    const e = cx.draft.def(v);
    if (
      e === undefined ||
      !["DynamicUpdateSlice", "Reshape", "Transpose", "Cast", "Broadcast", "Slice"].includes(e.op) ||
      isLiteral(e.inputs[0]!)
    )
      return false;
    v = e.inputs[0] as number;
  }
  return false;
}

/**
 * A paged KV read (decision 0603): `Transpose[0,2,1,3](Reshape(Gather(Reshape(pool [P·ps, Hkv, D] -> [P, ps,
 * Hkv, D]), table [B, n], axis 0) -> [B, n·ps, Hkv, D]))`. Returns the pool rows, the table and the page size.
 */
function pagedSource(cx: RuleContext, v: ValueId): { pool: ValueId; table: ValueId; pageSize: number } | undefined {
  const d = cx.draft;
  const t = defIs(d, v, "Transpose");
  const perm = t?.params.perm as number[] | undefined;
  if (t === undefined || perm?.join(",") !== "0,2,1,3") return undefined;
  const r = defIs(d, t.inputs[0], "Reshape");
  const g = r && defIs(d, r.inputs[0], "Gather");
  if (r === undefined || g === undefined || (g.params.axis as number) !== 0 || isLiteral(g.inputs[1]!))
    return undefined;
  const pv = defIs(d, g.inputs[0], "Reshape");
  if (pv === undefined || isLiteral(pv.inputs[0]!)) return undefined;
  const pool = pv.inputs[0] as number,
    table = g.inputs[1] as number;
  const ps4 = d.values[pv.out]!.shape,
    rows = d.values[pool]!.shape,
    tb = d.values[table]!.shape,
    out = d.values[r.out]!.shape;
  if (ps4.length !== 4 || rows.length !== 3 || tb.length !== 2 || out.length !== 4 || d.values[table]!.dtype !== "i32")
    return undefined;
  const [P, ps, hk, dh] = ps4 as [number, number, number, number];
  if (rows[0] !== P * ps || rows[1] !== hk || rows[2] !== dh) return undefined;
  if (out[0] !== tb[0] || out[1] !== tb[1]! * ps || out[2] !== hk || out[3] !== dh) return undefined;
  return { pool, table, pageSize: ps };
}

function match(
  cx: RuleContext,
  e: Eqn,
): { inputs: ValueId[]; params: Record<string, number | string | null> } | Fail | null {
  const d = cx.draft;
  const div = defIs(d, e.inputs[0], "Div");
  const ex = div && defIs(d, div.inputs[0], "Exp");
  const sumR = div && defIs(d, div.inputs[1], "Reduce");
  if (div === undefined || ex === undefined || sumR === undefined) return null;
  const rank = d.values[e.out]!.shape.length;
  if (
    sumR.params.kind !== "sum" ||
    !isLastAxis(sumR.params.axes, rank) ||
    sumR.params.keepdim !== true ||
    sumR.inputs[0] !== div.inputs[0]
  )
    return fail("softmax-sum", "the normalizer is not a last-axis keepdim sum of the same exponentials");
  const sub = defIs(d, ex.inputs[0], "Sub");
  const mx = sub && defIs(d, sub.inputs[1], "Reduce");
  if (
    sub === undefined ||
    mx === undefined ||
    mx.params.kind !== "max" ||
    !isLastAxis(mx.params.axes, rank) ||
    mx.params.keepdim !== true ||
    mx.inputs[0] !== sub.inputs[0]
  )
    return fail("softmax-max", "the exponent is not x - max(x) over the last axis");
  const X = sub.inputs[0] as number;
  const tk = d.values[X]!.shape[rank - 1]!;
  let mask: Mask = { kind: "none", apply: "select", window: 0 };
  let S = X;
  const sel = defIs(d, X, "Select"),
    add = defIs(d, X, "Add");
  if (sel !== undefined) {
    if (scalarOf(d, sel.inputs[2]) !== -Infinity)
      return fail("mask-fill", "a select mask must fill dropped scores with -inf");
    const m = condMask(cx, sel.inputs[0] as number, tk, "select");
    if (isFail(m)) return m;
    mask = m;
    S = sel.inputs[1] as number;
  } else if (add !== undefined) {
    const side = [0, 1].find((i) => !isLiteral(add.inputs[i]!) && !isFail(scores(cx, add.inputs[i] as number)));
    if (side === undefined) return fail("scores-matmul", "neither addend of the masked scores is Q @ K^T");
    S = add.inputs[side] as number;
    const M = add.inputs[1 - side]!;
    if (isLiteral(M)) return fail("mask-form", "a literal added to every score is not a mask");
    const msel = defIs(d, M, "Select");
    if (msel !== undefined) {
      if (scalarOf(d, msel.inputs[1]) !== 0 || scalarOf(d, msel.inputs[2]) !== -Infinity)
        return fail("mask-fill", "an additive select mask must be select(keep, 0, -inf)");
      const m = condMask(cx, msel.inputs[0] as number, tk, "add");
      if (isFail(m)) return m;
      mask = m.kind === "bool" ? { kind: "additive", apply: "add", input: M as number, window: 0 } : m;
    } else if (readsIota(cx, M as number))
      return fail("mask-form", "an additive position mask must be select(causal or sliding keep, 0, -inf)");
    else mask = { kind: "additive", apply: "add", input: M as number, window: 0 };
  }
  if (d.values[S]!.shape.some((x, i) => x !== d.values[X]!.shape[i]))
    return fail("mask-shape", "the mask broadcasts the scores to a larger shape");
  const sc = scores(cx, S);
  if (isFail(sc)) return sc;
  const kt = defIs(d, sc.kT, "Transpose");
  const perm = kt?.params.perm as number[] | undefined;
  if (
    kt === undefined ||
    perm === undefined ||
    perm.some((p, i) => p !== (i === rank - 2 ? rank - 1 : i === rank - 1 ? rank - 2 : i))
  )
    return fail("key-transpose", "Q is not multiplied by K transposed over its last two axes");
  for (const v of [sc.mm.out, X, div.out, e.out]) {
    if (d.values[v]!.dtype !== "f32") {
      cx.numericalDecline(
        "attention",
        e.out,
        "narrow-compute",
        "the attention chain computes in a narrow dtype; Attention replays f32 steps only",
      );
      return fail("compute-dtype", "the chain is not computed in f32");
    }
  }
  const k = kvHeads(cx, peelWiden(d, kt.inputs[0] as number));
  if (isFail(k)) return k;
  const v = kvHeads(cx, peelWiden(d, e.inputs[1] as number));
  if (isFail(v)) return v;
  const q = peelWiden(d, sc.q);
  const qh = d.values[q]!.shape[rank - 3],
    kh = d.values[k.src]!.shape[rank - 3];
  if (k.groups !== v.groups || qh !== kh! * k.groups)
    return fail(
      "kv-groups",
      `K and V groups (${k.groups}, ${v.groups}) do not map ${qh} query heads onto ${kh} KV heads`,
    );
  if (mask.kind === "none" && (fromState(cx, k.src) || fromState(cx, v.src)))
    return fail(
      "live-length",
      "K/V read a persistent cache and no mask bounds the live length: unwritten rows would be attended",
    );
  const params = {
    scale: sc.scale === null ? null : Math.fround(sc.scale),
    softCap: sc.softCap,
    mask: mask.kind,
    maskApply: mask.apply,
    window: mask.window,
    groups: k.groups,
  };
  // Paged KV: read the pools through the page table inside Attention instead of gathering each sequence's pages.
  const pk = pagedSource(cx, k.src),
    pv = pagedSource(cx, v.src);
  if (
    pk !== undefined &&
    pv !== undefined &&
    pk.table === pv.table &&
    pk.pageSize === pv.pageSize &&
    (mask.kind === "causal" || mask.kind === "sliding") &&
    mask.input !== undefined &&
    d.values[q]!.shape.length === 4
  ) {
    return { inputs: [q, pk.pool, pv.pool, mask.input, pk.table], params: { ...params, pageSize: pk.pageSize } };
  }
  const inputs = [q, k.src, v.src, ...(mask.input === undefined ? [] : [mask.input])];
  return { inputs, params };
}

/** Attention recognition (rooted at the P @ V MatMul). */
export const attentionRule: Rule = {
  name: "attention",
  ops: ["MatMul"],
  apply(_k, e, cx): Rewrite | null {
    const m = match(cx, e);
    if (m === null) return null;
    if (isFail(m)) {
      const name = cx.draft.values[e.out]!.name;
      cx.decline({
        pattern: "attention",
        value: e.out,
        ...(name === undefined ? {} : { name }),
        check: m.check,
        detail: m.detail,
      });
      return null;
    }
    return { kind: "replace", eqn: { op: "Attention", inputs: m.inputs, params: m.params, out: e.out } };
  },
};
