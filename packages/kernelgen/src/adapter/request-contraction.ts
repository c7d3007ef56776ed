// Contraction requests (MatMul with a fused epilogue region, several heads sharing A): the fast synthesized GEMV,
// dequant-GEMV and GEMM kernels with the region applied to the accumulator, else the block, split-block or inline
// region forms when the epilogue reads the accumulator at another element (RoPE's partner) or a row reduction.

import type { Val } from "@poot/kernel-dsl";
import { isPacked, numel } from "@poot/graph-ir";
import type { ScalarDType } from "@poot/graph-ir";
import type { Access, KernelRequest, Region, RegionNode } from "@poot/graph-plan";
import type { SynthCaps } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { synthesizeDequantGemvWith } from "../synth/dequant.js";
import type { PreparedEpilogue } from "../synth/epilogue.js";
import type { ExprType } from "../synth/expr.js";
import { synthesizeGemmWith } from "../synth/gemm.js";
import { mmaGemmApplies, synthesizeMmaGemmWith } from "../synth/gemm-mma.js";
import { cpuTiledGemv, synthesizeGemvWith } from "../synth/gemv.js";
import { delinearize, elemForDType, isDense, loadAccess } from "./access.js";
import { exprTypeOf } from "../synth/expr.js";
import { RegionEmitter } from "./region-emit.js";
import { blockContraction } from "./block-contraction.js";
import { splitBlockContraction } from "./block-split.js";
import { inlineContraction } from "./region-contraction.js";
import {
  OUTPUT,
  SYNTH,
  bind,
  extraBindings,
  input,
  scalar,
  type BindingSource,
  type RequestKernel,
} from "./request-bind.js";

/**
 * A contraction epilogue from a graph-plan region over inputs 0..heads-1 = the accumulators (rounded to accDtype)
 * and then `extras` (read through their accesses at the output element's coordinates). Buffers `e1`, `e2`, ...
 */
export function regionEpilogue(
  region: Region | null,
  accDtype: ScalarDType,
  extras: readonly Access[],
  outShape: readonly number[],
  heads = 1,
): PreparedEpilogue {
  const round = (b: Parameters<PreparedEpilogue["apply"]>[0], acc: Val<"f32">): Val<"f32"> =>
    accDtype === "f32" ? acc : b.unpack(accDtype as "bf16", b.pack(accDtype as "bf16", acc));
  const list = (acc: Val<"f32"> | readonly Val<"f32">[]): readonly Val<"f32">[] =>
    Array.isArray(acc) ? acc : [acc as Val<"f32">];
  if (region === null)
    return { declare: () => {}, apply: (b, acc) => round(b, list(acc)[0] as Val<"f32">), type: "f32" };
  let bufs: ReturnType<Parameters<PreparedEpilogue["declare"]>[0]["buffer"]>[] = [];
  const resultType = exprTypeOf((region.nodes[region.result] as RegionNode).dtype);
  return {
    type: resultType,
    declare: (b) => {
      bufs = extras.map((a, i) => b.buffer(`e${i + 1}`, elemForDType(a.dtype), "read"));
    },
    apply: (b, acc, _col, idx) => {
      const coords = delinearize(b, idx, outShape);
      const accR = list(acc).map((a) => b.let_(round(b, a), "acc_r"));
      const own = JSON.stringify(coords.map((c) => c.expr));
      const em = new RegionEmitter(
        b,
        region,
        [...accR.map(() => outShape), ...extras.map((a) => a.shape)],
        (i, c) => {
          if (i >= heads) return loadAccess(b, bufs[i - heads]!, extras[i - heads] as Access, c);
          // The accumulator exists only for this thread's own element; Rope or views over it need the inline form.
          if (JSON.stringify(c.map((x) => x.expr)) !== own) throw new AccumulatorElsewhere();
          return accR[i] as Val<"f32">;
        },
        SYNTH,
        [...accR.map(() => accDtype), ...extras.map((a) => a.dtype as ScalarDType)],
      );
      return em.at(region.result, coords) as Val<ExprType>;
    },
  };
}

/** Thrown while emitting an epilogue that reads the accumulator at another element (e.g. RoPE's partner). */
class AccumulatorElsewhere extends Error {}

/** A contraction request: the fast kernels when the epilogue allows, else the region forms. */
export function contraction(req: KernelRequest, name: string, caps: SynthCaps): RequestKernel {
  try {
    return fastContraction(req, name, caps);
  } catch (e) {
    if (!(e instanceof AccumulatorElsewhere)) throw e;
    // The epilogue needs accumulators of other elements: every thread computes the dot products it reads.
    const p = req.params as Record<string, unknown>;
    const heads = (p.heads ?? 1) as number;
    const epi = (p.epilogue ?? null) as Region | null;
    const accDtype = (p.accDtype ?? "f32") as ScalarDType;
    const transposeB = p.transposeB === true;
    if (epi !== null) {
      // A bounded neighbourhood (a head for RoPE, a KV-cache window): a cooperative GEMV per block, epilogue from workgroup memory.
      // Blocks too few for the device (8 heads of k): every output's GEMV, then the epilogue per block (decision 0807).
      const split = splitBlockContraction(name, req.inputs, heads, epi, accDtype, transposeB, req.output, caps);
      if (split !== null)
        return {
          ...bind(split.dots, {}, "part"),
          transient: { buffer: "part", elements: split.partElements },
          then: bind(split.epilogue, {}, "part"),
        };
      const blocked = blockContraction(name, req.inputs, heads, epi, accDtype, transposeB, req.output, caps);
      if (blocked !== null) return bind(blocked);
    }
    return bind(inlineContraction(name, req.inputs, heads, epi, accDtype, transposeB, req.output, caps));
  }
}

