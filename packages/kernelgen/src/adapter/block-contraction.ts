// A contraction whose epilogue reads the accumulator at other output elements of a bounded block (RoPE's
// rotate-half partner within a head, head transposes, in-place KV-cache writes), as a cooperative GEMV: one
// workgroup per block of outputs, each output's dot product computed by a group of lanes over K (subgroup or
// shared-memory sum; 16-byte loads when the caps allow), stored in workgroup memory, a barrier, then the epilogue
// per element reading workgroup memory. The block is derived from the epilogue's index expressions
// (block-epilogue.ts) and sized for the caps (block-gemv.ts); this file emits the kernel.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";
import { isPacked, numel } from "@poot/graph-ir";
import type { PackedFormat, ScalarDType } from "@poot/graph-ir";
import type { Access, Region } from "@poot/graph-plan";
import { grid2d } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { blockDecoder } from "../synth/decode.js";
import { simdDot } from "./contraction-cpu.js";
import { packedSplitLoop } from "../synth/dequant.js";
import { laneGroupSum, vecUnroll, vecWordLoop } from "../synth/gemv.js";
import { delinearize, elemForDType, loadAccess, storeAccess } from "./access.js";
import { RegionEmitter, storeWindow } from "./region-emit.js";
import type { Coords } from "./region-emit.js";
import type { BlockGemv } from "./block-gemv.js";
import { blockGemv } from "./block-gemv.js";

const SYNTH = "blockContraction";

/** The buffers one block GEMV reads and writes (an extra aliasing the output is the output's array). */
export interface BlockBuffers {
  readonly x: Arr;
  readonly Ws: readonly Arr[];
  readonly extras: readonly Arr[];
  readonly out: Arr;
}

/** Element type a block GEMV declares buffer `role` with (16-byte words for vector loads). */
export function blockElem(
  g: BlockGemv,
  role: "x" | "w" | "extra" | "out",
  a: Access,
): Parameters<Builder["buffer"]>[1] {
  if (role === "x" && g.vec) return "vec4<f32>";
  if (role === "w" && g.vec) return "vec4<u32>";
  if (role === "w" && g.packed !== undefined) return "u32";
  // simdDot reads packed weights as bytes (decode-unrolled.ts).
  if (role === "w" && g.serial === true && isPacked(a.dtype)) return "u8";
  return elemForDType(a.dtype);
}

/**
 * Emits the block GEMV's two phases for block `blk` (< g.blocks) in a workgroup of `wg` threads: the block's dot
 * products into `accMem` (at least Bk·heads floats; `scratch` holds wg floats when there are no subgroups), a
 * barrier, then the epilogue per element reading workgroup memory. `blk` must be uniform across the workgroup.
 */
export function emitBlockGemv(
  b: Builder,
  g: BlockGemv,
  bufs: BlockBuffers,
  blk: Val<"u32">,
  wg: number,
  accMem: Arr<"f32">,
  scratch: Arr<"f32"> | undefined,
): void {
  const { let_, for_, if_, u32 } = b;
  const { lanes, Bk, total } = g;
  const warps = wg / lanes;
  const passes = Math.ceil(Bk / warps);
  const base = let_(blk.mul(Bk), "base");
  const tid = let_(b.lid.x, "tid");
  const lane = let_(tid.rem(lanes), "lane");
  const warp = let_(tid.div(lanes), "warp");
  const decs = blockDecoders(b, g, bufs.Ws);
  // Phase 1: the block's dot products, a group of lanes per output, `passes` rounds (uniform: group sums need every lane).
  for_(
    u32(0),
    passes,
    1,
    (pass) => {
      const o = let_(pass.mul(warps).add(warp), "o");
      const li = let_(base.add(o), "li");
      const live = let_(o.lt(Bk).and(li.lt(total)), "live");
      const totals = blockDots(b, g, bufs, decs, li, live, tid, lane, scratch);
      if_(live.and(lane.eq(0)), () => totals.forEach((t, h) => accMem.set(o.add(h * Bk), t)));
    },
    "step",
  );
  // One thread per workgroup (serial threads) needs no barrier: it wrote every accumulator it reads.
  if (wg > 1) b.barrier();
  emitBlockEpilogue(b, g, bufs, base, tid, wg, accMem);
}

