// The tensor-core GEMM synthesizer: C[b] = epilogue(A[b] · W[b]) with subgroups issuing `mma` over K-slices staged in
// shared memory as packed 16-bit pairs. Chosen for contractions with bf16/f16 weights when the caps report a matrix
// unit of that input type: PTX mma.sync m16n8k16 (32 lanes), AMD MFMA 16x16x16 (64 lanes) or AMD WMMA (32 lanes,
// the IR's m16n8k16_wmma); each shape's fragments are read from the staged tiles at its own lane coordinates.

import { kernel, MMA_LAYOUTS } from "@poot/kernel-dsl";
import type { Arr, Builder, MmaInput, MmaShape, Val, Var } from "@poot/kernel-dsl";
import { checkCaps } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { prepareEpilogue } from "./epilogue.js";
import type { PreparedEpilogue } from "./epilogue.js";
import type { GemmRequest } from "./gemm.js";
import { checkDType, elemOf, storeAs } from "./storage.js";

const SYNTH = "gemm-mma";
/** K consumed per stage: one k16 step. */
const BK = 16;

/** The tiling a tensor-core GEMM was generated with. */
export interface MmaGemmTiling {
  /** Warps along M in a workgroup. */
  readonly warpsM: number;
  /** Warps along N in a workgroup. */
  readonly warpsN: number;
  /** m16 tiles (along M) per warp. */
  readonly tilesM: number;
  /** n8 (n16 for MFMA) tiles (along N) per warp. */
  readonly tilesN: number;
  /** Workgroup output rows: 16·tilesM·warpsM. */
  readonly BM: number;
  /** Workgroup output columns: tileN·tilesN·warpsN. */
  readonly BN: number;
  /** The `mma` shape issued (its lanes are the subgroup size the kernel needs). */
  readonly shape: MmaShape;
  /**
   * How A reaches the 16-bit multiplicand: `direct` when A already has the weight's type; `split3` when A is f32
   * and the weight bf16: a = hi + mid + lo exactly (three bf16 terms), one mma each, so no product is rounded.
   */
  readonly aMode: "direct" | "split3";
}

/**
 * The `mma` shape a device's caps offer for `input`, or undefined: PTX m16n8k16 (a {16, 8, 16} unit without a layout,
 * 32-lane subgroups), AMD MFMA ({16, 16, 16, layout "mfma"}, 64 lanes) or AMD WMMA ({16, 16, 16, layout "wmma"},
 * 32 lanes). A 16x16x16 unit without a layout (Vulkan cooperative matrices) is not one this GEMM issues.
 */
export function mmaShapeFor(caps: SynthCaps, input: MmaInput): MmaShape | undefined {
  const units = (caps.matrixShapes ?? []).filter((s) => s.input === input && s.k === 16 && s.m === 16);
  if (caps.subgroupSize === 32 && units.some((s) => s.n === 8 && s.layout === undefined)) return "m16n8k16";
  if (caps.subgroupSize === 64 && units.some((s) => s.n === 16 && s.layout === "mfma")) return "m16n16k16_mfma";
  if (caps.subgroupSize === 32 && units.some((s) => s.n === 16 && s.layout === "wmma")) return "m16n8k16_wmma";
  return undefined;
}

/** True when the caps list a matrix unit this GEMM issues for `input` ({@link mmaShapeFor}). */
export function hasMmaUnit(caps: SynthCaps, input: MmaInput): boolean {
  return mmaShapeFor(caps, input) !== undefined;
}

/**
 * The A handling a tensor-core GEMM would use for these dtypes, or undefined when none keeps the products exact
 * (mixed bf16/f16, or f32 A with an f16 weight: f16 cannot split an f32 exactly).
 */
export function mmaAMode(aDtype: string, wDtype: string): MmaGemmTiling["aMode"] | undefined {
  if ((wDtype === "bf16" || wDtype === "f16") && aDtype === wDtype) return "direct";
  if (wDtype === "bf16" && aDtype === "f32") return "split3";
  return undefined;
}

/** True when {@link synthesizeMmaGemm} applies to this request on a device with `caps`. */
export function mmaGemmApplies(req: Pick<GemmRequest, "aDtype" | "weight">, caps: SynthCaps): boolean {
  const w = req.weight.dtype;
  return (w === "bf16" || w === "f16") && hasMmaUnit(caps, w) && mmaAMode(req.aDtype ?? "f32", w) !== undefined;
}

/**
 * Picks subgroups ("warps") and per-warp tiles from M and N (small prefills get one warp row, narrow outputs fewer
 * tiles); `shape` defaults to PTX m16n8k16.
 */
