// `fast` Q4_K and Q6_K GEMMs over a per-workgroup slab of 16 interleaved weight rows (decision 2430), as 2390 does for
// Q8_0: per block of 256 the workgroup unpacks the 16 rows' 4- or 6-bit q once into bytes, in the q8_k activations'
// lane order (decision 2403) and interleaved per 4 bytes (a 16 × 16 dword transpose in registers), with the sub-block
// scales (and Q4_K's mins) as per-lane vectors; then every x row's dword is broadcast into one `vpdpbusd` of all 16
// weight rows (q unsigned, x signed), and one block epilogue serves 16 outputs.

import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";
import { f16At, spread, zeroF, zeroI, type FastCol, type FastParts } from "./gemv-int8.js";
import { gather32, L, q4Chunks, q4Shifts, q6Chunks, q6Shifts, scalesMins } from "./gemv-int8-k.js";

/** Bytes of the 64 interleaved q vectors of a block (dword j of 16 weight rows each, j in the q8_k order). */
const Q_BYTES = 64 * 64;
/** Q4_K slab block: d (f32 × 16), −dmin (f32 × 16), 8 scale vectors, 8 min vectors (i32 × 16), then the q. */
const Q4K_HEAD = 2 * 64 + 16 * 64;
/** Q6_K slab block: d (f32 × 16), 16 scale vectors (i32 × 16), then the q. */
const Q6K_HEAD = 64 + 16 * 64;
/** Slab bytes per block of 256 of Q4_K (5248) and Q6_K (5184). */
export const KSLAB_BLOCK = {
  q4_k: Q4K_HEAD + Q_BYTES,
  q6_k: Q6K_HEAD + Q_BYTES,
} as const;

/**
 * The transpose of 16 vectors of 16 dwords (`vs[r]` lane l → result l's lane r): four butterfly stages, stage i
 * swapping bit i of the vector index with bit i of the lane index by one two-source permutation per vector.
 */
export function transpose16(b: Builder, vs: readonly Val<"vec16<u32>">[]): Val<"vec16<u32>">[] {
  let cur = [...vs];
  for (let i = 0; i < 4; i++) {
    const bit = 1 << i;
    cur = cur.map((_, r) => {
      const r0 = r & ~bit;
      const [lo, hi] = [cur[r0]!, cur[r0 | bit]!];
      const low = (r & bit) === 0;
      const idx = (l: number): number => ((l & bit) === 0 ? (low ? l : l | bit) : low ? 16 + (l ^ bit) : 16 + l);
      return b.let_(gather32(b, lo, hi, idx), "tr");
    });
  }
  return cur;
}

/** Stores the 16 lanes of `v` as words `at` … `at + 15` of `t`. */
function storeVec(t: Arr<"u32">, at: Val<"u32">, v: Val<"vec16<u32>">): void {
  for (let r = 0; r < 16; r++) t.set(at.add(r), v.lane(r));
}

/**
 * Writes the 16 rows' q chunks (`chunk(col, c)`: chunk c of a row, lane l = dword 16c + l in the q8_k order) into the
 * slab block at word `o`, transposed: word 16j + r of the q area is row r's dword j. Chunk by chunk, so that only 16
 * vectors (and the transpose's) are live.
 */
function storeQ(b: Builder, t: Arr<"u32">, o: Val<"u32">, chunk: (col: number, c: number) => Val<"vec16<u32>">): void {
  for (let c = 0; c < 4; c++) {
    const rows = Array.from({ length: 16 }, (_, col) => chunk(col, c));
    transpose16(b, rows).forEach((v, l) => storeVec(t, o.add(16 * (16 * c + l)), v));
  }
}

/**
 * Unpacks the 16 Q4_K weight rows `cols` (144-byte blocks) into the slab at word `at` of `t`, per block: lane c of
 * each vector is col c; d, −dmin (f32), the 8 sub-block scales and 8 mins (i32, a transpose of the rows'
 * `scalesMins`), then 64 vectors of q bytes, vector j holding each row's nibbles of x's dword j.
 */
