// The k-quant integer loops of the `fast` native GEMVs (decisions 2320, 2330, 2335): Q4_K and Q6_K weights against
// q8_k activations (256 per f32 scale, sums per 16), 64 elements per 512-bit `vpdpbusd`, the sub-block scales applied
// in integers per super-block and the block's sum times `d · dx` in f32, as llama.cpp's `ggml_vec_dot_q{4,6}_K_q8_K`.

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import { ACT_SUM, concat16, f16At, hsum, spread, zeroF, zeroI, type FastParts } from "./gemv-int8.js";

/**
 * The eight 6-bit scales (lanes 0–7) and mins (lanes 8–15) of a Q4_K/Q5_K block's 12 scale bytes at `sc`
 * (`get_scale_min_k4`), unpacked in vector registers (decision 2340): the 16 bytes at `sc` zero-extended into 16
 * lanes (the last four are the block's first nibbles, unused), two lane permutations, then per lane
 * `(P >> s) & m | (Q >> 2) & 0x30`: for j < 4 `sc = b[j] & 63`, `mn = b[j + 4] & 63`; for j ≥ 4
 * `sc = b[j + 4] & 15 | (b[j − 4] >> 6) << 4`, `mn = b[j + 4] >> 4 | (b[j] >> 6) << 4`.
 */
function scalesMins(b: Builder, W: Arr<"u8">, sc: Val<"u32">): Val<"vec16<u32>"> {
  const v = b.let_(W.atVec(sc, "vec16<u32>"), "scv");
  const L = Array.from({ length: 16 }, (_, l) => l);
  const perm = (idx: readonly number[]): Val<"vec16<u32>"> => b.vec("vec16<u32>", ...idx.map((i) => v.lane(i)));
  const consts = (xs: readonly number[]): Val<"vec16<u32>"> => b.vec("vec16<u32>", ...xs.map((x) => b.u32(x)));
  // Lanes 4–7 (scales of j ≥ 4) and 12–15 (mins of j ≥ 4) take 4 bits of P and 2 high bits of Q.
  const split = (l: number): boolean => (l >= 4 && l < 8) || l >= 12;
  const P = perm(L.map((l) => (l < 4 ? l : l < 8 ? l + 4 : l - 4)));
  const Q = perm(L.map((l) => (l < 4 || (l >= 8 && l < 12) ? 0 : l < 8 ? l - 4 : l - 8)));
  const lo = P.shr(consts(L.map((l) => (l >= 12 ? 4 : 0)))).and(consts(L.map((l) => (split(l) ? 15 : 63))));
  return b.let_(lo.or(Q.shr(2).and(consts(L.map((l) => (split(l) ? 0x30 : 0))))), "scm");
}

/** Lanes `idx` of `v` as a vec16<i32> (a permutation: `vpermd`). */
function lanesI32(b: Builder, v: Val<"vec16<u32>">, idx: readonly number[]): Val<"vec16<i32>"> {
  return b.let_(b.vec("vec16<i32>", ...idx.map((i) => v.lane(i).cast("i32"))), "perm");
}

/** The 16 activation sums (`bsums`, one per 16 elements) of block `blk` of x row `m`, as a vec16<i32>. */
function bsums(b: Builder, p: FastParts, m: Val<"u32">, nb: Val<"u32">, blk: Val<"u32">): Val<"vec16<i32>"> {
  return b.let_(
    p.s.atVec(
      m
        .mul(nb)
        .add(blk)
        .mul(256 / ACT_SUM),
      "vec16<i32>",
    ),
    "bs",
  );
}

/**
 * Q4_K weights (144-byte blocks of 256: f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes) against q8_k activations:
 * per 32-element sub-block, nibbles · x in `dot4U8I8` times its 6-bit scale (integers, as llama.cpp; 16 lanes, two
 * sub-blocks per 512-bit `vpdpbusd`, decision 2330); per block and tile entry `(isum · d + bsums · (−dmin · m)) · dx`
 * in f32, the mins (each in two lanes) times −dmin and d built once per weight row, the quantizer's 16 sums
 * converted once per x row (decision 2350: two fmas and a multiply, where 2335 took ten ops).
 */
