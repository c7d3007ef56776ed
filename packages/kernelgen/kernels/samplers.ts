// Batched samplers over logits [B, V], one workgroup per row: Gumbel-argmax with per-row temperature, and
// top-k / top-p truncation followed by Gumbel-argmax over the kept set (exact sampling from the renormalized set).

import { kernel } from "@poot/kernel-dsl";
import type { Builder } from "@poot/kernel-dsl";
import { beats, blockArgmax, blockReduce } from "./lib/argmax.js";
import { philox4x32, uniformOpenFromBits } from "./lib/philox.js";

/**
 * Row b: s_i = logits[b, i] / T_b (T_b ≤ 0 means greedy: s_i = logits, no noise); NaN logits are never chosen.
 * Noise g_i = -log(-log(u_i)), u_i = ((w >> 9) + 0.5)·2^-23 with w word (i mod 4) of
 * philox(counter = (i div 4, 0, rng[4b+2], rng[4b+3]), key = (rng[4b], rng[4b+1])).
 * Truncated: the kept set is the longest prefix of the (s desc, index asc) order with at most topK[b] tokens
 * (0 = no limit) that stops at the first token where the cumulative softmax(s) mass reaches topP[b].
 * out[b] = argmax over kept i of s_i + g_i (i32).
 */
function samplerBody(truncate: boolean) {
  return (k: Builder): void => {
    const { buffer, uniform, shared, spec, lid, wid, f32, u32, var_, let_, for_, if_, while_, select, exp, log } = k;
    const logits = buffer("logits", "f32", "read");
    const temperature = buffer("temperature", "f32", "read");
    const rng = buffer("rng", "u32", "read");
    const topKBuf = truncate ? buffer("topK", "u32", "read") : undefined;
    const topPBuf = truncate ? buffer("topP", "f32", "read") : undefined;
    const out = buffer("out", "i32", "write");
    const V = uniform("V", "u32");
    const WG = spec("WG");
    const sv = shared("sv", "f32", { spec: "WG" });
    const si = shared("si", "u32", { spec: "WG" });
    const tid = let_(lid.x, "tid");
    const b = let_(wid.x, "b");
    const T = let_(temperature.at(b), "T");
    const greedy = let_(T.le(0), "greedy");
    // One definition of s_i, evaluated identically everywhere it is needed; NaN becomes -inf (never chosen).
    const score = (i: ReturnType<typeof u32>) => {
      const raw = logits.at(b.mul(V).add(i));
      const s = select(greedy, raw, raw.div(T));
      return let_(select(s.ne(s), f32(-Infinity), s), "s");
    };
    // Threshold of the kept set in (s desc, index asc) order: keep (s, i) iff s > thV or (s == thV and i <= thI).
    const thV = var_(f32(-Infinity), "th_v");
    const thI = var_(u32(0xffffffff), "th_i");
    if (truncate && topKBuf !== undefined && topPBuf !== undefined) {
      const topK = let_(topKBuf.at(b), "top_k");
      const topP = let_(topPBuf.at(b), "top_p");
      const kEff = let_(select(greedy, u32(1), select(topK.eq(0), V, topK)), "k_eff");
      const limited = let_(kEff.lt(V).or(topP.lt(1)), "limited");
      if_(
        limited,
        () => {
          const mLocal = var_(f32(-Infinity), "m_local");
          for_(tid, V, WG, (i) => mLocal.set(k.max(mLocal, score(i))), "i");
          const m = blockReduce(k, "max", WG, tid, mLocal, sv);
          const zLocal = var_(f32(0), "z_local");
          for_(tid, V, WG, (i) => zLocal.set(zLocal.add(exp(score(i).sub(m)))), "i");
          const Z = blockReduce(k, "add", WG, tid, zLocal, sv);
          const cum = var_(f32(0), "cum");
          const count = var_(u32(0), "count");
          const prevV = var_(f32(Infinity), "prev_v");
          const prevI = var_(u32(0), "prev_i");
          const first = var_(k.bool(true), "first");
          // A flag instead of `break`: some targets cannot leave a loop that contains barriers early.
          const done = var_(k.bool(false), "done");
          // Each pass finds the next token after (prevV, prevI) in the order; every thread sees the same winner.
          while_(count.lt(kEff).and(done.not()), () => {
            const best = var_(f32(-Infinity), "best");
            const bestIdx = var_(u32(0xffffffff), "best_i");
            for_(
              tid,
              V,
              WG,
              (i) => {
                const s = score(i);
                const after = let_(first.or(s.lt(prevV)).or(s.eq(prevV).and(i.gt(prevI))), "after");
                if_(after.and(beats(s, i, best, bestIdx)), () => {
                  best.set(s);
                  bestIdx.set(i);
                });
              },
              "i",
            );
            const w = blockArgmax(k, WG, tid, best, bestIdx, sv, si);
            if_(
              w.i.eq(0xffffffff),
              () => done.set(true),
              () => {
                thV.set(w.v);
                thI.set(w.i);
                prevV.set(w.v);
                prevI.set(w.i);
                first.set(false);
                count.set(count.add(1));
                cum.set(cum.add(exp(w.v.sub(m)).div(Z)));
                if_(cum.ge(topP), () => done.set(true));
              },
            );
          });
        },
        () => {
          thV.set(f32(-Infinity));
          thI.set(u32(0xffffffff));
        },
      );
    }
    const key0 = let_(rng.at(b.mul(4)), "key0");
    const key1 = let_(rng.at(b.mul(4).add(1)), "key1");
    const c2 = let_(rng.at(b.mul(4).add(2)), "c2");
    const c3 = let_(rng.at(b.mul(4).add(3)), "c3");
    const best = var_(f32(-Infinity), "gbest");
    const bestIdx = var_(u32(0xffffffff), "gbest_i");
    const groups = let_(V.add(3).shr(2), "groups");
    for_(
      tid,
      groups,
      WG,
      (g) => {
        const words = philox4x32(k, [g, u32(0), c2, c3], [key0, key1]);
        words.forEach((word, lane) => {
          const i = let_(g.mul(4).add(lane), "gi");
          if_(i.lt(V), () => {
            const s = score(i);
            const kept = let_(s.gt(thV).or(s.eq(thV).and(i.le(thI))), "kept");
            const noise = let_(log(uniformOpenFromBits(word)).neg(), "e");
            const z = let_(select(greedy, s, s.sub(log(noise))), "z");
            if_(kept.and(s.gt(-Infinity)).and(beats(z, i, best, bestIdx)), () => {
              best.set(z);
              bestIdx.set(i);
            });
          });
        });
      },
      "g",
    );
    const w = blockArgmax(k, WG, tid, best, bestIdx, sv, si);
    // A row with no finite logit has no winner: report token 0 rather than an out-of-range id.
    if_(tid.eq(0), () => out.set(b, select(w.i.eq(0xffffffff), u32(0), w.i).i32()));
  };
}

const opts = { workgroupSize: [{ spec: "WG" }, 1, 1] as const, specs: { WG: 64 } };

/** Gumbel-argmax sampling with per-row temperature. Grid [B]. Buffers logits, temperature[B], rng[4B] (u32), out[B] (i32). Uniform V. */
export const sample_gumbel = kernel("sample_gumbel", opts, samplerBody(false));
/** Top-k / top-p sampling: as sample_gumbel plus buffers topK[B] (u32, 0 = off) and topP[B] (f32, ≥ 1 = off). */
export const sample_top_k_top_p = kernel("sample_top_k_top_p", opts, samplerBody(true));