export function q4kSlabRepack(
  b: Builder,
  cols: readonly FastCol[],
  t: Arr<"u32">,
  at: Val<"u32">,
  K: Val<"u32">,
): void {
  const { let_, for_, u32 } = b;
  const nb = let_(K.div(256), "nb");
  const shifts = q4Shifts(b);
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const o = let_(at.add(blk.mul(KSLAB_BLOCK.q4_k / 4)), "so");
      const bases = cols.map(({ n }) => let_(n.mul(nb).add(blk).mul(144), "base"));
      const sms = cols.map(({ W }, c) => {
        const dd = let_(b.unpack("f16x2", W.at16x8(bases[c]!).lane(0)), "dd");
        t.set(o.add(c), dd.lane(0).bitcast("u32"));
        t.set(o.add(16 + c), dd.lane(1).neg().bitcast("u32"));
        return scalesMins(b, W, bases[c]!.add(4));
      });
      transpose16(b, sms).forEach((v, l) => storeVec(t, o.add(32 + 16 * l), v));
      storeQ(b, t, o.add(Q4K_HEAD / 4), (c, k) => q4Chunks(b, cols[c]!.W, bases[c]!, shifts, [k])[0]!);
    },
    "blk",
  );
}

/**
 * Unpacks the 16 Q6_K weight rows `cols` (210-byte blocks) into the slab at word `at` of `t`, per block: d (f32),
 * the 16 sub-block scales (i32, a transpose of the rows' sign-extended scales), then 64 vectors of 6-bit q bytes.
 */
export function q6kSlabRepack(
  b: Builder,
  cols: readonly FastCol[],
  t: Arr<"u32">,
  at: Val<"u32">,
  K: Val<"u32">,
): void {
  const { let_, for_, u32 } = b;
  const nb = let_(K.div(256), "nb");
  const sh = q6Shifts(b);
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const o = let_(at.add(blk.mul(KSLAB_BLOCK.q6_k / 4)), "so");
      const bases = cols.map(({ n }) => let_(n.mul(nb).add(blk).mul(210), "base"));
      const scs = cols.map(({ W }, c) => {
        t.set(o.add(c), f16At(b, W, bases[c]!.add(208), 14).bitcast("u32"));
        return let_(W.atVec(bases[c]!.add(192), "vec16<i32>").bitcast("vec16<u32>"), "sc");
      });
      transpose16(b, scs).forEach((v, l) => storeVec(t, o.add(16 + 16 * l), v));
      storeQ(b, t, o.add(Q6K_HEAD / 4), (c, k) => q6Chunks(b, cols[c]!.W, bases[c]!, sh, [k])[0]!);
    },
    "blk",
  );
}

/** Per x row of a slab pass: its block index (for d and the sums) and the byte of its block's q. */
function xBlock(b: Builder, m: Val<"u32">, nb: Val<"u32">, blk: Val<"u32">): { bi: Val<"u32">; x0: Val<"u32"> } {
  const bi = b.let_(m.mul(nb).add(blk), "bi");
  return { bi, x0: b.let_(bi.mul(256), "xo") };
}
type XBlock = ReturnType<typeof xBlock>;

/**
 * The integer sums of the x rows against the slab's vectors at bytes `qAt + 64 j` for j in `js` (x's dword j of 16
 * weight rows each, loaded once for all the rows): per x row, its dword j broadcast into one `vpdpbusd` per vector,
 * chained from `init(row)`. `jAt` is the byte of dword 0 of the group in x's block (and 64 times it in the slab).
 */
