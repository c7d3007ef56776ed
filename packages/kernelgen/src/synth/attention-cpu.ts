// The CPU (serial threads + SIMD loads) inner loops of the lane-per-key attention kernel: with one lane per
// (query, head) (decision 0951), q·k sums four vec4 partial products over load4 reads of q and k, and the value row
// accumulates as Dv / 4 vec4s kept in registers; each product, the softmax and the per-element acc·corr + p·v stay
// as in the scalar loop, only the dot product's sum is reassociated (decision 0954). Without a mask tensor the keys
// go in blocks of KEY_BLOCK (decision 2306): the block's q·k dots side by side, one running-max update, one rescale of
// acc per block and its p·v products summed into it. Its exps are `expF32` in kernel IR, not calls out of the Wasm
// module (decision 2450).

import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";
import type { SynthCaps } from "../caps.js";
import type { AttentionIo, AttentionLayout, AttentionRow } from "./attention-common.js";
import { sum4x4 } from "./dequant-cpu.js";
import { expF32 } from "./gemv-native.js";

/** @internal One lane's work on its row: the score dot of a key, the value accumulation, the flush of acc. */
export interface LaneRowOps {
  /** q · k for the key whose row starts at element `kr` of k. */
  dot(kr: Val<"u32">): Val<"f32">;
  /** acc ← acc · corr + pj · v for the value row starting at element `vr` of v. */
  accumulate(vr: Val<"u32">, corr: Val<"f32">, pj: Val<"f32">): void;
  /** Stores acc[d] to sacc[lane · Dv + d]. */
  flush(sacc: Arr<"f32">, lane: Val<"u32">): void;
}

/** @internal The SIMD row's block ops: a block of keys at once. */
export interface BlockRowOps extends LaneRowOps {
  /** q · k for each key of a block (rows at `krs`), one vec4 sum per key. */
  dots(krs: readonly Val<"u32">[]): Val<"f32">[];
  /** acc ← acc · corr + Σ_i ps[i] · v_i for the value rows at `vrs`. */
  accumulateBlock(vrs: readonly Val<"u32">[], corr: Val<"f32">, ps: readonly Val<"f32">[]): void;
}

/** Keys per block of the SIMD row's key loop. */
export const KEY_BLOCK = 4;

/**
 * @internal A lane's row once q is staged: `acc()` declares the value accumulator (after the running max and sum,
 * where the kernel declares them) and returns the row ops.
 */
export interface LaneRow {
  acc(): LaneRowOps;
}

/** @internal The SIMD row, whose ops take blocks of keys too. */
export interface SimdRow extends LaneRow {
  acc(): BlockRowOps;
}

/** True when the SIMD row ops serve: serial threads with SIMD loads, one lane, dims of multiples of 4, unit dim strides. */
export function simdAttentionApplies(L: AttentionLayout, caps: SynthCaps, lanes: number): boolean {
  const unit = L.qs4[3] === 1 && L.ks4[3] === 1 && L.vs4[3] === 1;
  return (
    caps.serialThreads === true && caps.simdLoads === true && lanes === 1 && L.D % 4 === 0 && L.Dv % 4 === 0 && unit
  );
}

/** The SIMD row: q held as D / 4 vec4s read once with load4. */
export function simdRowOps(b: Builder, L: AttentionLayout, io: AttentionIo, r: AttentionRow): SimdRow {
  const qRow = r.at(L.qs4, r.h, r.t);
  const qv = Array.from({ length: L.D / 4 }, (_, i) => b.let_(io.q.at4(qRow.add(4 * i), "vec4<f32>"), "q4"));
  return { acc: () => simdAcc(b, L, io, qv) };
}

