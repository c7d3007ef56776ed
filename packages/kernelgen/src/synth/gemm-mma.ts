// The tensor-core GEMM synthesizer: C[b] = epilogue(A[b] · W[b]) with warps issuing m16n8k16 `mma` (PTX mma.sync)
// over K-slices staged in shared memory as packed 16-bit pairs. Chosen for contractions with bf16/f16 weights
// when the caps report an m16n8k16 matrix unit of that input type and 32-lane subgroups.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, MmaInput, Val, Var } from "@poot/kernel-dsl";
import { checkCaps } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { prepareEpilogue } from "./epilogue.js";
import type { PreparedEpilogue } from "./epilogue.js";
import type { GemmRequest } from "./gemm.js";
import { checkDType, elemOf, storeAs } from "./storage.js";

const SYNTH = "gemm-mma";
/** K consumed per stage: one m16n8k16 step. */
const BK = 16;

/** The tiling a tensor-core GEMM was generated with. */
export interface MmaGemmTiling {
  /** Warps along M in a workgroup. */
  readonly warpsM: number;
  /** Warps along N in a workgroup. */
  readonly warpsN: number;
  /** m16 tiles (along M) per warp. */
  readonly tilesM: number;
  /** n8 tiles (along N) per warp. */
  readonly tilesN: number;
  /** Workgroup output rows: 16·tilesM·warpsM. */
  readonly BM: number;
  /** Workgroup output columns: 8·tilesN·warpsN. */
  readonly BN: number;
  /**
   * How A reaches the 16-bit multiplicand: `direct` when A already has the weight's type; `split3` when A is f32
   * and the weight bf16: a = hi + mid + lo exactly (three bf16 terms), one mma each, so no product is rounded.
   */
  readonly aMode: "direct" | "split3";
}

/** True when the caps list an m16n8k16 matrix unit for `input` and subgroups are 32 lanes wide. */
export function hasMmaUnit(caps: SynthCaps, input: MmaInput): boolean {
  return (
    caps.subgroupSize === 32 &&
    (caps.matrixShapes ?? []).some((s) => s.m === 16 && s.n === 8 && s.k === 16 && s.input === input)
  );
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

/** Picks warps and per-warp tiles from M and N (small prefills get one warp row, narrow outputs fewer n8 tiles). */
export function chooseMmaTiling(M: number, N: number, aMode: MmaGemmTiling["aMode"], caps: SynthCaps): MmaGemmTiling {
  const tilesM = M > 16 ? 2 : 1;
  const tilesN = N > 16 ? 4 : N > 8 ? 2 : 1;
  let warpsM = M > 16 * tilesM ? 2 : 1;
  let warpsN = N > 8 * tilesN ? 2 : 1;
  while (warpsM * warpsN * 32 > caps.maxWorkgroup && warpsM * warpsN > 1) {
    if (warpsN > 1) warpsN = 1;
    else warpsM = 1;
  }
  if (32 > caps.maxWorkgroup)
    throw new KernelgenError("exceeds_caps", "a tensor-core GEMM needs a 32-thread workgroup", {
      synth: SYNTH,
      param: "caps.maxWorkgroup",
      value: caps.maxWorkgroup,
    });
  const BM = 16 * tilesM * warpsM,
    BN = 8 * tilesN * warpsN;
  const bytes = ((aMode === "split3" ? 3 : 1) * BM + BN) * (BK / 2) * 4;
  if (bytes > caps.sharedBytes)
    throw new KernelgenError(
      "exceeds_caps",
      `a ${BM}×${BN} tensor-core tile needs ${bytes} bytes of workgroup memory`,
      { synth: SYNTH, param: "caps.sharedBytes", value: caps.sharedBytes },
    );
  return { warpsM, warpsN, tilesM, tilesN, BM, BN, aMode };
}

/** Generates the tensor-core GEMM. Buffers: A, W, epilogue inputs, C. Grid [ceil(N/BN), ceil(M/BM), batch]; subgroups of 32. */
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
  if (!hasMmaUnit(caps, wDtype))
    throw new KernelgenError("bad_param", `the caps report no m16n8k16 ${wDtype} matrix unit with 32-lane subgroups`, {
      synth: SYNTH,
      param: "caps.matrixShapes",
      value: caps.matrixShapes ?? [],
    });
  const outDtype = req.outDtype ?? "f32";
  const t = chooseMmaTiling(M, N, aMode, caps);
  const { warpsM, warpsN, tilesM, tilesN, BM, BN } = t;
  const threads = 32 * warpsM * warpsN;
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
    const g = let_(lane.shr(2), "g");
    const tg = let_(lane.and(3), "tg");
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
        // Fragments (PTX m16n8k16 layout): A words (g, tg), (g+8, tg), (g, tg+4), (g+8, tg+4); B words (n=g, tg), (g, tg+4).
        const bFrag = Array.from({ length: tilesN }, (_, j) => {
          const n = let_(
            wn
              .mul(8 * tilesN)
              .add(j * 8)
              .add(g),
            "bn",
          );
          return let_(vec("vec2<u32>", Ws.at(n.mul(KP).add(tg)), Ws.at(n.mul(KP).add(tg).add(4))), "bf");
        });
        for (let i = 0; i < tilesM; i++) {
          const m = let_(
            wm
              .mul(16 * tilesM)
              .add(i * 16)
              .add(g),
            "fm",
          );
          for (let p = 0; p < parts; p++) {
            const S = As[p] as Arr<"u32">;
            const w0 = m.mul(KP).add(tg),
              w1 = m.add(8).mul(KP).add(tg);
            const aFrag = let_(vec("vec4<u32>", S.at(w0), S.at(w1), S.at(w0.add(4)), S.at(w1.add(4))), "af");
            for (let j = 0; j < tilesN; j++) {
              const a = acc[i * tilesN + j] as Var<"vec4<f32>">;
              a.set(mma(wDtype, aFrag, bFrag[j] as Val<"vec2<u32>">, a));
            }
          }
        }
        // The next stage overwrites the tiles.
        barrier();
      },
      "k0",
    );
    // Epilogue: D element q of tile (i, j) is row g (+8 for q ≥ 2), column 2·tg + (q & 1).
    for (let i = 0; i < tilesM; i++) {
      for (let j = 0; j < tilesN; j++) {
        for (let q = 0; q < 4; q++) {
          const r = let_(
            row0
              .add(wm.mul(16 * tilesM))
              .add(i * 16 + (q >= 2 ? 8 : 0))
              .add(g),
            "r",
          );
          const c = let_(
            col0
              .add(wn.mul(8 * tilesN))
              .add(j * 8 + (q & 1))
              .add(tg.mul(2)),
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
  return { kernel: k, grid: [Math.ceil(N / BN), Math.ceil(M / BM), batch], subgroupSize: 32, tiling: t };
}