function slabDots(
  b: Builder,
  p: FastParts,
  tb: Arr<"u8">,
  qAt: Val<"u32">,
  jAt: Val<"u32">,
  xs: readonly XBlock[],
  js: readonly number[],
  init: (r: number) => Val<"vec16<i32>">,
): Val<"vec16<i32>">[] {
  const wAt = b.let_(qAt.add(jAt.mul(16)), "swa");
  const ws = js.map((j) => b.let_(tb.at64x8(wAt.add(64 * j)), "sw"));
  return xs.map(({ x0 }, r) => {
    const xAt = b.let_(x0.add(jAt), "sxa");
    return b.let_(
      ws.reduce((acc, w, i) => {
        const xd = b.let_(p.q.at16x8(xAt.add(4 * js[i]!)).lane(0), "sxd");
        return b.dot4U8I8(acc, w, spread(b, "vec16<u32>", 16, xd));
      }, init(r)),
      "is",
    );
  });
}

/** Stores each x row's vec16 of f32 sums into its 16 accumulators (lane c: weight row c). */
function finish(b: Builder, p: FastParts, sums: readonly Var<"vec16<f32>">[]): void {
  p.accs.forEach((r, j) => {
    const v = b.let_(sums[j]!, "fv");
    r.forEach((acc, c) => acc.set(v.lane(c)));
  });
}

/**
 * A k-quant format's part of {@link slabBlocks}: slab bytes per block, bytes of its head (d, scales, mins) before the
 * q, the byte of sub-block 0's per-lane scale vector (64 bytes each), sub-blocks per block and their loop's name;
 * `dots` gives sub-block `s`'s integer sums per x row (before its scale), `end` adds each x row's block (integer total
 * `tot[r]`, the slab block at byte `o`) into its f32 sums.
 */
interface SlabFormat {
  readonly bytes: number;
  readonly head: number;
  readonly scales: number;
  readonly subBlocks: number;
  readonly loop: string;
  dots(s: Val<"u32">, qAt: Val<"u32">, xs: readonly XBlock[]): Val<"vec16<i32>">[];
  end(
    o: Val<"u32">,
    xs: readonly XBlock[],
    tot: readonly Var<"vec16<i32>">[],
    sums: readonly Var<"vec16<f32>">[],
  ): void;
}

/**
 * The walk both k-quant slab loops share: per block of 256, the slab block at `at + blk · bytes` of `tb` and each x
 * row's block; per sub-block, the format's dots times the sub-block's per-lane scale (`vpmulld`) into each x row's
 * integer total; then the format's epilogue into the f32 sums, stored into the accumulators at the end.
 */
function slabBlocks(b: Builder, p: FastParts, tb: Arr<"u8">, at: Val<"u32">, f: SlabFormat): void {
  const { let_, var_, for_, u32 } = b;
  const nb = let_(p.K.div(256), "nb");
  const sums = p.rows.map(() => var_(zeroF(b, 16), "fs"));
  for_(
    u32(0),
    nb,
    1,
    (blk) => {
      const o = let_(at.add(blk.mul(f.bytes)), "so");
      const qAt = let_(o.add(f.head), "sq");
      const xs = p.rows.map((m) => xBlock(b, m, nb, blk));
      const tot = xs.map(() => var_(zeroI(b, 16), "tot"));
      for_(
        u32(0),
        u32(f.subBlocks),
        1,
        (s) => {
          const is = f.dots(s, qAt, xs);
          const sc = let_(tb.at64x8(o.add(f.scales).add(s.mul(64))).bitcast("vec16<i32>"), "ssc");
          is.forEach((v, r) => tot[r]!.set(tot[r]!.add(v.mul(sc))));
        },
        f.loop,
      );
      f.end(o, xs, tot, sums);
    },
    "blk",
  );
  finish(b, p, sums);
}

/** Q4_K sub-block s's x dwords, from dword 2s: 16k + i (k < 4, i < 2). */
const Q4K_DWORDS = [0, 1, 2, 3].flatMap((k) => [16 * k, 16 * k + 1]);
/** Q6_K sub-block g's x dwords, from dword g: 16k (k < 4). */
const Q6K_DWORDS = [0, 16, 32, 48];

