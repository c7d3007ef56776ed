// The thin adapter from graph-plan: a KernelRequest (kind, op, accesses, params, region) and DeviceCaps become a
// synthesizer call, and the result says which request access each kernel buffer binds.

import type { Val } from "@poot/kernel-dsl";
import { isPacked, numel } from "@poot/graph-ir";
import type { ScalarDType } from "@poot/graph-ir";
import type { Access, DeviceCaps, KernelRequest, Region, RegionNode } from "@poot/graph-plan";
import { checkGrid } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { attentionMinSplitKeys, attentionSplits, synthesizeAttention } from "../synth/attention.js";
import type { Strides4 } from "../synth/attention.js";
import { synthesizeDequantGemvWith } from "../synth/dequant.js";
import type { PreparedEpilogue } from "../synth/epilogue.js";
import type { ExprType } from "../synth/expr.js";
import { synthesizeGemmWith } from "../synth/gemm.js";
import { mmaGemmApplies, synthesizeMmaGemmWith } from "../synth/gemm-mma.js";
import { cpuTiledGemv, synthesizeGemvWith } from "../synth/gemv.js";
import { synthesizeIndexedMatMulWith } from "../synth/indexed.js";
import { synthesizeMovement } from "../synth/movement.js";
import { synthesizeRope } from "../synth/rope.js";
import type { StorageDType } from "../synth/storage.js";
import { delinearize, elemForDType, isDense, loadAccess, requireDense } from "./access.js";
import { exprTypeOf } from "../synth/expr.js";
import { RegionEmitter } from "./region-emit.js";
import { routedIndexedMatMul } from "./routed.js";
import type { RoutedParams } from "./routed.js";
import { blockContraction } from "./block-contraction.js";
import { splitBlockContraction } from "./block-split.js";
import { groupedContraction } from "./grouped.js";
import { inlineContraction } from "./region-contraction.js";
import { packedDecode, regionElementwise, regionRow, singleNodeRegion } from "./region-kernels.js";

/** What a kernel buffer binds: request input `index`, or the request's output. */
export type BindingSource = { readonly kind: "input"; readonly index: number } | { readonly kind: "output" };

/** A synthesized kernel for a graph-plan request, with its buffer bindings in kernel binding order. */
export interface RequestKernel extends SynthKernel {
  readonly bindings: readonly { readonly buffer: string; readonly source: BindingSource }[];
  /**
   * A scratch f32 buffer of `elements` that is no request access: the backend allocates it (contents undefined),
   * binds it as kernel buffer `buffer` here and in `then`. Only with caps.splitAttention or caps.splitBlockGemv.
   */
  readonly transient?: { readonly buffer: string; readonly elements: number };
  /** A second dispatch launched right after this one (flash-decode's combine); it also binds `transient`. */
  readonly then?: RequestKernel;
}

/** SynthCaps from graph-plan DeviceCaps (subgroups used when the device reports a width above 1). */
export function synthCapsFrom(caps: DeviceCaps): SynthCaps {
  return {
    maxWorkgroup: Math.min(caps.maxWorkgroupSize, caps.maxWorkgroupDims[0]),
    ...(caps.subgroupSize > 1 ? { subgroupSize: caps.subgroupSize } : {}),
    sharedBytes: caps.sharedBytes,
    maxGridDim: caps.maxGrid[0],
    ...(caps.matrixShapes.length > 0 ? { matrixShapes: caps.matrixShapes } : {}),
    computeUnits: caps.computeUnits,
  };
}

const SYNTH = "request";
const input = (index: number): BindingSource => ({ kind: "input", index });
const OUTPUT: BindingSource = { kind: "output" };

/** Bindings by buffer name: `in<i>` -> input i, `out` -> output, and named roles; `transient` is left unbound. */
function bind(k: SynthKernel, named: Readonly<Record<string, BindingSource>> = {}, transient?: string): RequestKernel {
  const bindings = k.kernel.buffers
    .filter((p) => p.name !== transient)
    .map((p) => {
      const m = /^in(\d+)$/.exec(p.name);
      const source = named[p.name] ?? (m !== null ? input(Number(m[1])) : p.name === "out" ? OUTPUT : undefined);
      if (source === undefined)
        throw new KernelgenError("bad_param", `kernel buffer ${p.name} has no binding`, {
          synth: SYNTH,
          value: p.name,
        });
      return { buffer: p.name, source };
    });
  return { ...k, bindings };
}

