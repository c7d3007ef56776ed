// Kernels generated straight from graph-plan regions: pointwise/movement regions (one thread per output element,
// or per update element for in-place cache writes), row regions (reductions then epilogue), and packed decodes.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, ElemType, Val } from "@poot/kernel-dsl";
import { isPacked, numel } from "@poot/graph-ir";
import type { PackedFormat, ScalarDType } from "@poot/graph-ir";
import { PLAN_OPS } from "@poot/graph-plan";
import type { Access, Region, RegionArg, RegionNode } from "@poot/graph-plan";
import { grid2d, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { blockDecoder } from "../synth/decode.js";
import { argmaxBeats, combine, serialRowReduce, workgroupArgmax, workgroupReduce } from "../synth/reduction.js";
import { linearThread } from "../synth/index-math.js";
import { delinearize, elemForDType, loadAccess, storeAccess } from "./access.js";
import { RegionEmitter, storeWindow } from "./region-emit.js";
import type { Coords, InputReader } from "./region-emit.js";
import { argShape, regionSpace } from "./region-space.js";
import type { RegionSpace } from "./region-space.js";

const SYNTH = "region";

/** Where a region's inputs come from: their shapes, a reader declared inside the kernel, and their accesses if any. */
export interface RegionSource {
  readonly shapes: readonly (readonly number[])[];
  /** Dtypes of the region inputs. */
  readonly dtypes: readonly ScalarDType[];
  /**
   * Declares the input buffers and then `out` (read_write when an input shares the output's root buffer: such an
   * input is read through `out`, since a buffer bound twice with a writer is invalid on WebGPU and racy elsewhere).
   */
  declare(b: Builder, output: Access): { reader: InputReader; out: Arr };
  /** The access behind region input i (undefined for computed inputs such as an accumulator). */
  access(i: number): Access | undefined;
}

/** Region inputs read straight from the request's accesses (buffers in0, in1, ...). */
function accessSource(inputs: readonly Access[]): RegionSource {
  return {
    shapes: inputs.map((a) => a.shape),
    dtypes: inputs.map((a) => (isPacked(a.dtype) ? "u32" : a.dtype) as ScalarDType),
    declare: (b, output) => {
      const { bufs, out } = declareBuffers(b, inputs, output);
      return { reader: (i, c) => loadAccess(b, bufs[i] as Arr, inputs[i] as Access, c), out };
    },
    access: (i) => inputs[i],
  };
}

/** Declares `in<i>` for each input not aliasing the output's root, then `out`; aliasing inputs map to `out`. */
export function declareBuffers(
  b: Builder,
  inputs: readonly Access[],
  output: Access,
  elemFor: (i: number) => ElemType | undefined = () => undefined,
): { bufs: Arr[]; out: Arr } {
  const aliased = inputs.map((a) => a.root === output.root);
  const own = inputs.map((a, i) =>
    aliased[i] ? undefined : b.buffer(`in${i}`, elemFor(i) ?? elemForDType(a.dtype), "read"),
  );
  const out = b.buffer("out", elemForDType(output.dtype), aliased.some((x) => x) ? "read_write" : "write");
  return { bufs: own.map((x) => x ?? out), out };
}

/** Emits element `e` (< total) of a region kernel: the output element, or the update element written in place. */
export function emitRegionElement(
  b: Builder,
  region: Region,
  src: RegionSource,
  reader: InputReader,
  out: Arr,
  output: Access,
  it: RegionSpace,
  e: Val<"u32">,
): void {
  const { updates, space } = it;
  const em = new RegionEmitter(b, region, src.shapes, reader, SYNTH, src.dtypes);
  const c = delinearize(b, e, space);
  if (updates.length === 0) {
    storeAccess(b, out, output, c, em.at(region.result, c));
    return;
  }
  // Window writes, in order; everything else already holds x (same buffer).
  for (const dus of updates) storeWindow(em, b, out, output, dus, space, c);
}

/** One thread per output element (or per update element for an in-place cache write). Buffers: the source's, then out. */
export function regionKernel(
  name: string,
  region: Region,
  src: RegionSource,
  output: Access,
  caps: SynthCaps,
): SynthKernel {
  const it = regionSpace(region, src, output);
  const wg = pow2Workgroup(it.total, Math.min(caps.maxWorkgroup, 256));
  const k = kernel(name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const { reader, out } = src.declare(b, output);
    const e = linearThread(b, wg);
    b.if_(e.lt(it.total), () => emitRegionElement(b, region, src, reader, out, output, it, e));
  });
  return { kernel: k, grid: grid2d(Math.ceil(it.total / wg), caps) };
}

/** One thread per output element (or per update element for an in-place cache write). Buffers in0.., out. */
export function regionElementwise(
  name: string,
  region: Region,
  inputs: readonly Access[],
  output: Access,
  caps: SynthCaps,
): SynthKernel {
  return regionKernel(name, region, accessSource(inputs), output, caps);
}