/**
 * The rows `p.rows` of x (q8_k, lane order) against the Q4_K slab at byte `at` of `tb`: per block and sub-block s,
 * its 8 weight vectors (x dwords 16k + 2s + i) loaded once, 8 `vpdpbusd` per x row chained into the sub-block's sum,
 * times the per-lane scale (`vpmulld`) into the block's integer sum; the mins as Σₛ mₛ · (bsum₂ₛ + bsum₂ₛ₊₁) per lane
 * in integers; then `(isum · d + mins · (−dmin)) · dx` in f32 for all 16 weight rows (llama.cpp's arithmetic).
 */
export function fastQ4_KSlabLoop(b: Builder, p: FastParts, tb: Arr<"u8">, at: Val<"u32">): void {
  const { let_ } = b;
  slabBlocks(b, p, tb, at, {
    bytes: KSLAB_BLOCK.q4_k,
    head: Q4K_HEAD,
    scales: 128,
    // A loop over the sub-blocks (its body is 8 rows × 8 `vpdpbusd`).
    subBlocks: 8,
    loop: "sb",
    dots: (s, qAt, xs) => slabDots(b, p, tb, qAt, s.mul(8), xs, Q4K_DWORDS, () => zeroI(b, 16)),
    end: (o, xs, tot, sums) => {
      const d = let_(tb.at64x8(o).bitcast("vec16<f32>"), "sd");
      const negMin = let_(tb.at64x8(o.add(64)).bitcast("vec16<f32>"), "smn");
      xs.forEach(({ bi }, r) => {
        const bs = let_(p.s.atVec(bi.mul(16), "vec16<i32>"), "bs");
        const pair = let_(bs.add(b.vec("vec16<i32>", ...L.map((l) => bs.lane(l ^ 1)))), "bsp");
        let mins: Val<"vec16<i32>"> = zeroI(b, 16);
        for (let s = 0; s < 8; s++) {
          const mn = tb.at64x8(o.add(128 + 512 + 64 * s)).bitcast("vec16<i32>");
          mins =
            s === 0
              ? mn.mul(spread(b, "vec16<i32>", 16, pair.lane(0)))
              : mins.add(mn.mul(spread(b, "vec16<i32>", 16, pair.lane(2 * s))));
        }
        const dx = spread(b, "vec16<f32>", 16, p.d.at(bi));
        const t = b.fma(mins.cast("vec16<f32>"), negMin, let_(tot[r]!, "isum").cast("vec16<f32>").mul(d));
        sums[r]!.set(b.fma(t, dx, sums[r]!));
      });
    },
  });
}

/**
 * The rows `p.rows` of x (q8_k, lane order) against the Q6_K slab at byte `at` of `tb`: per block and 16-element
 * sub-block g, its 4 weight vectors (x dwords 16k + g) loaded once, per x row 4 `vpdpbusd` chained from −32 · bsum_g
 * (llama.cpp's offset for q − 32, decision 2335), times the per-lane scale into the block's integer sum; then
 * `isum · (d · dx)` in f32 for all 16 weight rows.
 */
export function fastQ6_KSlabLoop(b: Builder, p: FastParts, tb: Arr<"u8">, at: Val<"u32">): void {
  slabBlocks(b, p, tb, at, {
    bytes: KSLAB_BLOCK.q6_k,
    head: Q6K_HEAD,
    scales: 64,
    // A loop over the sub-blocks (its body is 8 rows × 4 `vpdpbusd`).
    subBlocks: 16,
    loop: "sg",
    dots: (g, qAt, xs) => {
      const init = (r: number): Val<"vec16<i32>"> =>
        spread(b, "vec16<i32>", 16, p.s.at(xs[r]!.bi.mul(16).add(g)).mul(-32));
      return slabDots(b, p, tb, qAt, g.mul(4), xs, Q6K_DWORDS, init);
    },
    end: (o, xs, tot, sums) => {
      const d = b.let_(tb.at64x8(o).bitcast("vec16<f32>"), "sd");
      xs.forEach(({ bi }, r) => {
        const dx = spread(b, "vec16<f32>", 16, p.d.at(bi));
        sums[r]!.set(b.fma(b.let_(tot[r]!, "isum").cast("vec16<f32>"), d.mul(dx), sums[r]!));
      });
    },
  });
}
