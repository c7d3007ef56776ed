// The tiled GEMM synthesizer: C[b] = epilogue(A[b] · W[b]) with TM×TN output tiles, TK-deep shared-memory stages
// and an RM×RN register micro-tile per thread, all sized from the shape and the caps (threads, shared memory).

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Val, Var } from "@poot/kernel-dsl";
import { checkCaps } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { prepareEpilogue } from "./epilogue.js";
import type { Epilogue, PreparedEpilogue } from "./epilogue.js";
import { checkDType, elemOf, storeAs } from "./storage.js";
import type { StorageDType } from "./storage.js";

/** A (batched) GEMM: A [batch, M, K], W [K, N] (`kn`) or [N, K] (`nk`, HF linear), C [batch, M, N]. */
export interface GemmRequest {
  readonly name: string;
  readonly M: number;
  readonly N: number;
  readonly K: number;
  /** Batch count (grid z); default 1. */
  readonly batch?: number;
  /** True if W has a batch dimension too (else one W is shared by every batch). */
  readonly batchedWeight?: boolean;
  readonly aDtype?: StorageDType;
  readonly weight: { readonly dtype: StorageDType; readonly layout: "kn" | "nk" };
  readonly outDtype?: StorageDType;
  readonly epilogue?: Epilogue;
}

/** The tiling a GEMM was generated with. */
export interface GemmTiling {
  readonly TM: number;
  readonly TN: number;
  readonly TK: number;
  readonly RM: number;
  readonly RN: number;
}

const SYNTH = "gemm";

/** Picks the tiling: a square-ish thread grid within maxWorkgroup, micro-tiles as large as M and N justify, TK fitting shared memory. */
export function chooseGemmTiling(M: number, N: number, K: number, caps: SynthCaps): GemmTiling {
  let side = 1;
  while (side * 2 * (side * 2) <= Math.min(caps.maxWorkgroup, 256)) side *= 2;
  const micro = (d: number): number => (d >= 4 * side * 4 ? 4 : d >= 2 * side * 2 ? 2 : 1);
  const RM = micro(M),
    RN = micro(N);
  const TM = side * RM,
    TN = side * RN;
  let TK = Math.min(16, 1 << Math.ceil(Math.log2(Math.max(1, K))));
  while (TK > 1 && (TM + TN) * TK * 4 > caps.sharedBytes) TK >>= 1;
  if ((TM + TN) * TK * 4 > caps.sharedBytes)
    throw new KernelgenError("exceeds_caps", `a ${TM}×${TN} tile needs ${(TM + TN) * 4} bytes of workgroup memory`, {
      synth: SYNTH,
      param: "caps.sharedBytes",
      value: caps.sharedBytes,
    });
  return { TM, TN, TK, RM, RN };
}

/** Generates the GEMM. Buffers: A, W, epilogue inputs, C. Grid [ceil(N/TN), ceil(M/TM), batch]. */
export function synthesizeGemm(req: GemmRequest, caps: SynthCaps): SynthKernel & { readonly tiling: GemmTiling } {
  return synthesizeGemmWith(req, caps, prepareEpilogue(SYNTH, req.epilogue, req.outDtype ?? "f32"));
}