/**
 * A row region: every Reduce node (last axis, keepdim) runs as a workgroup reduction over the row (subgroups when
 * the caps have them), cached, then each output element of the row evaluates the result. One workgroup per row.
 */
export function regionRow(
  name: string,
  region: Region,
  inputs: readonly Access[] | RegionSource,
  output: Access,
  caps: SynthCaps,
): SynthKernel {
  const src = Array.isArray(inputs) ? accessSource(inputs as readonly Access[]) : (inputs as RegionSource);
  const oshape = output.shape;
  const cols = oshape[oshape.length - 1] ?? 1;
  const lead = oshape.slice(0, -1);
  const rows = Math.max(1, numel(lead));
  const reduces = region.nodes.map((n, i) => ({ n, i })).filter(({ n }) => n.op === "Reduce");
  const widest = Math.max(
    cols,
    ...reduces.map(({ n }) => {
      const a = n.args[0] as RegionArg;
      const s = argShape(region, src, a);
      return s[s.length - 1] ?? 1;
    }),
  );
  const sg = caps.subgroupSize;
  let wg = pow2Workgroup(widest, Math.min(caps.maxWorkgroup, rowWorkgroupLimit(rows, caps)));
  const useSg = sg !== undefined && sg > 1 && wg >= sg;
  while (!useSg && wg > 1 && wg * 4 > caps.sharedBytes) wg >>= 1;
  const scratchLen = useSg ? Math.max(1, wg / (sg as number)) : wg;
  const k = kernel(name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const { reader, out } = src.declare(b, output);
    const em = new RegionEmitter(b, region, src.shapes, reader, SYNTH, src.dtypes);
    const scratch = b.shared("scratch", "f32", scratchLen);
    const hasArgmax = reduces.some(({ n }) => n.params.kind === "argmax");
    const sv = hasArgmax ? b.shared("amax_v", "f32", wg) : undefined;
    const si = hasArgmax ? b.shared("amax_i", "u32", wg) : undefined;
    const row = b.let_(b.wid.y.mul(b.nwg.x).add(b.wid.x), "row");
    b.if_(row.ge(rows), () => b.return_());
    const tid = b.let_(b.lid.x, "tid");
    const rc = delinearize(b, row, lead);
    for (const { n, i } of reduces) {
      // The cooperative pass indexes the reduction by the output row; past a layout change (a head transpose before
      // RoPE) the row is another reduction's, so the emitter computes it inline where the output reads it.
      if (!rowAligned(region, i)) continue;
      const kind = n.params.kind as string;
      const arg = n.args[0] as RegionArg;
      const srcShape = argShape(region, src, arg);
      const lc = em.broadcastTo(rc, lead, n.shape.slice(0, -1));
      if (kind === "argmax") {
        // First maximal index (numpy order), as i32.
        const best = b.var_(b.f32(-Infinity), "abest");
        const bestI = b.var_(b.u32(0xffffffff), "abest_i");
        b.for_(
          tid,
          srcShape[srcShape.length - 1] as number,
          wg,
          (j) => {
            em.scoped(() => {
              const v = em.arg(arg, [...lc, j]) as Val<"f32">;
              b.if_(argmaxBeats(v, j, best, bestI), () => {
                best.set(v);
                bestI.set(j);
              });
            });
          },
          "j",
        );
        const w = workgroupArgmax(b, best, bestI, wg, sv as Arr<"f32">, si as Arr<"u32">, tid);
        em.setOuter(i, [...lc, b.u32(0)], b.select(w.eq(0xffffffff), b.u32(0), w).i32());
        continue;
      }
      if (kind !== "sum" && kind !== "max" && kind !== "min")
        throw new KernelgenError("bad_param", `row reduction ${kind} is not supported`, {
          synth: SYNTH,
          param: `region.nodes[${i}]`,
        });
      const len = srcShape[srcShape.length - 1] as number;
      if (caps.serialThreads === true) {
        const at = (j: Val<"u32">) => em.scoped(() => em.arg(arg, [...lc, j]) as Val<"f32">);
        em.setOuter(i, [...lc, b.u32(0)], serialRowReduce(b, kind, len, at));
        continue;
      }
      const init = kind === "sum" ? 0 : kind === "max" ? -Infinity : Infinity;
      const acc = b.var_(b.f32(init), "racc");
      b.for_(
        tid,
        srcShape[srcShape.length - 1] as number,
        wg,
        (j) => {
          em.scoped(() => acc.set(combine(b, kind, acc, em.arg(arg, [...lc, j]) as Val<"f32">)));
        },
        "j",
      );
      const total = workgroupReduce(b, kind, acc, wg, useSg ? sg : undefined, scratch, tid);
      em.setOuter(i, [...lc, b.u32(0)], total);
    }
    b.for_(
      tid,
      cols,
      wg,
      (j) => {
        em.scoped(() => {
          // Size-1 axes are literal 0 so a bare reduction result hits the cached row value.
          const c: Coords = em.broadcastTo([...rc, j], oshape, oshape);
          storeAccess(b, out, output, c, em.at(region.result, c));
        });
      },
      "c",
    );
  });
  return { kernel: k, grid: grid2d(rows, caps), ...(useSg ? { subgroupSize: sg } : {}) };
}