/** @internal Buffers in0 (A) and in1.. (the B operands). */
export function declareDotBuffers(b: Builder, g: BlockGemv): Pick<BlockBuffers, "x" | "Ws"> {
  const x = b.buffer("in0", blockElem(g, "x", g.inputs[0] as Access), "read");
  return { x, Ws: g.inputs.slice(1, 1 + g.heads).map((B, h) => b.buffer(`in${1 + h}`, blockElem(g, "w", B), "read")) };
}

/** @internal The extras as in<request input index> (one aliasing the output is read through `out`), then out. */
export function declareEpilogueBuffers(b: Builder, g: BlockGemv): Pick<BlockBuffers, "extras" | "out"> {
  const extras = g.inputs.slice(1 + g.heads);
  const aliased = extras.map((a) => a.root === g.output.root);
  const own = extras.map((a, i) =>
    aliased[i] ? undefined : b.buffer(`in${1 + g.heads + i}`, blockElem(g, "extra", a), "read"),
  );
  const out = b.buffer("out", blockElem(g, "out", g.output), aliased.some((v) => v) ? "read_write" : "write");
  return { extras: own.map((v) => v ?? out), out };
}

/** @internal The packed-format decoders of the B operands (none for dense weights). */
export function blockDecoders(b: Builder, g: BlockGemv, Ws: readonly Arr[]): ReturnType<typeof blockDecoder>[] {
  return g.packed === undefined ? [] : Ws.map((W) => blockDecoder(b, g.packed as PackedFormat, W as Arr<"u32">));
}

/**
 * @internal Output `li`'s dot products (one per head), summed over its lane group and rounded to accDtype. Lanes
 * with `live` false compute nothing but still take part in the group sums (call with the whole group).
 */
export function blockDots(
  b: Builder,
  g: BlockGemv,
  bufs: Pick<BlockBuffers, "x" | "Ws">,
  decs: ReturnType<typeof blockDecoder>[],
  li: Val<"u32">,
  live: Val<"bool">,
  tid: Val<"u32">,
  lane: Val<"u32">,
  scratch: Arr<"f32"> | undefined,
): Val<"f32">[] {
  const { let_, var_, for_, if_, f32 } = b;
  const { heads, K, N, lanes, useSg, vec, packed, accDtype, transposeB, wDtype } = g;
  const { x, Ws } = bufs;
  const round = (v: Val<"f32">): Val<"f32"> =>
    accDtype === "f32" ? v : b.unpack(accDtype as "bf16", b.pack(accDtype as "bf16", v));
  const row = let_(li.div(N), "row");
  const n = let_(li.rem(N), "n");
  const accs = Ws.map((_, h) => var_(f32(0), `dot${h}`));
  if_(live, () => {
    if (g.serial === true) {
      const A = g.inputs[0] as Access;
      const aCoords = [...delinearize(b, row, A.shape.slice(0, -1)), b.u32(0)];
      Ws.forEach((W, h) => (accs[h] as Var<"f32">).set(simdDot(b, A, x, g.inputs[1 + h] as Access, W, aCoords, n)));
    } else if (packed !== undefined) {
      packedSplitLoop(b, decs, packed, K, x as Arr<"f32">, n, lane, lanes, [let_(row.mul(K), "xr")], [accs]);
    } else if (vec) {
      const K8 = K / 8;
      vecWordLoop(
        b,
        Ws as Arr<"vec4<u32>">[],
        x as Arr<"vec4<f32>">,
        let_(n.mul(K8), "rw"),
        [let_(row.mul(K / 4), "xr")],
        [accs],
        lane,
        { K8, lanes, unroll: vecUnroll(K8, lanes, heads), fmt: wDtype === "bf16" ? "bf16x2" : "f16x2" },
      );
    } else {
      for_(
        lane,
        K,
        lanes,
        (kk) => {
          const xv = let_((x as Arr<"f32">).at(row.mul(K).add(kk)), "xv");
          Ws.forEach((W, h) => {
            const w = let_((W as Arr<"f32">).at(transposeB ? n.mul(K).add(kk) : kk.mul(N).add(n)), `w${h}`);
            const acc = accs[h] as Var<"f32">;
            acc.set(acc.add(xv.mul(w)));
          });
        },
        "k",
      );
    }
  });
  return accs.map((acc) => round(laneGroupSum(b, acc as Val<"f32">, lanes, useSg, scratch, tid, lane)));
}

