// The k-quant integer loops of the `fast` native GEMVs (decisions 2320, 2330, 2335): Q4_K and Q6_K weights against
// q8_k activations (256 per f32 scale, sums per 16), 64 elements per 512-bit `vpdpbusd`, the sub-block scales applied
// in integers per super-block and the block's sum times `d · dx` in f32, as llama.cpp's `ggml_vec_dot_q{4,6}_K_q8_K`.
// The activations come in the quantizer's q8_k order and the weights are permuted into it per block (decision 2403),
// so each vector lane keeps one 16-element group: one integer sum and one scale multiply per block and tile entry.

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import { ACT_SUM, f16At, hsum, spread, zeroF, zeroI, type FastParts } from "./gemv-int8.js";

/** Lanes 0–15. */
export const L = Array.from({ length: 16 }, (_, l) => l);

/**
 * The eight 6-bit scales (lanes 0–7) and mins (lanes 8–15) of a Q4_K/Q5_K block's 12 scale bytes at `sc`
 * (`get_scale_min_k4`), unpacked in vector registers (decision 2340): the 16 bytes at `sc` zero-extended into 16
 * lanes (the last four are the block's first nibbles, unused), two lane permutations, then per lane
 * `(P >> s) & m | (Q >> 2) & 0x30`: for j < 4 `sc = b[j] & 63`, `mn = b[j + 4] & 63`; for j ≥ 4
 * `sc = b[j + 4] & 15 | (b[j − 4] >> 6) << 4`, `mn = b[j + 4] >> 4 | (b[j] >> 6) << 4`.
 */