/**
 * Threads a row workgroup may take: 256, or 1024 when the rows leave most compute units idle (a decode step's
 * RMSNorm is one row of 2048 on 132 SMs) and 32-wide subgroups keep the partials to fold at 32 or fewer. Each
 * thread then walks 2 columns of the row instead of 8 (its loads are a serial latency chain, decision 0807). On
 * serial-thread caps (CPU) 1: one thread reduces the row in registers (`serialRowReduce`, decision 2481).
 */
export function rowWorkgroupLimit(rows: number, caps: SynthCaps): number {
  if (caps.serialThreads === true) return 1;
  const few = caps.computeUnits !== undefined && rows < caps.computeUnits;
  return few && (caps.subgroupSize ?? 1) >= 32 ? 1024 : 256;
}

/** Ops that move elements between positions: past one, an output row no longer names the same reduction row. */
const LAYOUT_OPS = new Set([
  "Reshape",
  "Transpose",
  "Slice",
  "Concat",
  "Pad",
  "Gather",
  "DynamicSlice",
  "DynamicUpdateSlice",
]);

/** Whether every node that (transitively) reads reduce node `r` keeps element positions (elementwise or broadcast). */
function rowAligned(region: Region, r: number): boolean {
  const reads = new Set([r]);
  for (let k = r + 1; k < region.nodes.length; k++) {
    const n = region.nodes[k] as RegionNode;
    if (!n.args.some((a) => "node" in a && reads.has(a.node))) continue;
    if (LAYOUT_OPS.has(n.op)) return false;
    reads.add(k);
  }
  return true;
}

/**
 * Packed decode: out (f32, dense) = decode(table) for DecodePacked, or decode(table[ids]) rows for PackedRowGather.
 * Buffers: table (u32 words), ids (row gather only), out. One thread per output element.
 */
export function packedDecode(
  name: string,
  table: Access,
  ids: Access | undefined,
  output: Access,
  caps: SynthCaps,
): SynthKernel {
  if (!isPacked(table.dtype))
    throw new KernelgenError("bad_dtype", "the table must be packed", { synth: "packedDecode", param: "table" });
  const f: PackedFormat = table.dtype.packed;
  const last = table.shape[table.shape.length - 1] ?? 0;
  // Rows of part of a block would make the decode read across rows: refuse them as graph-ir does.
  if (last % f.blockSize !== 0)
    throw new KernelgenError(
      "bad_shape",
      `packed table [${table.shape.join(", ")}]: rows must be whole ${f.name} blocks of ${f.blockSize}`,
      { synth: "packedDecode", param: "table", value: table.shape },
    );
  const total = numel(output.shape);
  const rowElems = numel(table.shape.slice(1));
  const rowsInTable = table.shape[0] as number;
  const wg = pow2Workgroup(total, Math.min(caps.maxWorkgroup, 256));
  const k = kernel(name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const words = b.buffer("table", "u32", "read");
    const idBuf = ids === undefined ? undefined : b.buffer("ids", "i32", "read");
    const out = b.buffer("out", "f32", "write");
    const e = linearThread(b, wg);
    b.if_(e.lt(total), () => {
      let elem: Val<"u32"> = e;
      if (idBuf !== undefined) {
        const r = b.let_(e.div(rowElems), "r");
        const id = b.let_(b.min(b.max(idBuf.at(r), b.i32(0)), b.i32(rowsInTable - 1)).u32(), "id");
        elem = b.let_(id.mul(rowElems).add(e.sub(r.mul(rowElems))), "elem");
      }
      const dec = blockDecoder(b, f, words);
      dec.block(b.let_(elem.div(f.blockSize).mul(f.bytesPerBlock), "base"));
      (out as Arr<"f32">).set(e, dec.element(b.let_(elem.rem(f.blockSize), "bi")));
    });
  });
  return { kernel: k, grid: grid2d(Math.ceil(total / wg), caps) };
}

/**
 * A one-node region applying primitive `op` to the request's inputs (for unfused primitives). Throws `bad_param` when
 * the op needs more operands than the request carries (a literal operand the request does not hold).
 */
export function singleNodeRegion(
  op: string,
  inputs: readonly Access[],
  params: Record<string, unknown>,
  output: Access,
): Region {
  const arity = PLAN_OPS[op]?.arity;
  const need = typeof arity === "number" ? arity : (arity?.min ?? 0);
  if (inputs.length < need) {
    throw new KernelgenError(
      "bad_param",
      `${op} needs ${need} operands but the request has ${inputs.length} inputs (a literal operand is not in the request)`,
      { synth: SYNTH, param: "inputs", value: op },
    );
  }
  return {
    nodes: [
      {
        op,
        args: inputs.map((_, i) => ({ in: i })),
        params: params as never,
        dtype: output.dtype as ScalarDType,
        shape: output.shape,
      },
    ],
    result: 0,
  };
}
