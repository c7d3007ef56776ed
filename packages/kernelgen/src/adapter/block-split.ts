// A block GEMV in two dispatches, for blocks too few to occupy the device: a RoPE epilogue needs whole heads in
// one workgroup, so Llama-3.2-1B's k projection (8 heads of 64) was 8 workgroups reading 2 MB on 132 SMs. First a
// GEMV computes every output (a warp each, four to a workgroup) into the f32 transient `part`; then one workgroup
// per block copies its accumulators into workgroup memory and runs the epilogue as the one-dispatch kernel does.
// The dot products and their rounding are the block GEMV's own (blockDots), so the results are the same bits.

import { kernel } from "@poot/kernel-dsl";
import type { Access, Region } from "@poot/graph-plan";
import type { ScalarDType } from "@poot/graph-ir";
import { grid2d, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import {
  blockDecoders,
  blockDots,
  declareDotBuffers,
  declareEpilogueBuffers,
  emitBlockEpilogue,
} from "./block-contraction.js";
import { blockGemv, type BlockGemv } from "./block-gemv.js";

/** Outputs (warps) per workgroup of the dot-product dispatch. */
const ROWS = 4;

/** The two dispatches and the f32 elements of the transient between them (heads · outputs). */
export interface SplitBlockGemv {
  readonly dots: SynthKernel;
  readonly epilogue: SynthKernel;
  readonly partElements: number;
}

/**
 * The split form of `blockContraction` where it applies and pays: caps with `splitBlockGemv` and subgroups, and
 * fewer blocks than compute units. Null otherwise (the caller keeps the one-dispatch block GEMV or the inline form).
 * Buffers of `dots`: in0 (A), in1.. (the B operands), part; of `epilogue`: the extras, out, part.
 */
export function splitBlockContraction(
  name: string,
  inputs: readonly Access[],
  heads: number,
  epilogue: Region,
  accDtype: ScalarDType,
  transposeB: boolean,
  output: Access,
  caps: SynthCaps,
): SplitBlockGemv | null {
  if (caps.splitBlockGemv !== true || caps.computeUnits === undefined) return null;
  const g = blockGemv(inputs, heads, epilogue, accDtype, transposeB, output, caps);
  if (g === null || !g.useSg || g.blocks >= caps.computeUnits) return null;
  return {
    dots: dotsKernel(name, g, caps),
    epilogue: epilogueKernel(`${name}_epilogue`, g, caps),
    partElements: g.total * heads,
  };
}

/** Every output's dot products (head h of output li at part[h · total + li]), a warp per output. */
function dotsKernel(name: string, g: BlockGemv, caps: SynthCaps): SynthKernel {
  const k = kernel(name, { workgroupSize: [ROWS * g.lanes, 1, 1] }, (b) => {
    const { let_, if_, wid, nwg, lid } = b;
    const bufs = declareDotBuffers(b, g);
    const part = b.buffer("part", "f32", "write");
    const tid = let_(lid.x, "tid");
    const lane = let_(tid.rem(g.lanes), "lane");
    const li = let_(wid.y.mul(nwg.x).add(wid.x).mul(ROWS).add(tid.div(g.lanes)), "li");
    const live = let_(li.lt(g.total), "live");
    const totals = blockDots(b, g, bufs, blockDecoders(b, g, bufs.Ws), li, live, tid, lane, undefined);
    if_(live.and(lane.eq(0)), () => totals.forEach((t, h) => part.set(li.add(h * g.total), t)));
  });
  return { kernel: k, grid: grid2d(Math.ceil(g.total / ROWS), caps), subgroupSize: g.lanes };
}

/** Per block: its accumulators from `part` into workgroup memory, a barrier, then the block GEMV's epilogue. */
function epilogueKernel(name: string, g: BlockGemv, caps: SynthCaps): SynthKernel {
  const wg = pow2Workgroup(g.Bk, Math.min(256, caps.maxWorkgroup));
  const k = kernel(name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const { let_, for_, if_, wid, nwg, lid, barrier, return_ } = b;
    const bufs = declareEpilogueBuffers(b, g);
    const part = b.buffer("part", "f32", "read");
    const accMem = b.shared("acc", "f32", g.Bk * g.heads);
    const blk = let_(wid.y.mul(nwg.x).add(wid.x), "blk");
    if_(blk.ge(g.blocks), () => return_());
    const base = let_(blk.mul(g.Bk), "base");
    const tid = let_(lid.x, "tid");
    for_(
      tid,
      g.Bk,
      wg,
      (o) => {
        const li = let_(base.add(o), "li");
        if_(li.lt(g.total), () => {
          for (let h = 0; h < g.heads; h++) accMem.set(o.add(h * g.Bk), part.at(li.add(h * g.total)));
        });
      },
      "o",
    );
    barrier();
    emitBlockEpilogue(b, g, bufs, base, tid, wg, accMem);
  });
  return { kernel: k, grid: grid2d(g.blocks, caps) };
}