export function scalesMins(b: Builder, W: Arr<"u8">, sc: Val<"u32">): Val<"vec16<u32>"> {
  const v = b.let_(W.atVec(sc, "vec16<u32>"), "scv");
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

/** A vec16<u32> of the constants `f(l)` per lane l. */
export function laneConsts(b: Builder, f: (l: number) => number): Val<"vec16<u32>"> {
  return b.vec("vec16<u32>", ...L.map((l) => b.u32(f(l))));
}

/** Dword `idx(l)` of the 32 in `lo` (0–15) and `hi` (16–31) per lane l (a two-source permutation: `vpermt2d`). */
export function gather32(
  b: Builder,
  lo: Val<"vec16<u32>">,
  hi: Val<"vec16<u32>">,
  idx: (l: number) => number,
): Val<"vec16<u32>"> {
  return b.vec(
    "vec16<u32>",
    ...L.map((l) => {
      const i = idx(l);
      return i < 16 ? lo.lane(i) : hi.lane(i - 16);
    }),
  );
}

/** The per-lane nibble shifts of {@link q4Chunks}: lane l's elements are high nibbles iff (l >> 1) is odd. */
export function q4Shifts(b: Builder): Val<"vec16<u32>"> {
  return b.let_(
    laneConsts(b, (l) => 4 * ((l >> 1) & 1)),
    "nsh",
  );
}

/**
 * The 4-bit q of the Q4_K block at byte `base` of W in the quantizer's q8_k order (decision 2403): chunk c's lane l
 * holds the nibbles of elements 16l + 4c … + 3 as bytes, from byte 32 (l >> 2) + 16 (l & 1) + 4c of the 128 (a
 * `vpermt2d` of the two 64-byte loads, a shift by `shifts` and a mask); `chunks` picks which.
 */
export function q4Chunks(
  b: Builder,
  W: Arr<"u8">,
  base: Val<"u32">,
  shifts: Val<"vec16<u32>">,
  chunks: readonly number[] = [0, 1, 2, 3],
): Val<"vec16<u32>">[] {
  const lo = b.let_(W.at64x8(base.add(16)), "qa");
  const hi = b.let_(W.at64x8(base.add(80)), "qb");
  return chunks.map((c) =>
    b.let_(
      gather32(b, lo, hi, (l) => 8 * (l >> 2) + 4 * (l & 1) + c)
        .shr(shifts)
        .and(0x0f0f0f0f),
      "nb16",
    ),
  );
}

/** The per-lane shifts of {@link q6Chunks}: `ql`'s (0 or 4) and `qh`'s (0, 2, 4 or 6). */
export function q6Shifts(b: Builder): { readonly ql: Val<"vec16<u32>">; readonly qh: Val<"vec16<u32>"> } {
  return {
    ql: b.let_(
      laneConsts(b, (l) => 4 * ((l >> 2) & 1)),
      "lsh",
    ),
    qh: b.let_(
      laneConsts(b, (l) => 2 * ((l >> 1) & 3)),
      "hsh",
    ),
  };
}

/**
 * The 6-bit q of the Q6_K block at byte `base` of W in the quantizer's q8_k order (decision 2403): chunk c's lane l
 * holds elements 16l + 4c … + 3 (half l >> 3): `ql` byte 64 (l >> 3) + 16 (l & 3) + 4c, its high nibble iff (l >> 2)
 * is odd, or-ed with `qh` byte 32 (l >> 3) + 16 (l & 1) + 4c's bits 2 ((l >> 1) & 3) and up, moved to bits 4–5;
 * `chunks` picks which.
 */
export function q6Chunks(
  b: Builder,
  W: Arr<"u8">,
  base: Val<"u32">,
  sh: ReturnType<typeof q6Shifts>,
  chunks: readonly number[] = [0, 1, 2, 3],
): Val<"vec16<u32>">[] {
  const ql0 = b.let_(W.at64x8(base), "ql0");
  const ql1 = b.let_(W.at64x8(base.add(64)), "ql1");
  const qh = b.let_(W.at64x8(base.add(128)), "qh");
  return chunks.map((c) => {
    const lo = gather32(b, ql0, ql1, (l) => 16 * (l >> 3) + 4 * (l & 3) + c)
      .shr(sh.ql)
      .and(0x0f0f0f0f);
    const hb = gather32(b, qh, qh, (l) => 8 * (l >> 3) + 4 * (l & 1) + c);
    return b.let_(lo.or(hb.shr(sh.qh).and(0x03030303).shl(4)), "q6");
  });
}

/**
 * The integer dot products of one x row's block with the weight rows' 6-bit (or 4-bit) chunks `q[h][c]`, both in the
 * quantizer's q8_k order (decision 2403: lane l of chunk c is elements 16l + 4c … + 3, so every lane keeps one
 * 16-element group through the block): four `vpdpbusd` chained into one sum per weight row, started at `init[h]`.
 */
function blockDots(
  b: Builder,
  p: FastParts,
  m: Val<"u32">,
  blk: Val<"u32">,
  q: readonly (readonly Val<"vec16<u32>">[])[],
  init: (h: number) => Val<"vec16<i32>">,
): Val<"vec16<i32>">[] {
  const x0 = b.let_(m.mul(p.K).add(blk.mul(256)), "xo");
  const xq = [0, 1, 2, 3].map((c) => b.let_(p.q.at64x8(x0.add(64 * c)), "xq"));
  return q.map((qh, h) => {
    let acc = init(h);
    for (let c = 0; c < 4; c++) acc = b.dot4U8I8(acc, qh[c]!, xq[c]!);
    return b.let_(acc, "is");
  });
}

/**
 * Q4_K weights (144-byte blocks of 256: f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes) against q8_k activations
 * in the quantizer's order (decision 2403): per weight row and block the nibbles are permuted into that order (chunk
 * c's lane l: the nibbles of elements 16l + 4c … + 3, a `vpermt2d` of the 128 bytes, a shift and a mask), so lane l
 * keeps sub-block l >> 1 for the whole block and the four 512-bit `vpdpbusd` of an x row chain into one integer sum,
 * multiplied once by the per-lane 6-bit scales (integers, as llama.cpp); then per block and tile entry
 * `(isum · d + bsums · (−dmin · m)) · dx` in f32 (decision 2350), each lane's bsum the sum of its own 16 elements.
 */
export function fastQ4_KLoop(b: Builder, p: FastParts): void {
  const { let_, var_, for_, u32 } = b;
  const nb = let_(p.K.div(256), "nb");
  const sums = p.accs.map((r) => r.map(() => var_(zeroF(b, 16), "fs")));
  const shifts = q4Shifts(b);
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
        // Lane l's sub-block (l >> 1): its min times −dmin in f32, its scale as an integer.
        const mins = lanesI32(
          b,
          sm,
          L.map((l) => 8 + (l >> 1)),
        );
        const negMin = let_(mins.cast("vec16<f32>").mul(spread(b, "vec16<f32>", 16, dd.lane(1).neg())), "dm");
        const sc = lanesI32(
          b,
          sm,
          L.map((l) => l >> 1),
        );
        const nib = q4Chunks(b, W, base, shifts);
        return { d: let_(spread(b, "vec16<f32>", 16, dd.lane(0)), "d"), negMin, sc, nib };
      });
      p.rows.forEach((m, j) => {
        const isums = blockDots(
          b,
          p,
          m,
          blk,
          ws.map((w) => w.nib),
          () => zeroI(b, 16),
        );
        const dx = let_(spread(b, "vec16<f32>", 16, p.d.at(m.mul(nb).add(blk))), "dx");
        const bs = let_(bsums(b, p, m, nb, blk).cast("vec16<f32>"), "bsf");
        ws.forEach((w, h) => {
          const acc = sums[j]![h]!;
          const t = b.fma(bs, w.negMin, isums[h]!.mul(w.sc).cast("vec16<f32>").mul(w.d));
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
 * scales, f16 d; weight = d · scale · (q − 32)) against q8_k activations in the quantizer's order (decision 2403):
 * per weight row and block the 6-bit q rebuilt in that order (chunk c's lane l: elements 16l + 4c … + 3, the `ql`
 * and `qh` dwords permuted, shifted and masked), so lane l keeps the 16-element sub-block l: per x row the four
 * 512-bit `vpdpbusd` chain into one integer sum started at −32 · bsums (llama.cpp's offset trick, decision 2335) and
 * multiplied once by the 16 scales; then the block's sum times `d · dx` in f32 (llama.cpp's order).
 */
export function fastQ6_KLoop(b: Builder, p: FastParts): void {
  const { let_, var_, for_, u32 } = b;
  const nb = let_(p.K.div(256), "nb");
  const sums = p.accs.map((r) => r.map(() => var_(zeroF(b, 16), "fs")));
  const sh = q6Shifts(b);
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const ws = p.cols.map(({ W, n }) => {
        const base = let_(n.mul(nb).add(blk).mul(210), "base");
        const d = let_(spread(b, "vec16<f32>", 16, f16At(b, W, base.add(208), 14)), "d");
        const sc = let_(W.atVec(base.add(192), "vec16<i32>"), "sc");
        const q6 = q6Chunks(b, W, base, sh);
        return { d, sc, q6 };
      });
      p.rows.forEach((m, j) => {
        const off = let_(bsums(b, p, m, nb, blk).mul(-32), "bs32");
        const isums = blockDots(
          b,
          p,
          m,
          blk,
          ws.map((w) => w.q6),
          () => off,
        );
        const dx = let_(spread(b, "vec16<f32>", 16, p.d.at(m.mul(nb).add(blk))), "dx");
        ws.forEach((w, h) => {
          const acc = sums[j]![h]!;
          acc.set(b.fma(isums[h]!.mul(w.sc).cast("vec16<f32>"), w.d.mul(dx), acc));
        });
      });
    },
    "blk",
  );
  p.accs.forEach((r, j) => r.forEach((acc, h) => acc.set(hsum(b, sums[j]![h]!))));
}