function scalar(d: unknown, what: string): StorageDType {
  if (typeof d !== "string" || !["f32", "bf16", "f16", "i32", "u32", "u8", "bool"].includes(d))
    throw new KernelgenError("bad_dtype", `${what} has dtype ${JSON.stringify(d)}`, { synth: SYNTH, param: what });
  return d as StorageDType;
}

/**
 * A contraction epilogue from a graph-plan region over inputs 0..heads-1 = the accumulators (rounded to accDtype)
 * and then `extras` (read through their accesses at the output element's coordinates). Buffers `e1`, `e2`, ...
 */
function regionEpilogue(
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

/** Named bindings of the epilogue extras (`e<i>` -> request input `first + i - 1`). */
function extraBindings(count: number, first: number): Record<string, BindingSource> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`e${i + 1}`, input(first + i)]));
}

/** Strides of `a` broadcast (right-aligned) onto `shape`: size-1 or missing axes get 0. */
function stridesOnto(a: Access, shape: readonly number[]): number[] {
  const r = shape.length;
  return shape.map((_, d) => {
    const j = d - (r - a.shape.length);
    return j < 0 || a.shape[j] === 1 ? 0 : (a.strides[j] as number);
  });
}

/** [batch, head, token, dim] strides of a rank-≥3 access whose batch dims collapse to one stride. */
function strides4(a: Access, what: string): Strides4 {
  if (a.offset !== 0)
    throw new KernelgenError("bad_shape", `${what} must start at offset 0`, { synth: "attention", param: what });
  const r = a.shape.length;
  const batch = a.shape
    .slice(0, r - 3)
    .map((d, i) => ({ d, s: a.strides[i] as number }))
    .filter((x) => x.d > 1);
  if (batch.length > 1) {
    for (let i = 0; i + 1 < batch.length; i++)
      if (
        (batch[i] as { s: number }).s !==
        (batch[i + 1] as { s: number; d: number }).s * (batch[i + 1] as { d: number }).d
      )
        throw new KernelgenError("bad_shape", `${what} batch dims do not collapse`, {
          synth: "attention",
          param: what,
        });
  }
  const sb = batch.length === 0 ? 0 : (batch[batch.length - 1] as { s: number }).s;
  return [sb, a.strides[r - 3] as number, a.strides[r - 2] as number, a.strides[r - 1] as number];
}

/**
 * Synthesizes the kernel a graph-plan request asks for. Throws `KernelgenError` for requests no synthesizer serves
 * (imported-only ops such as ArgMaxChunk, bool/additive attention masks, epilogues with Rope or reductions,
 * non-dense operands of fixed-layout kernels), and `exceeds_caps` when the kernel's grid exceeds the device's
 * per-axis workgroup limits (`maxGridDim` on x, min(maxGridDim, 65535) on y and z).
 */
export function synthesizeRequest(
  req: KernelRequest,
  deviceCaps: DeviceCaps | SynthCaps,
  name = `k_${req.op.toLowerCase()}`,
): RequestKernel {
  const caps = "maxWorkgroupSize" in deviceCaps ? synthCapsFrom(deviceCaps) : deviceCaps;
  const k = synthesize(req, caps, name);
  checkGrid(name, k.grid, caps);
  return k;
}