function fastContraction(req: KernelRequest, name: string, caps: SynthCaps): RequestKernel {
  const p = req.params as Record<string, unknown>;
  const epi = (p.epilogue ?? null) as Region | null;
  const heads = (p.heads ?? 1) as number;
  // Reductions in the epilogue go to the inline form, and so do several B operands sharing A outside GEMV.
  if (epi !== null && epi.nodes.some((n) => n.op === "Reduce")) throw new AccumulatorElsewhere();
  // The fast kernels apply the epilogue at the accumulator's own element: the region must keep the [.., M, N] shape.
  if (epi !== null) {
    const res = epi.nodes[epi.result] as RegionNode;
    if (
      res.shape.length !== req.output.shape.length ||
      res.shape.some((d, i) => d !== req.output.shape[i]) ||
      numel(res.shape) !==
        numel([
          ...(req.inputs[0] as Access).shape.slice(0, -1),
          req.output.shape[req.output.shape.length - 1] as number,
        ])
    )
      throw new AccumulatorElsewhere();
  }
  const A = req.inputs[0] as Access;
  const Bs = req.inputs.slice(1, 1 + heads);
  const B = Bs[0] as Access;
  const extras = req.inputs.slice(1 + heads);
  const out = req.output;
  // Strided or broadcast operands (views, expert batches) go to the inline form, which reads through accesses.
  if (![A, ...Bs, out].every(isDense)) throw new AccumulatorElsewhere();
  const transposeB = p.transposeB === true;
  const accDtype = (p.accDtype ?? "f32") as ScalarDType;
  const K = A.shape[A.shape.length - 1] as number;
  const N = out.shape[out.shape.length - 1] as number;
  const ep = regionEpilogue(epi, accDtype, extras, out.shape, heads);
  const outDtype = scalar(out.dtype, "out");
  const extraB = extraBindings(extras.length, 1 + heads);
  const weightB: Record<string, BindingSource> = Object.fromEntries(
    Bs.map((_, h) => [h === 0 ? "W" : `W${h}`, input(1 + h)]),
  );
  if (isPacked(B.dtype)) {
    if (B.shape.length !== 2)
      throw new KernelgenError("bad_shape", "packed weights must be [N, K]", { synth: "dequant", param: "B" });
    if (
      Bs.some(
        (x) => !isPacked(x.dtype) || x.dtype.packed.name !== (B.dtype as { packed: { name: string } }).packed.name,
      )
    )
      throw new AccumulatorElsewhere();
    const k = synthesizeDequantGemvWith(
      {
        name,
        K,
        N,
        batch: numel(A.shape.slice(0, -1)),
        heads,
        format: B.dtype.packed,
        xDtype: scalar(A.dtype, "A"),
        outDtype,
      },
      caps,
      ep,
    );
    return bind(k, { x: input(0), ...weightB, y: OUTPUT, ...extraB });
  }
  const rows = numel(A.shape.slice(0, -1));
  // On the CPU any number of rows: the SIMD [N, K] kernel tiles them (decision 2305).
  if (B.shape.length === 2 && (rows <= 8 || cpuTiledGemv(caps, transposeB ? "nk" : "kn"))) {
    if (Bs.some((x) => x.dtype !== B.dtype)) throw new AccumulatorElsewhere();
    const k = synthesizeGemvWith(
      {
        name,
        K,
        N,
        batch: rows,
        heads,
        xDtype: scalar(A.dtype, "A"),
        weight: { dtype: scalar(B.dtype, "B"), layout: transposeB ? "nk" : "kn" },
        outDtype,
      },
      caps,
      ep,
    );
    return bind(k, { x: input(0), ...weightB, y: OUTPUT, ...extraB });
  }
  if (heads !== 1) throw new AccumulatorElsewhere();
  const batched = B.shape.length > 2;
  const batch = batched ? numel(out.shape.slice(0, -2)) : 1;
  if (batched && numel(B.shape.slice(0, -2)) !== batch)
    throw new KernelgenError("bad_shape", "broadcast batch dims of B are not supported", { synth: "gemm", param: "B" });
  const M = batched ? (A.shape[A.shape.length - 2] as number) : rows;
  const gemmReq = {
    name,
    M,
    N,
    K,
    batch,
    batchedWeight: batched,
    aDtype: scalar(A.dtype, "A"),
    weight: { dtype: scalar(B.dtype, "B"), layout: transposeB ? ("nk" as const) : ("kn" as const) },
    outDtype,
  };
  // Tensor cores when the caps list an m16n8k16 unit for the weight's 16-bit type (and A has an exact path to it).
  const k = mmaGemmApplies(gemmReq, caps)
    ? synthesizeMmaGemmWith(gemmReq, caps, ep)
    : synthesizeGemmWith(gemmReq, caps, ep);
  return bind(k, { A: input(0), W: input(1), C: OUTPUT, ...extraB });
}