export function chooseMmaTiling(
  M: number,
  N: number,
  aMode: MmaGemmTiling["aMode"],
  caps: SynthCaps,
  shape: MmaShape = "m16n8k16",
): MmaGemmTiling {
  const L = MMA_LAYOUTS[shape];
  const tn = L.n;
  const tilesM = M > 16 ? 2 : 1;
  const tilesN = N > 2 * tn ? 4 : N > tn ? 2 : 1;
  let warpsM = M > 16 * tilesM ? 2 : 1;
  let warpsN = N > tn * tilesN ? 2 : 1;
  while (warpsM * warpsN * L.lanes > caps.maxWorkgroup && warpsM * warpsN > 1) {
    if (warpsN > 1) warpsN = 1;
    else warpsM = 1;
  }
  if (L.lanes > caps.maxWorkgroup)
    throw new KernelgenError("exceeds_caps", `a tensor-core GEMM needs a ${L.lanes}-thread workgroup`, {
      synth: SYNTH,
      param: "caps.maxWorkgroup",
      value: caps.maxWorkgroup,
    });
  const BM = 16 * tilesM * warpsM,
    BN = tn * tilesN * warpsN;
  const bytes = ((aMode === "split3" ? 3 : 1) * BM + BN) * (BK / 2) * 4;
  if (bytes > caps.sharedBytes)
    throw new KernelgenError(
      "exceeds_caps",
      `a ${BM}×${BN} tensor-core tile needs ${bytes} bytes of workgroup memory`,
      { synth: SYNTH, param: "caps.sharedBytes", value: caps.sharedBytes },
    );
  return { warpsM, warpsN, tilesM, tilesN, BM, BN, aMode, shape };
}

/** A word of a staged tile: row (m of A, n of W) within the 16-row tile, and packed pair index along K (0..7). */
type Word = readonly [Val<"u32">, Val<"u32">];

/**
 * Where each shape's fragment words and accumulators sit in the staged tiles, as lane expressions (the layouts of
 * kernel-dsl's MMA_LAYOUTS: every A/B fragment word is a K-adjacent pair, so it is one staged word).
 */
function fragmentPlan(b: Builder, shape: MmaShape, lane: Val<"u32">) {
  const { let_ } = b;
  if (shape === "m16n8k16") {
    const g = let_(lane.shr(2), "g");
    const tg = let_(lane.and(3), "tg");
    return {
      a: [
        [g, tg],
        [g.add(8), tg],
        [g, tg.add(4)],
        [g.add(8), tg.add(4)],
      ] as Word[],
      b: [
        [g, tg],
        [g, tg.add(4)],
      ] as Word[],
      d: (q: number): Word => [g.add(q >= 2 ? 8 : 0), tg.mul(2).add(q & 1)],
    };
  }
  if (shape === "m16n16k16_mfma") {
    const r = let_(lane.and(15), "fr");
    const h2 = let_(lane.shr(4).mul(2), "fh");
    return {
      a: [
        [r, h2],
        [r, h2.add(1)],
      ] as Word[],
      b: [
        [r, h2],
        [r, h2.add(1)],
      ] as Word[],
      d: (q: number): Word => [h2.mul(2).add(q), r],
    };
  }
  const r = let_(lane.and(15), "fr");
  const h = let_(lane.shr(4), "fh");
  const n = let_(lane.and(7), "fn");
  const s2 = let_(lane.shr(3).mul(2), "fs");
  const rowBase = let_(lane.shr(3).and(1).mul(8).add(h), "fd");
  return {
    a: [0, 1, 2, 3].map((j): Word => [r, h.mul(4).add(j)]),
    b: [
      [n, s2],
      [n, s2.add(1)],
    ] as Word[],
    d: (q: number): Word => [rowBase.add(2 * q), n],
  };
}

/** Generates the tensor-core GEMM. Buffers: A, W, epilogue inputs, C. Grid [ceil(N/BN), ceil(M/BM), batch]; subgroups of the shape's lanes. */
export function synthesizeMmaGemm(req: GemmRequest, caps: SynthCaps): SynthKernel & { readonly tiling: MmaGemmTiling } {
  return synthesizeMmaGemmWith(req, caps, prepareEpilogue(SYNTH, req.epilogue, req.outDtype ?? "f32"));
}