/** synthesizeRequest without the grid check. */
function synthesize(req: KernelRequest, caps: SynthCaps, name: string): RequestKernel {
  const { inputs, output } = req;
  const p = req.params as Record<string, unknown>;
  switch (req.kind) {
    case "elementwise":
      return bind(
        regionElementwise(name, req.region ?? singleNodeRegion(req.op, inputs, p, output), inputs, output, caps),
      );
    case "reduction-row": {
      if (req.op === "Reduce") {
        const axes = p.axes as number[];
        const x = inputs[0] as Access;
        // Other axes: one thread per output element reduces sequentially.
        if (axes.length !== 1 || (axes[0] !== -1 && axes[0] !== x.shape.length - 1))
          return bind(regionElementwise(name, singleNodeRegion("Reduce", inputs, p, output), inputs, output, caps));
        const keepShape = [...x.shape.slice(0, -1), 1];
        const region: Region = {
          nodes: [
            {
              op: "Reduce",
              args: [{ in: 0 }],
              params: { ...p, keepdim: true } as never,
              dtype: output.dtype as ScalarDType,
              shape: keepShape,
            },
          ],
          result: 0,
        };
        const out =
          output.shape.length === keepShape.length
            ? output
            : { ...output, shape: keepShape, strides: [...output.strides, 1] };
        return bind(regionRow(name, region, inputs, out, caps));
      }
      if (req.region === null)
        throw new KernelgenError("bad_param", `${req.op} is served by the imported library, not synthesized`, {
          synth: SYNTH,
          param: "op",
          value: req.op,
        });
      return bind(regionRow(name, req.region, inputs, output, caps));
    }
    case "movement": {
      if (req.op === "DecodePacked")
        return bind(packedDecode(name, inputs[0] as Access, undefined, output, caps), { table: input(0) });
      if (req.op === "PackedRowGather")
        return bind(packedDecode(name, inputs[0] as Access, inputs[1], output, caps), {
          table: input(0),
          ids: input(1),
        });
      if (isPacked(output.dtype)) return packedMovement(req, name, caps);
      return bind(
        regionElementwise(name, req.region ?? singleNodeRegion(req.op, inputs, p, output), inputs, output, caps),
      );
    }
    case "gemv":
    case "gemm":
    case "dequant-gemv":
    case "dequant-gemm":
      return req.group === undefined ? contraction(req, name, caps) : bind(groupedContraction(req, name, caps));
    case "attention":
      return attention(req, name, caps);
    case "rope": {
      const [x, cos, sin] = inputs as [Access, Access, Access];
      requireDense("rope", "x", x);
      requireDense("rope", "out", output);
      if (cos.offset !== 0 || sin.offset !== 0)
        throw new KernelgenError("bad_shape", "cos/sin must start at offset 0", { synth: "rope", param: "cos" });
      const k = synthesizeRope(
        {
          name,
          shape: x.shape,
          style: "half",
          xDtype: scalar(x.dtype, "x"),
          dtype: p.dtype as "f32",
          cos: { dtype: scalar(cos.dtype, "cos"), shape: x.shape, strides: stridesOnto(cos, x.shape) },
          sin: { dtype: scalar(sin.dtype, "sin"), shape: x.shape, strides: stridesOnto(sin, x.shape) },
        },
        caps,
      );
      return bind(k, { x: input(0), cos: input(1), sin: input(2) });
    }
    case "indexed-matmul": {
      if (p.routing !== undefined)
        return bind(routedIndexedMatMul(name, inputs, p as unknown as RoutedParams, output, caps));
      const [x, w, ids, ...extras] = inputs as [Access, Access, Access, ...Access[]];
      for (const [a, n] of [
        [x, "x"],
        [w, "w"],
        [ids, "ids"],
        [output, "out"],
      ] as const)
        requireDense("indexedMatMul", n, a);
      const [T, K] = x.shape as [number, number];
      const [E, N] = w.shape as [number, number, number];
      const S = ids.shape[1] as number;
      const ep = regionEpilogue((p.epilogue ?? null) as Region | null, p.accDtype as ScalarDType, extras, [T, S, N]);
      const k = synthesizeIndexedMatMulWith(
        {
          name,
          T,
          S,
          K,
          N,
          experts: E,
          xDtype: scalar(x.dtype, "x"),
          wDtype: scalar(w.dtype, "w"),
          outDtype: scalar(output.dtype, "out"),
        },
        caps,
        ep,
      );
      return bind(k, { x: input(0), w: input(1), ids: input(2), ...extraBindings(extras.length, 3) });
    }
    default:
      return req.kind satisfies never;
  }
}