/** The SIMD ops over q's vec4s `qv`, with acc as Dv / 4 vec4 variables. */
function simdAcc(b: Builder, L: AttentionLayout, io: AttentionIo, qv: readonly Val<"vec4<f32>">[]): BlockRowOps {
  const { let_, var_, f32 } = b;
  const zero4 = (): Val<"vec4<f32>"> => b.vec("vec4<f32>", f32(0), f32(0), f32(0), f32(0));
  const splat = (x: Val<"f32">, name: string): Val<"vec4<f32>"> => let_(b.vec("vec4<f32>", x, x, x, x), name);
  const acc = Array.from({ length: L.Dv / 4 }, () => var_(zero4(), "acc4"));
  return {
    dots: (krs) => {
      const ps = krs.map(() => var_(zero4(), "bdot4"));
      qv.forEach((q4, i) => ps.forEach((p, j) => p.set(p.add(q4.mul(io.K.at4(krs[j]!.add(4 * i), "vec4<f32>"))))));
      return ps.map((p) => {
        const v = let_(p, "bsum");
        return let_(v.x.add(v.y).add(v.z.add(v.w)), "bdot");
      });
    },
    accumulateBlock: (vrs, corr, pjs) => {
      const c4 = splat(corr, "corr4");
      const p4 = pjs.map((p) => splat(p, "pj4"));
      acc.forEach((a, i) => {
        let sum = a.mul(c4);
        vrs.forEach((vr, j) => (sum = sum.add(p4[j]!.mul(io.V.at4(vr.add(4 * i), "vec4<f32>")))));
        a.set(sum);
      });
    },
    dot: (kr) => {
      const ps = [0, 1, 2, 3].map(() => var_(zero4(), "dot4"));
      qv.forEach((q4, i) => {
        const p = ps[i % 4]!;
        p.set(p.add(q4.mul(io.K.at4(kr.add(4 * i), "vec4<f32>"))));
      });
      return sum4x4(b, ps);
    },
    accumulate: (vr, corr, pj) => {
      const c4 = let_(b.vec("vec4<f32>", corr, corr, corr, corr), "corr4");
      const p4 = let_(b.vec("vec4<f32>", pj, pj, pj, pj), "pj4");
      acc.forEach((a, i) => a.set(a.mul(c4).add(p4.mul(io.V.at4(vr.add(4 * i), "vec4<f32>")))));
    },
    flush: (sacc, lane) => {
      const base = let_(lane.mul(L.Dv), "acc_base");
      acc.forEach((a, i) => [0, 1, 2, 3].forEach((c) => sacc.set(base.add(4 * i + c), a.lane(c))));
    },
  };
}

/** Folds `xs` (a power-of-two count) pairwise: ((x0 ∘ x1) ∘ (x2 ∘ x3)) … */
function pairwise(xs: readonly Val<"f32">[], op: (x: Val<"f32">, y: Val<"f32">) => Val<"f32">): Val<"f32"> {
  if (xs.length === 1) return xs[0]!;
  const h = xs.length / 2;
  return op(pairwise(xs.slice(0, h), op), pairwise(xs.slice(h), op));
}

/** What the blocked key loop needs from the kernel: the score of a dot, the running max and sum, the row ops. */
export interface KeyBlockParts {
  /** The score of a raw q·k (scaled, soft-capped). */
  readonly score: (dot: Val<"f32">) => Val<"f32">;
  readonly m: Var<"f32">;
  readonly l: Var<"f32">;
  readonly acc: BlockRowOps;
}

/**
 * Emits the keys [lo, end) in blocks of {@link KEY_BLOCK} (end: lo plus the whole blocks of [lo, hi)) and returns
 * `end`; the caller walks [end, hi) key by key. Each block: its scores, one new max over them, corr = exp(m − m'),
 * p_i = exp(s_i − m'), l ← l·corr + Σ p_i, acc ← acc·corr + Σ p_i·v_i. Only for rows without a mask tensor: the
 * scores are then finite (no key to skip). `exp` is kernelgen's `expF32` (about 1 ulp), not the Wasm's call out of the
 * module for each one (decision 2450).
 */
export function keyBlocks(b: Builder, L: AttentionLayout, r: AttentionRow, p: KeyBlockParts): Val<"u32"> {
  const { let_, for_, max } = b;
  const exp = (v: Val<"f32">): Val<"f32"> => expF32(b, v);
  const n = let_(max(r.hi, r.lo).sub(r.lo), "live");
  const end = let_(r.lo.add(n.sub(n.rem(KEY_BLOCK))), "blocks_end");
  for_(
    r.lo,
    end,
    KEY_BLOCK,
    (j0) => {
      const rows = Array.from({ length: KEY_BLOCK }, (_, i) => r.tokenRow(i === 0 ? j0 : j0.add(i)));
      const dots = p.acc.dots(rows.map((j) => r.at(L.ks4, r.kvh, j)));
      const s = dots.map((d) => p.score(d));
      const mNew = let_(max(p.m, pairwise(s, max)), "m_new");
      const corr = let_(exp(p.m.sub(mNew)), "corr");
      const ps = s.map((si) => let_(exp(si.sub(mNew)), "pj"));
      p.l.set(p.l.mul(corr).add(pairwise(ps, (x, y) => x.add(y))));
      p.acc.accumulateBlock(
        rows.map((j) => r.at(L.vs4, r.kvh, j)),
        corr,
        ps,
      );
      p.m.set(mNew);
    },
    "jb",
  );
  return end;
}