/** @internal The same with an already prepared epilogue (graph-plan regions come in this way). */
export function synthesizeMmaGemmWith(
  req: GemmRequest,
  caps: SynthCaps,
  ep: PreparedEpilogue,
): SynthKernel & { readonly tiling: MmaGemmTiling } {
  checkCaps(SYNTH, caps);
  const { M, N, K } = req;
  const batch = req.batch ?? 1;
  if (![M, N, K, batch].every((d) => Number.isInteger(d) && d >= 1))
    throw new KernelgenError("bad_shape", `M ${M}, N ${N}, K ${K}, batch ${batch}`, { synth: SYNTH, param: "shape" });
  const aDtype = checkDType(SYNTH, "A", req.aDtype ?? "f32", ["f32", "bf16", "f16"]);
  const wDtype = checkDType(SYNTH, "W", req.weight.dtype, ["bf16", "f16"]) as MmaInput;
  const aMode = mmaAMode(aDtype, wDtype);
  if (aMode === undefined)
    throw new KernelgenError("bad_param", `A ${aDtype} with a ${wDtype} weight has no exact ${wDtype} multiplicand`, {
      synth: SYNTH,
      param: "aDtype",
      value: aDtype,
    });
  const shape = mmaShapeFor(caps, wDtype);
  if (shape === undefined)
    throw new KernelgenError(
      "bad_param",
      `the caps report no ${wDtype} matrix unit this GEMM issues (m16n8k16 with 32-lane subgroups, MFMA 16x16x16 with 64, WMMA 16x16x16 with 32)`,
      { synth: SYNTH, param: "caps.matrixShapes", value: caps.matrixShapes ?? [] },
    );
  const outDtype = req.outDtype ?? "f32";
  const t = chooseMmaTiling(M, N, aMode, caps, shape);
  const { warpsM, warpsN, tilesM, tilesN, BM, BN } = t;
  const L = MMA_LAYOUTS[shape];
  const tn = L.n;
  const threads = L.lanes * warpsM * warpsN;
  const nk = req.weight.layout === "nk";
  const parts = aMode === "split3" ? 3 : 1;
  const KP = BK / 2; // packed pairs per row of a stage
  const fmt = wDtype === "bf16" ? "bf16x2" : "f16x2";
  const k = kernel(req.name, { workgroupSize: [threads, 1, 1] }, (b: Builder) => {
    const {
      let_,
      var_,
      for_,
      if_,
      wid,
      f32,
      u32,
      vec,
      pack,
      unpack,
      mma,
      barrier,
      localIndex,
      subgroupId,
      subgroupLane,
    } = b;
    const A = b.buffer("A", elemOf(aDtype), "read") as Arr<"f32">;
    const W = b.buffer("W", elemOf(wDtype), "read") as Arr<"f32">;
    ep.declare(b);
    const C = b.buffer("C", elemOf(outDtype), "write");
    // As{p}[m·KP + kp] = A[m][2kp] | A[m][2kp+1] << 16 (part p of the split); Ws[n·KP + kp] likewise along K.
    const As = Array.from({ length: parts }, (_, p) => b.shared(`As${p}`, "u32", BM * KP));
    const Ws = b.shared("Ws", "u32", BN * KP);
    const li = let_(localIndex, "li");
    const warp = let_(subgroupId, "warp");
    const lane = let_(subgroupLane, "lane");
    const frag = fragmentPlan(b, shape, lane);
    const wm = let_(warp.div(warpsN), "wm");
    const wn = let_(warp.rem(warpsN), "wn");
    const row0 = let_(wid.y.mul(BM), "row0");
    const col0 = let_(wid.x.mul(BN), "col0");
    const bz = let_(wid.z, "bz");
    const aBase = let_(bz.mul(M * K), "a_base");
    const wBase = let_(req.batchedWeight === true ? bz.mul(K * N) : u32(0), "w_base");
    const zero4 = vec("vec4<f32>", f32(0), f32(0), f32(0), f32(0));
    const acc: Var<"vec4<f32>">[] = Array.from({ length: tilesM * tilesN }, (_, i) => var_(zero4, `acc${i}`));
    const round = (x: Val<"f32">): Val<"f32"> =>
      unpack(wDtype === "bf16" ? "bf16" : "f16", pack(wDtype === "bf16" ? "bf16" : "f16", x));
    for_(
      u32(0),
      K,
      BK,
      (k0) => {
        // Stage A: pair e = (m, kp) of the tile, zero outside [M, K]; split3 stores hi, mid and lo pairs.
        for (let e0 = 0; e0 < BM * KP; e0 += threads) {
          const e = let_(li.add(e0), "ae");
          if_(e.lt(BM * KP), () => {
            const m = let_(e.div(KP), "am");
            const kk = let_(k0.add(e.rem(KP).mul(2)), "ak");
            const rowOk = let_(row0.add(m).lt(M), "a_ok");
            const at = (dk: number): Val<"f32"> => {
              const v = var_(f32(0), "av");
              if_(rowOk.and(kk.add(dk).lt(K)), () => v.set(A.at(aBase.add(row0.add(m).mul(K)).add(kk).add(dk))));
              return v;
            };
            const x = [at(0), at(1)];
            if (parts === 1)
              (As[0] as Arr<"u32">).set(e, pack(fmt, vec("vec2<f32>", x[0] as Val<"f32">, x[1] as Val<"f32">)));
            else {
              // x = hi + mid + lo exactly: each residual of a round-to-nearest bf16 rounding is exact in f32.
              const hi = x.map((v) => let_(round(v), "hi"));
              const r1 = x.map((v, i) => let_(v.sub(hi[i] as Val<"f32">), "r1"));
              const mid = r1.map((v) => let_(round(v), "mid"));
              const lo = r1.map((v, i) => let_(round(v.sub(mid[i] as Val<"f32">)), "lo"));
              [hi, mid, lo].forEach((h, p) =>
                (As[p] as Arr<"u32">).set(e, pack(fmt, vec("vec2<f32>", h[0] as Val<"f32">, h[1] as Val<"f32">))),
              );
            }
          });
        }
        // Stage W: pair e = (n, kp): W[k][n] and W[k+1][n] of this slice, zero outside [K, N].
        for (let e0 = 0; e0 < BN * KP; e0 += threads) {
          const e = let_(li.add(e0), "we");
          if_(e.lt(BN * KP), () => {
            // nk: consecutive threads walk K (contiguous in W rows); kn: they walk N.
            const n = let_(nk ? e.div(KP) : e.rem(BN), "wn_");
            const kp = let_(nk ? e.rem(KP) : e.div(BN), "wkp");
            const kk = let_(k0.add(kp.mul(2)), "wk");
            const nn = let_(col0.add(n), "wnn");
            const at = (dk: number): Val<"f32"> => {
              const v = var_(f32(0), "wv");
              const kd = kk.add(dk);
              if_(nn.lt(N).and(kd.lt(K)), () => v.set(W.at(wBase.add(nk ? nn.mul(K).add(kd) : kd.mul(N).add(nn)))));
              return v;
            };
            Ws.set(n.mul(KP).add(kp), pack(fmt, vec("vec2<f32>", at(0), at(1))));
          });
        }
        barrier();
        // Fragments at the shape's lane coordinates: each word is one staged pair (row, kp) of the warp's tile.
        const words = (S: Arr<"u32">, base: Val<"u32">, ws: readonly Word[]): Val<"vec2<u32>"> | Val<"vec4<u32>"> => {
          const v = ws.map(([row, kp]) => S.at(base.add(row).mul(KP).add(kp)));
          return ws.length === 2
            ? let_(vec("vec2<u32>", v[0]!, v[1]!), "fw")
            : let_(vec("vec4<u32>", v[0]!, v[1]!, v[2]!, v[3]!), "fw");
        };
        const bFrag = Array.from({ length: tilesN }, (_, j) =>
          words(Ws, let_(wn.mul(tn * tilesN).add(j * tn), "bn"), frag.b),
        );
        for (let i = 0; i < tilesM; i++) {
          const m0 = let_(wm.mul(16 * tilesM).add(i * 16), "fm");
          for (let p = 0; p < parts; p++) {
            const aFrag = words(As[p] as Arr<"u32">, m0, frag.a);
            for (let j = 0; j < tilesN; j++) {
              const a = acc[i * tilesN + j] as Var<"vec4<f32>">;
              a.set(mma(wDtype, aFrag, bFrag[j]!, a, shape));
            }
          }
        }
        // The next stage overwrites the tiles.
        barrier();
      },
      "k0",
    );
    // Epilogue: D element q of tile (i, j) at the shape's accumulator coordinates.
    for (let i = 0; i < tilesM; i++) {
      for (let j = 0; j < tilesN; j++) {
        for (let q = 0; q < 4; q++) {
          const [dr, dc] = frag.d(q);
          const r = let_(
            row0
              .add(wm.mul(16 * tilesM))
              .add(i * 16)
              .add(dr),
            "r",
          );
          const c = let_(
            col0
              .add(wn.mul(tn * tilesN))
              .add(j * tn)
              .add(dc),
            "c",
          );
          if_(r.lt(M).and(c.lt(N)), () => {
            const idx = let_(
              bz
                .mul(M * N)
                .add(r.mul(N))
                .add(c),
              "ci",
            );
            const v = let_((acc[i * tilesN + j] as Var<"vec4<f32>">).lane(q), "dv");
            storeAs(b, C, outDtype, idx, ep.apply(b, v, c, idx));
          });
        }
      }
    }
  });
  return { kernel: k, grid: [Math.ceil(N / BN), Math.ceil(M / BM), batch], subgroupSize: L.lanes, tiling: t };
}
