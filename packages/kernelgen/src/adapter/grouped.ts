// A horizontal group of contractions sharing A (decision 0402: q/k/v, each with its own epilogue and output) as one
// kernel: workgroups cover the members' outputs one after another and each range runs its member's own kernel body.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import type { ScalarDType } from "@poot/graph-ir";
import type { Access, KernelRequest, Region } from "@poot/graph-plan";
import { grid2d, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { linearThread } from "../synth/index-math.js";
import { elemForDType } from "./access.js";
import { blockElem, emitBlockGemv } from "./block-contraction.js";
import { blockGemv, blockSharedBytes, type BlockGemv } from "./block-gemv.js";
import { contractionSource } from "./region-contraction.js";
import { emitRegionElement } from "./region-kernels.js";
import { regionSpace } from "./region-space.js";

const SYNTH = "groupedContraction";

type Elem = Parameters<Builder["buffer"]>[1];

/** One buffer of the group kernel: named after the request access it binds, declared once per root. */
interface GroupBuffer {
  readonly name: string;
  elem: Elem;
  read: boolean;
  written: boolean;
}

/** Kernel buffers by root: `out` for the group request's output root, else `in<first request input with that root>`. */
class GroupBuffers {
  private readonly byRoot = new Map<number, GroupBuffer>();
  private arrays = new Map<number, Arr>();
  constructor(private readonly req: KernelRequest) {}

  /** Records that `a` is read (or written) as `elem`; false when its root is already declared as another type. */
  use(a: Access, elem: Elem, written: boolean): boolean {
    let g = this.byRoot.get(a.root);
    if (g === undefined) {
      const i = this.req.inputs.findIndex((x) => x.root === a.root);
      const name = a.root === this.req.output.root ? "out" : i >= 0 ? `in${i}` : undefined;
      if (name === undefined)
        throw new KernelgenError("bad_param", `group member access of value ${a.value} is not in the group request`, {
          synth: SYNTH,
          param: "group",
          value: a.value,
        });
      g = { name, elem, read: false, written: false };
      this.byRoot.set(a.root, g);
    }
    if (g.elem !== elem) return false;
    if (written) g.written = true;
    else g.read = true;
    return true;
  }

  /** Declares every buffer (once). */
  declare(b: Builder): void {
    this.arrays = new Map(
      [...this.byRoot].map(([root, g]) => [
        root,
        b.buffer(g.name, g.elem, g.written ? (g.read ? "read_write" : "write") : "read"),
      ]),
    );
  }

  /** The array bound for access `a`. */
  at(a: Access): Arr {
    return this.arrays.get(a.root) as Arr;
  }
}

/** A member's contraction flags (the gate admits one B operand per member). */
function flags(m: KernelRequest): { accDtype: ScalarDType; transposeB: boolean; region: Region } {
  const p = m.params as Record<string, unknown>;
  const accDtype = (p.accDtype ?? "f32") as ScalarDType;
  if ((p.heads ?? 1) !== 1)
    throw new KernelgenError("bad_param", "a group member joins one B operand", {
      synth: SYNTH,
      param: "heads",
      value: p.heads,
    });
  const acc = [...(m.inputs[0] as Access).shape.slice(0, -1), m.output.shape[m.output.shape.length - 1] as number];
  // A member without an epilogue stores its rounded accumulator.
  const region = m.region ?? {
    nodes: [{ op: "Cast", args: [{ in: 0 }], params: { to: accDtype } as never, dtype: accDtype, shape: acc }],
    result: 0,
  };
  return { accDtype, transposeB: p.transposeB === true, region };
}

/** The group as block GEMVs sharing one workgroup size, or null when a member has no block form or they do not fit. */
function blocked(
  req: KernelRequest,
  members: readonly KernelRequest[],
  name: string,
  caps: SynthCaps,
): SynthKernel | null {
  const plan = (workgroup?: number): BlockGemv[] | null => {
    const gs: BlockGemv[] = [];
    for (const m of members) {
      const f = flags(m);
      const g = blockGemv(m.inputs, 1, f.region, f.accDtype, f.transposeB, m.output, caps, workgroup);
      if (g === null) return null;
      gs.push(g);
    }
    return gs;
  };
  const own = plan();
  if (own === null) return null;
  // The widest member's workgroup for all; the others re-block to keep every lane group busy.
  const wg = Math.max(...own.map((g) => g.wg));
  const gs = plan(wg);
  if (gs === null) return null;
  const accs = Math.max(...gs.map((g) => g.Bk));
  const g0 = gs[0] as BlockGemv;
  if (
    gs.some((g) => g.lanes !== g0.lanes || g.useSg !== g0.useSg) ||
    blockSharedBytes(accs, g0.useSg, wg) > caps.sharedBytes
  )
    return null;
  const bufs = new GroupBuffers(req);
  const typed = gs.every((g) =>
    [
      bufs.use(g.inputs[0] as Access, blockElem(g, "x", g.inputs[0] as Access), false),
      bufs.use(g.inputs[1] as Access, blockElem(g, "w", g.inputs[1] as Access), false),
      ...g.inputs.slice(2).map((a) => bufs.use(a, blockElem(g, "extra", a), false)),
      bufs.use(g.output, blockElem(g, "out", g.output), true),
    ].every((ok) => ok),
  );
  // A buffer two members read as different types (16-byte words vs scalars) keeps the inline form.
  if (!typed) return null;
  const starts = gs.map((_, i) => gs.slice(0, i).reduce((a, g) => a + g.blocks, 0));
  const blocks = gs.reduce((a, g) => a + g.blocks, 0);
  const k = kernel(name, { workgroupSize: [wg, 1, 1] }, (b) => {
    bufs.declare(b);
    const accMem = b.shared("acc", "f32", accs);
    const scratch = g0.useSg || g0.lanes === 1 ? undefined : b.shared("scratch", "f32", wg);
    const blk = b.let_(b.wid.y.mul(b.nwg.x).add(b.wid.x), "blk");
    b.if_(blk.ge(blocks), () => b.return_());
    // Each member's range of blocks (uniform across the workgroup, so its barrier is too).
    gs.forEach((g, i) => {
      const s = starts[i] as number;
      b.if_(blk.ge(s).and(blk.lt(s + g.blocks)), () => {
        const io = {
          x: bufs.at(g.inputs[0] as Access),
          Ws: [bufs.at(g.inputs[1] as Access)],
          extras: g.inputs.slice(2).map((a) => bufs.at(a)),
          out: bufs.at(g.output),
        };
        emitBlockGemv(b, g, io, b.let_(blk.sub(s), "mblk"), wg, accMem, scratch);
      });
    });
  });
  return { kernel: k, grid: grid2d(blocks, caps), ...(g0.useSg ? { subgroupSize: g0.lanes } : {}) };
}

/** The group with every accumulator computed inline where its member's epilogue reads it (serial threads, packed weights). */
function inline(req: KernelRequest, members: readonly KernelRequest[], name: string, caps: SynthCaps): SynthKernel {
  const bufs = new GroupBuffers(req);
  const parts = members.map((m) => {
    const f = flags(m);
    const typed = [
      ...m.inputs.map((a) => bufs.use(a, elemForDType(a.dtype), false)),
      bufs.use(m.output, elemForDType(m.output.dtype), true),
    ];
    if (!typed.every((ok) => ok))
      throw new KernelgenError("bad_dtype", "members of one group read a buffer as different types", {
        synth: SYNTH,
        param: "group",
      });
    const src = contractionSource(m.inputs, 1, f.accDtype, f.transposeB, {
      buffers: () => ({ bufs: m.inputs.map((a) => bufs.at(a)), out: bufs.at(m.output) }),
      cpuSimd: caps.serialThreads === true && caps.simdLoads === true,
    });
    return { m, region: f.region, src, it: regionSpace(f.region, src, m.output) };
  });
  const total = parts.reduce((a, p) => a + p.it.total, 0);
  const wg = pow2Workgroup(total, Math.min(caps.maxWorkgroup, 256));
  const k = kernel(name, { workgroupSize: [wg, 1, 1] }, (b) => {
    bufs.declare(b);
    const e = linearThread(b, wg);
    let start = 0;
    for (const p of parts) {
      const s = start;
      b.if_(e.ge(s).and(e.lt(s + p.it.total)), () => {
        const { reader, out } = p.src.declare(b, p.m.output);
        emitRegionElement(b, p.region, p.src, reader, out, p.m.output, p.it, b.let_(e.sub(s), "me") as Val<"u32">);
      });
      start += p.it.total;
    }
  });
  return { kernel: k, grid: grid2d(Math.ceil(total / wg), caps) };
}

/**
 * The kernel of a horizontal group request (`req.group`, decision 0402): block GEMVs over the members' outputs one
 * after another where every member has that form, else one thread per member output element with the
 * accumulators computed inline. Each member applies its own epilogue and writes its own output (in place for KV
 * cache writes). Buffers are named `in<i>` / `out` after the group request's accesses, one per root.
 */
export function groupedContraction(req: KernelRequest, name: string, caps: SynthCaps): SynthKernel {
  const members = req.group ?? [];
  if (members.length < 2)
    throw new KernelgenError("bad_param", "a group request needs at least two members", {
      synth: SYNTH,
      param: "group",
    });
  return blocked(req, members, name, caps) ?? inline(req, members, name, caps);
}