function contraction(req: KernelRequest, name: string, caps: SynthCaps): RequestKernel {
  try {
    return fastContraction(req, name, caps);
  } catch (e) {
    if (!(e instanceof AccumulatorElsewhere)) throw e;
    // The epilogue needs accumulators of other elements: every thread computes the dot products it reads.
    const p = req.params as Record<string, unknown>;
    const heads = (p.heads ?? 1) as number;
    const epi = (p.epilogue ?? null) as Region | null;
    // A bounded neighbourhood (a head for RoPE, a KV-cache window): a cooperative GEMV per block, epilogue from workgroup memory.
    // Blocks too few for the device (8 heads of k): every output's GEMV, then the epilogue per block (decision 0807).
    const split =
      epi === null
        ? null
        : splitBlockContraction(
            name,
            req.inputs,
            heads,
            epi,
            (p.accDtype ?? "f32") as ScalarDType,
            p.transposeB === true,
            req.output,
            caps,
          );
    if (split !== null)
      return {
        ...bind(split.dots, {}, "part"),
        transient: { buffer: "part", elements: split.partElements },
        then: bind(split.epilogue, {}, "part"),
      };
    const blocked =
      epi === null
        ? null
        : blockContraction(
            name,
            req.inputs,
            heads,
            epi,
            (p.accDtype ?? "f32") as ScalarDType,
            p.transposeB === true,
            req.output,
            caps,
          );
    if (blocked !== null) return bind(blocked);
    return bind(
      inlineContraction(
        name,
        req.inputs,
        (p.heads ?? 1) as number,
        (p.epilogue ?? null) as Region | null,
        (p.accDtype ?? "f32") as ScalarDType,
        p.transposeB === true,
        req.output,
        caps,
      ),
    );
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

function attention(req: KernelRequest, name: string, caps: SynthCaps): RequestKernel {
  const p = req.params as Record<string, unknown>;
  const [q, k, v, limit, pages] = req.inputs as [Access, Access, Access, Access | undefined, Access | undefined];
  const mask = p.mask as string;
  const pageSize = (p.pageSize as number | undefined) ?? 0;
  if (!["none", "causal", "sliding", "bool", "additive"].includes(mask))
    throw new KernelgenError("bad_param", `attention mask ${mask} is not synthesized`, {
      synth: "attention",
      param: "mask",
      value: mask,
    });
  const tensorMask = mask === "bool" || mask === "additive";
  const r = q.shape.length;
  const [H, Tq, D] = q.shape.slice(-3) as [number, number, number];
  // Paged (decision 0603): k/v are pools [rows, Hkv, D] read through the page table [batch, pages].
  if (pageSize > 0 && (pages === undefined || k.shape.length !== 3 || pages.shape.length !== 2))
    throw new KernelgenError(
      "bad_shape",
      "a paged attention takes k/v pools [rows, Hkv, D] and a page table [batch, pages]",
      { synth: "attention", param: "pages" },
    );
  const [Hkv, Tk] =
    pageSize > 0
      ? [k.shape[1] as number, (pages!.shape[1] as number) * pageSize]
      : (k.shape.slice(-3) as [number, number, number]);
  const Dv = v.shape[v.shape.length - 1] as number;
  const poolStrides = (a: Access, what: string): Strides4 => {
    if (a.offset !== 0)
      throw new KernelgenError("bad_shape", `${what} must start at offset 0`, { synth: "attention", param: what });
    return [0, a.strides[1] as number, a.strides[0] as number, a.strides[2] as number];
  };
  if (pages !== undefined) requireDense("attention", "pages", pages);
  const batch = numel(q.shape.slice(0, -3));
  let limitStrides: [number, number, number] | undefined;
  let maskTensor: { dtype: StorageDType; strides: Strides4 } | undefined;
  if (limit !== undefined && tensorMask) {
    if (limit.offset !== 0)
      throw new KernelgenError("bad_shape", "mask must start at offset 0", { synth: "attention", param: "mask" });
    const ms = stridesOnto(limit, [...q.shape.slice(0, -1), Tk]);
    const bs = ms.slice(0, r - 3).filter((_, i) => (q.shape[i] as number) > 1);
    maskTensor = {
      dtype: scalar(limit.dtype, "mask"),
      strides: [bs[bs.length - 1] ?? 0, ms[r - 3] as number, ms[r - 2] as number, ms[r - 1] as number],
    };
  } else if (limit !== undefined) {
    if (limit.offset !== 0)
      throw new KernelgenError("bad_shape", "limit must start at offset 0", { synth: "attention", param: "limit" });
    const ls = stridesOnto(limit, [...q.shape.slice(0, -1), 1]);
    const bs = ls.slice(0, r - 3).filter((_, i) => (q.shape[i] as number) > 1);
    limitStrides = [bs[bs.length - 1] ?? 0, ls[r - 3] as number, ls[r - 2] as number];
  }
  const splits =
    caps.splitAttention === true && caps.computeUnits !== undefined
      ? attentionSplits(batch * H * Tq, Tk, caps.computeUnits, attentionMinSplitKeys(D, Dv, caps, tensorMask))
      : 1;
  const kk = synthesizeAttention(
    {
      name,
      splits,
      batch,
      queries: Tq,
      heads: H,
      kvHeads: Hkv,
      headDim: D,
      valueDim: Dv,
      keys: Tk,
      scale: (p.scale ?? 1) as number,
      ...(p.softCap === null || p.softCap === undefined ? {} : { softCap: p.softCap as number }),
      mask: mask as "causal",
      ...(mask === "sliding" ? { window: p.window as number } : {}),
      strides: {
        q: strides4(q, "q"),
        k: pageSize > 0 ? poolStrides(k, "k") : strides4(k, "k"),
        v: pageSize > 0 ? poolStrides(v, "v") : strides4(v, "v"),
        out: strides4(req.output, "out"),
        ...(limitStrides === undefined ? {} : { limit: limitStrides }),
      },
      ...(maskTensor === undefined ? {} : { maskTensor }),
      ...(pageSize > 0 ? { paged: { pageSize } } : {}),
      qDtype: scalar(q.dtype, "q"),
      kvDtype: scalar(k.dtype, "k"),
      outDtype: scalar(req.output.dtype, "out"),
    },
    caps,
  );
  if (k.dtype !== v.dtype)
    throw new KernelgenError("bad_dtype", "k and v must share a dtype", { synth: "attention", param: "v" });
  const named = {
    q: input(0),
    k: input(1),
    v: input(2),
    ...(limit === undefined ? {} : tensorMask ? { mask: input(3) } : { limit: input(3) }),
    ...(pageSize > 0 ? { pages: input(4) } : {}),
  };
  if (kk.split === undefined) return bind(kk, named);
  // Flash-decode: partials into the transient `part`, then the combine writes the output.
  return {
    ...bind(kk, named, "part"),
    transient: { buffer: "part", elements: kk.split.partElements },
    then: bind(kk.split.combine, {}, "part"),
  };
}

function packedMovement(req: KernelRequest, name: string, caps: SynthCaps): RequestKernel {
  const x = req.inputs[0] as Access;
  const p = req.params as Record<string, unknown>;
  for (const a of [x, req.output]) requireDense("movement", "packed operand", a);
  const dtype = x.dtype as { packed: import("@poot/graph-ir").PackedFormat };
  switch (req.op) {
    case "Reshape":
      return bind(
        synthesizeMovement({ name, dtype, shape: x.shape, op: { op: "reshape", shape: req.output.shape } }, caps),
        { x: input(0) },
      );
    case "Gather": {
      const ids = req.inputs[1] as Access;
      requireDense("movement", "indices", ids);
      return bind(
        synthesizeMovement(
          { name, dtype, shape: x.shape, op: { op: "gather", axis: (p.axis ?? 0) as number, indicesShape: ids.shape } },
          caps,
        ),
        { x: input(0), indices: input(1) },
      );
    }
    default:
      throw new KernelgenError("bad_param", `packed ${req.op} is not a graph-ir movement`, {
        synth: "movement",
        param: "op",
        value: req.op,
      });
  }
}