/** @internal The same with an already prepared epilogue (graph-plan regions come in this way). */
export function synthesizeGemmWith(
  req: GemmRequest,
  caps: SynthCaps,
  ep: PreparedEpilogue,
): SynthKernel & { readonly tiling: GemmTiling } {
  checkCaps(SYNTH, caps);
  const { M, N, K } = req;
  const batch = req.batch ?? 1;
  if (![M, N, K, batch].every((d) => Number.isInteger(d) && d >= 1))
    throw new KernelgenError("bad_shape", `M ${M}, N ${N}, K ${K}, batch ${batch}`, { synth: SYNTH, param: "shape" });
  const aDtype = checkDType(SYNTH, "A", req.aDtype ?? "f32", ["f32", "bf16", "f16"]);
  const wDtype = checkDType(SYNTH, "W", req.weight.dtype, ["f32", "bf16", "f16"]);
  const outDtype = req.outDtype ?? "f32";
  const t = chooseGemmTiling(M, N, K, caps);
  const { TM, TN, TK, RM, RN } = t;
  const TX = TN / RN,
    TY = TM / RM;
  const threads = TX * TY;
  const nk = req.weight.layout === "nk";
  const k = kernel(req.name, { workgroupSize: [TX, TY, 1] }, (b) => {
    const { let_, var_, for_, if_, wid, lid, f32, u32, barrier, localIndex } = b;
    const A = b.buffer("A", elemOf(aDtype), "read") as Arr<"f32">;
    const W = b.buffer("W", elemOf(wDtype), "read") as Arr<"f32">;
    ep.declare(b);
    const C = b.buffer("C", elemOf(outDtype), "write");
    const As = b.shared("As", "f32", TM * TK);
    const Ws = b.shared("Ws", "f32", TK * TN);
    const tx = let_(lid.x, "tx");
    const ty = let_(lid.y, "ty");
    const li = let_(localIndex, "li");
    const row0 = let_(wid.y.mul(TM), "row0");
    const col0 = let_(wid.x.mul(TN), "col0");
    const bz = let_(wid.z, "bz");
    const aBase = let_(bz.mul(M * K), "a_base");
    const wBase = let_(req.batchedWeight === true ? bz.mul(K * N) : u32(0), "w_base");
    const acc: Var<"f32">[] = Array.from({ length: RM * RN }, (_, i) => var_(f32(0), `c${i}`));
    for_(
      u32(0),
      K,
      TK,
      (k0) => {
        // Cooperative, bounds-checked tile loads: element e of the tile goes to thread e mod threads.
        for (let e0 = 0; e0 < TM * TK; e0 += threads) {
          const e = let_(li.add(e0), "ae");
          if_(e.lt(TM * TK), () => {
            const r = let_(e.div(TK), "ar");
            const c = let_(e.rem(TK), "ac");
            const v = var_(f32(0), "av");
            if_(row0.add(r).lt(M).and(k0.add(c).lt(K)), () =>
              v.set(A.at(aBase.add(row0.add(r).mul(K)).add(k0).add(c))),
            );
            As.set(e, v);
          });
        }
        for (let e0 = 0; e0 < TK * TN; e0 += threads) {
          const e = let_(li.add(e0), "we");
          if_(e.lt(TK * TN), () => {
            // nk: consecutive threads walk K (contiguous in W rows); kn: they walk N.
            const r = let_(nk ? e.rem(TK) : e.div(TN), "wr");
            const c = let_(nk ? e.div(TK) : e.rem(TN), "wc");
            const v = var_(f32(0), "wv");
            const kk = k0.add(r),
              nn = col0.add(c);
            if_(kk.lt(K).and(nn.lt(N)), () => v.set(W.at(wBase.add(nk ? nn.mul(K).add(kk) : kk.mul(N).add(nn)))));
            Ws.set(r.mul(TN).add(c), v);
          });
        }
        barrier();
        for_(
          u32(0),
          TK,
          1,
          (kk) => {
            const a = Array.from({ length: RM }, (_, i) =>
              let_(
                As.at(
                  ty
                    .add(i * TY)
                    .mul(TK)
                    .add(kk),
                ),
                `a${i}`,
              ),
            );
            const w = Array.from({ length: RN }, (_, j) =>
              let_(
                Ws.at(
                  kk
                    .mul(TN)
                    .add(tx)
                    .add(j * TX),
                ),
                `w${j}`,
              ),
            );
            for (let i = 0; i < RM; i++)
              for (let j = 0; j < RN; j++)
                (acc[i * RN + j] as Var<"f32">).set(
                  (acc[i * RN + j] as Var<"f32">).add((a[i] as Val<"f32">).mul(w[j] as Val<"f32">)),
                );
          },
          "kk",
        );
        // The next stage overwrites the tiles.
        barrier();
      },
      "k0",
    );
    for (let i = 0; i < RM; i++) {
      for (let j = 0; j < RN; j++) {
        const r = let_(row0.add(ty).add(i * TY), "r");
        const c = let_(col0.add(tx).add(j * TX), "c");
        if_(r.lt(M).and(c.lt(N)), () => {
          const idx = let_(
            bz
              .mul(M * N)
              .add(r.mul(N))
              .add(c),
            "ci",
          );
          storeAs(b, C, outDtype, idx, ep.apply(b, acc[i * RN + j] as Var<"f32">, c, idx));
        });
      }
    }
  });
  return { kernel: k, grid: [Math.ceil(N / TN), Math.ceil(M / TM), batch], tiling: t };
}
