// The CPU (serial threads + SIMD loads) inner loops of the lane-per-key attention kernel: with one lane per
// (query, head) (decision 0951), q·k sums four vec4 partial products over load4 reads of q and k, and the value row
// accumulates as Dv / 4 vec4s kept in registers; each product, the softmax and the per-element acc·corr + p·v stay
// as in the scalar loop, only the dot product's sum is reassociated (decision 0954).

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import type { SynthCaps } from "../caps.js";
import type { AttentionIo, AttentionLayout, AttentionRow } from "./attention-common.js";
import { sum4x4 } from "./dequant-cpu.js";

/** @internal One lane's work on its row: the score dot of a key, the value accumulation, the flush of acc. */
export interface LaneRowOps {
  /** q · k for the key whose row starts at element `kr` of k. */
  dot(kr: Val<"u32">): Val<"f32">;
  /** acc ← acc · corr + pj · v for the value row starting at element `vr` of v. */
  accumulate(vr: Val<"u32">, corr: Val<"f32">, pj: Val<"f32">): void;
  /** Stores acc[d] to sacc[lane · Dv + d]. */
  flush(sacc: Arr<"f32">, lane: Val<"u32">): void;
}

/**
 * @internal A lane's row once q is staged: `acc()` declares the value accumulator (after the running max and sum,
 * where the kernel declares them) and returns the row ops.
 */
export interface LaneRow {
  acc(): LaneRowOps;
}

/** True when the SIMD row ops serve: serial threads with SIMD loads, one lane, dims of multiples of 4, unit dim strides. */
export function simdAttentionApplies(L: AttentionLayout, caps: SynthCaps, lanes: number): boolean {
  const unit = L.qs4[3] === 1 && L.ks4[3] === 1 && L.vs4[3] === 1;
  return (
    caps.serialThreads === true && caps.simdLoads === true && lanes === 1 && L.D % 4 === 0 && L.Dv % 4 === 0 && unit
  );
}

/** The SIMD row: q held as D / 4 vec4s read once with load4. */
export function simdRowOps(b: Builder, L: AttentionLayout, io: AttentionIo, r: AttentionRow): LaneRow {
  const qRow = r.at(L.qs4, r.h, r.t);
  const qv = Array.from({ length: L.D / 4 }, (_, i) => b.let_(io.q.at4(qRow.add(4 * i), "vec4<f32>"), "q4"));
  return { acc: () => simdAcc(b, L, io, qv) };
}

/** The SIMD ops over q's vec4s `qv`, with acc as Dv / 4 vec4 variables. */
function simdAcc(b: Builder, L: AttentionLayout, io: AttentionIo, qv: readonly Val<"vec4<f32>">[]): LaneRowOps {
  const { let_, var_, f32 } = b;
  const zero4 = (): Val<"vec4<f32>"> => b.vec("vec4<f32>", f32(0), f32(0), f32(0), f32(0));
  const acc = Array.from({ length: L.Dv / 4 }, () => var_(zero4(), "acc4"));
  return {
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