export function fastQ4_KLoop(b: Builder, p: FastParts): void {
  const { let_, var_, for_, u32 } = b;
  const nb = let_(p.K.div(256), "nb");
  const sums = p.accs.map((r) => r.map(() => var_(zeroF(b, 16), "fs")));
  // Lanes 0–7 take the low nibbles of 32 bytes, lanes 8–15 the high ones: 64 elements against 64 contiguous x.
  const shifts = spread(b, "vec16<u32>", 8, u32(0), u32(4));
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const ws = p.cols.map(({ W, n }) => {
        const base = let_(n.mul(nb).add(blk).mul(144), "base");
        const sm = scalesMins(b, W, base.add(4));
        // d and dmin: the block's first dword, one load and one `vcvtph2ps` (not four byte loads).
        const dd = let_(b.unpack("f16x2", W.at16x8(base).lane(0)), "dd");
        // Sub-block g's min in lanes 2g, 2g + 1 (against the sums of its two halves of 16), times −dmin in f32.
        const mins = lanesI32(
          b,
          sm,
          Array.from({ length: 16 }, (_, l) => 8 + (l >> 1)),
        );
        const negMin = let_(mins.cast("vec16<f32>").mul(spread(b, "vec16<f32>", 16, dd.lane(1).neg())), "dm");
        return { W, base, d: let_(spread(b, "vec16<f32>", 16, dd.lane(0)), "d"), negMin, sm };
      });
      const isums = p.rows.map(() => ws.map(() => var_(zeroI(b, 16), "is")));
      for (let c = 0; c < 4; c++) {
        const nib = ws.map(({ W, base }) => {
          const v = let_(W.at32x8(base.add(16 + 32 * c)), "v");
          return let_(concat16(b, v, v).shr(shifts).and(0x0f0f0f0f), "nb16");
        });
        // Sub-block 2c's scale in lanes 0–7, 2c + 1's in 8–15.
        const scales = ws.map((w) =>
          lanesI32(
            b,
            w.sm,
            Array.from({ length: 16 }, (_, l) => 2 * c + (l >> 3)),
          ),
        );
        p.rows.forEach((m, j) => {
          const xo = let_(
            m
              .mul(p.K)
              .add(blk.mul(256))
              .add(64 * c),
            "xo",
          );
          const xq = let_(p.q.at64x8(xo), "xq");
          ws.forEach((_, h) => {
            const is = isums[j]![h]!;
            is.set(is.add(b.dot4U8I8(zeroI(b, 16), nib[h]!, xq).mul(scales[h]!)));
          });
        });
      }
      // Per x row and weight row: (isum · d − dmin · Σ m · bsum) · dx, the sums as f32 (each bsum converted once).
      p.rows.forEach((m, j) => {
        const dx = let_(spread(b, "vec16<f32>", 16, p.d.at(m.mul(nb).add(blk))), "dx");
        const bs = let_(bsums(b, p, m, nb, blk).cast("vec16<f32>"), "bsf");
        ws.forEach((w, h) => {
          const acc = sums[j]![h]!;
          const t = b.fma(bs, w.negMin, isums[j]![h]!.cast("vec16<f32>").mul(w.d));
          acc.set(b.fma(t, dx, acc));
        });
      });
    },
    "blk",
  );
  p.accs.forEach((r, j) => r.forEach((acc, h) => acc.set(hsum(b, sums[j]![h]!))));
}

/**
 * Q6_K weights (210-byte blocks of 256: 128 bytes `ql` of low nibbles, 64 bytes `qh` of 2-bit high parts, 16 i8
 * scales, f16 d; weight = d · scale · (q − 32)) against q8_k activations (decision 2335): per 64 elements the 6-bit q
 * rebuilt in one zmm (`ql` low or high nibbles, or the `qh` pair shifted into bits 4–5), one 512-bit `vpdpbusd` per
 * x row, times the scales of its four 16-element sub-blocks (each in four lanes) in integers; the −32 offset as
 * `−32 · Σ scale · bsum` from the quantizer's sums per 16 (llama.cpp's trick), one vec16 multiply that starts the
 * block's integer sum; then the block's sum times `d · dx` in f32 (llama.cpp's order).
 */
export function fastQ6_KLoop(b: Builder, p: FastParts): void {
  const { let_, var_, for_, u32 } = b;
  const nb = let_(p.K.div(256), "nb");
  const sums = p.accs.map((r) => r.map(() => var_(zeroF(b, 16), "fs")));
  // qh's 2-bit field of elements 64c + (0–31 | 32–63), lanes 0–7 | 8–15: bits (0 | 2) for even c, (4 | 6) for odd c.
  const qhShift = [spread(b, "vec16<u32>", 8, u32(0), u32(2)), spread(b, "vec16<u32>", 8, u32(4), u32(6))];
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const ws = p.cols.map(({ W, n }) => {
        const base = let_(n.mul(nb).add(blk).mul(210), "base");
        const d = let_(spread(b, "vec16<f32>", 16, f16At(b, W, base.add(208), 14)), "d");
        const sc = let_(W.atVec(base.add(192), "vec16<i32>"), "sc");
        return { W, base, d, sc, sc32: let_(sc.mul(-32), "sc32") };
      });
      const isums = p.rows.map((m) => {
        const bs = bsums(b, p, m, nb, blk);
        return ws.map((w) => var_(w.sc32.mul(bs), "is"));
      });
      for (let half = 0; half < 2; half++) {
        const raw = ws.map(({ W, base }) => {
          const qh = let_(W.at32x8(base.add(128 + 32 * half)), "qh");
          return { ql: let_(W.at64x8(base.add(64 * half)), "ql"), qh: concat16(b, qh, qh) };
        });
        for (let hi = 0; hi < 2; hi++) {
          const c = 2 * half + hi;
          const q6 = raw.map(({ ql, qh }) => {
            const lo = (hi === 0 ? ql : ql.shr(4)).and(0x0f0f0f0f);
            return let_(lo.or(qh.shr(qhShift[hi]!).and(0x03030303).shl(4)), "q6");
          });
          const scales = ws.map((w) =>
            let_(spread(b, "vec16<i32>", 4, ...[0, 1, 2, 3].map((i) => w.sc.lane(4 * c + i))), "sc4"),
          );
          p.rows.forEach((m, j) => {
            const xo = let_(
              m
                .mul(p.K)
                .add(blk.mul(256))
                .add(64 * c),
              "xo",
            );
            const xq = let_(p.q.at64x8(xo), "xq");
            ws.forEach((_, h) => {
              const is = isums[j]![h]!;
              is.set(is.add(b.dot4U8I8(zeroI(b, 16), q6[h]!, xq).mul(scales[h]!)));
            });
          });
        }
      }
      p.rows.forEach((m, j) => {
        const dx = let_(spread(b, "vec16<f32>", 16, p.d.at(m.mul(nb).add(blk))), "dx");
        ws.forEach((w, h) => {
          const acc = sums[j]![h]!;
          acc.set(b.fma(isums[j]![h]!.cast("vec16<f32>"), w.d.mul(dx), acc));
        });
      });
    },
    "blk",
  );
  p.accs.forEach((r, j) => r.forEach((acc, h) => acc.set(hsum(b, sums[j]![h]!))));
}