/**
 * @internal Phase 2 of a block GEMV: the epilogue per element of the block at `base` (Bk elements), reading the
 * accumulators from `accMem` (head h of output o at o + h·Bk) after the barrier that filled it.
 */
export function emitBlockEpilogue(
  b: Builder,
  g: BlockGemv,
  bufs: Pick<BlockBuffers, "extras" | "out">,
  base: Val<"u32">,
  tid: Val<"u32">,
  wg: number,
  accMem: Arr<"f32">,
): void {
  const { let_, for_, if_, u32 } = b;
  const { heads, Bk, total, accShape, accDtype, epilogue, output } = g;
  const extras = g.inputs.slice(1 + heads);
  const { out } = bufs;
  const accSt = accShape.map((_, d) => numel(accShape.slice(d + 1)));
  const reader = (i: number, c: Coords) => {
    if (i >= heads) return loadAccess(b, bufs.extras[i - heads] as Arr, extras[i - heads] as Access, c);
    let lin: Val<"u32"> = u32(0);
    c.forEach((v, d) => {
      if ((accShape[d] as number) > 1) lin = lin.add((accSt[d] as number) === 1 ? v : v.mul(accSt[d] as number));
    });
    return accMem.at(lin.sub(base).add(i * Bk));
  };
  const shapes = [...g.inputs.slice(1, 1 + heads).map(() => accShape), ...extras.map((a) => a.shape)];
  const dtypes = [
    ...g.inputs.slice(1, 1 + heads).map(() => accDtype),
    ...extras.map((a) => (isPacked(a.dtype) ? "u32" : a.dtype) as ScalarDType),
  ];
  const em = new RegionEmitter(b, epilogue, shapes, reader, SYNTH, dtypes);
  const { space, update } = g.blocking;
  for_(
    tid,
    Bk,
    wg,
    (j) => {
      em.scoped(() => {
        const e = let_(base.add(j), "e");
        if_(e.lt(total), () =>
          em.scoped(() => {
            const c = delinearize(b, e, space);
            if (update === undefined) {
              storeAccess(b, out, output, c, em.at(epilogue.result, c));
              return;
            }
            // Window write; the rest of the (aliased) output already holds the cache.
            storeWindow(em, b, out, output, update, space, c);
          }),
        );
      });
    },
    "j",
  );
}

/**
 * The cooperative block GEMV for a contraction with a neighbour-reading epilogue, or null where it does not apply
 * (see `blockGemv`). Buffers in0 (A), in1.. (the B operands), the extras as in<request input index> (an extra
 * aliasing the output is read through `out`), then out.
 */
export function blockContraction(
  name: string,
  inputs: readonly Access[],
  heads: number,
  epilogue: Region,
  accDtype: ScalarDType,
  transposeB: boolean,
  output: Access,
  caps: SynthCaps,
): SynthKernel | null {
  const g = blockGemv(inputs, heads, epilogue, accDtype, transposeB, output, caps);
  if (g === null) return null;
  const k = kernel(name, { workgroupSize: [g.wg, 1, 1] }, (b) => {
    const { x, Ws } = declareDotBuffers(b, g);
    const { extras, out } = declareEpilogueBuffers(b, g);
    const accMem = b.shared("acc", "f32", g.Bk * heads);
    const scratch = g.useSg || g.lanes === 1 ? undefined : b.shared("scratch", "f32", g.wg);
    const blk = b.let_(b.wid.y.mul(b.nwg.x).add(b.wid.x), "blk");
    b.if_(blk.ge(g.blocks), () => b.return_());
    emitBlockGemv(b, g, { x, Ws, extras, out }, blk, g.wg, accMem, scratch);
  });
  return { kernel: k, grid: grid2d(g.blocks, caps), ...(g.useSg ? { subgroupSize: g.lanes } : {}) };
}
