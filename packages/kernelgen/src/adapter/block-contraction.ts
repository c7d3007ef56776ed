// A contraction whose epilogue reads the accumulator at other output elements of a bounded block (RoPE's
// rotate-half partner within a head, head transposes, in-place KV-cache writes), as a cooperative GEMV: one
// workgroup per block of outputs, each output's dot product computed by a group of lanes over K (subgroup or
// shared-memory sum; 16-byte loads when the caps allow), stored in workgroup memory, a barrier, then the epilogue
// per element reading workgroup memory. The block is derived from the epilogue's index expressions.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";
import { isPacked, numel } from "@poot/graph-ir";
import type { PackedFormat, ScalarDType } from "@poot/graph-ir";
import type { Access, Region, RegionArg, RegionNode } from "@poot/graph-plan";
import { grid2d, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { blockDecoder } from "../synth/decode.js";
import { simdDot, simdDotApplies } from "./contraction-cpu.js";
import { packedSplitLoop } from "../synth/dequant.js";
import { laneGroupSum, vecUnroll, vecWordLoop } from "../synth/gemv.js";
import { delinearize, elemForDType, isDense, loadAccess, storeAccess } from "./access.js";
import { RegionEmitter } from "./region-emit.js";
import type { Coords } from "./region-emit.js";

const SYNTH = "blockContraction";

/** Region ops evaluated at the same coordinates in every operand (operands of the node's shape keep positions). */
const POINTWISE = new Set([
  "Add",
  "Sub",
  "Mul",
  "Div",
  "Max",
  "Min",
  "Pow",
  "And",
  "Or",
  "Xor",
  "Shl",
  "Shr",
  "Eq",
  "Ne",
  "Lt",
  "Le",
  "Gt",
  "Ge",
  "Neg",
  "Exp",
  "Log",
  "Sqrt",
  "Recip",
  "Tanh",
  "Erf",
  "Sin",
  "Cos",
  "Abs",
  "Not",
  "Select",
  "Cast",
]);

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
const lcm = (a: number, b: number): number => (a / gcd(a, b)) * b;

/** How the epilogue maps onto the accumulator: the iteration space and the block granule. */
export interface EpilogueBlocking {
  /** Shape iterated per output element (the output, or the update window of an in-place cache write). */
  readonly space: readonly number[];
  /** The in-place DynamicUpdateSlice result node, when the region writes only a window of the output. */
  readonly update?: RegionNode;
  /**
   * Element i of `space` (row-major) reads the accumulators only at linear indices of the same aligned run of
   * `granule` elements as i (e.g. a head of D for RoPE, 1 for a pure layout change).
   */
  readonly granule: number;
}

/**
 * Derives the blocking of a contraction epilogue from its index expressions: every node on a path from an
 * accumulator to the result must keep the row-major element order (reshapes, transposes that permute only size-1
 * axes, pointwise ops over operands of their own shape, an in-place update window) or read within an aligned run
 * (RoPE: its last axis). Null when the reads are not bounded that way (slices, gathers, concats, reductions,
 * broadcasts of the accumulator): the caller keeps the inline form.
 */
export function epilogueBlocking(
  region: Region,
  heads: number,
  accShape: readonly number[],
  extras: readonly Access[],
  output: Access,
): EpilogueBlocking | null {
  const nodes = region.nodes;
  const dep = nodes.map(() => false);
  const argDep = (a: RegionArg): boolean => ("in" in a ? a.in < heads : "node" in a ? (dep[a.node] as boolean) : false);
  nodes.forEach((n, i) => {
    dep[i] = n.args.some(argDep);
  });
  const shapeOf = (a: RegionArg): readonly number[] =>
    "in" in a
      ? a.in < heads
        ? accShape
        : ((extras[a.in - heads] as Access | undefined)?.shape ?? [])
      : "node" in a
        ? (nodes[a.node] as RegionNode).shape
        : [];
  const same = (x: readonly number[], y: readonly number[]) => x.length === y.length && x.every((d, i) => d === y[i]);
  const walk = (a: RegionArg): number | null => {
    if (!("node" in a) || !argDep(a)) return 1;
    const n = nodes[a.node] as RegionNode;
    const args = n.args as readonly RegionArg[];
    switch (n.op) {
      case "Reshape":
        return walk(args[0] as RegionArg);
      case "Transpose": {
        const inShape = shapeOf(args[0] as RegionArg);
        const kept = (n.params as { perm: number[] }).perm.filter((s) => (inShape[s] as number) > 1);
        return kept.every((s, i) => i === 0 || s > (kept[i - 1] as number)) ? walk(args[0] as RegionArg) : null;
      }
      case "Rope": {
        if (
          (n.params as { style?: string }).style !== "half" ||
          args.slice(1).some(argDep) ||
          !same(shapeOf(args[0] as RegionArg), n.shape)
        )
          return null;
        const g = walk(args[0] as RegionArg);
        return g === null ? null : lcm(g, n.shape[n.shape.length - 1] as number);
      }
      default: {
        if (!POINTWISE.has(n.op)) return null;
        let g = 1;
        for (const x of args) {
          if (!argDep(x)) continue;
          if (!same(shapeOf(x), n.shape)) return null;
          const gx = walk(x);
          if (gx === null) return null;
          g = lcm(g, gx);
        }
        return g;
      }
    }
  };
  const total = numel(accShape);
  const res = nodes[region.result] as RegionNode;
  const x = res.args[0] as RegionArg | undefined;
  const target = x !== undefined && "in" in x && x.in >= heads ? extras[x.in - heads] : undefined;
  const inPlace =
    res.op === "DynamicUpdateSlice" &&
    target !== undefined &&
    target.root === output.root &&
    target.offset === output.offset &&
    target.strides.every((s, d) => s === output.strides[d]);
  if (inPlace) {
    const upd = res.args[1] as RegionArg;
    if (res.args.some((a, i) => i !== 1 && argDep(a)) || numel(shapeOf(upd)) !== total) return null;
    const g = walk(upd);
    return g === null ? null : { space: shapeOf(upd), update: res, granule: g };
  }
  if (numel(res.shape) !== total || !same(res.shape, output.shape)) return null;
  const g = walk({ node: region.result });
  return g === null ? null : { space: output.shape, granule: g };
}

/** The sizes of one cooperative block GEMV (members of a horizontal group share the workgroup size). */
export interface BlockGemv {
  /** A, the B operands, then the epilogue's extras. */
  readonly inputs: readonly Access[];
  /** B operands sharing A. */
  readonly heads: number;
  readonly epilogue: Region;
  readonly accDtype: ScalarDType;
  readonly transposeB: boolean;
  readonly output: Access;
  readonly xDtype: ScalarDType;
  readonly wDtype: ScalarDType;
  /** Contraction depth and output columns. */
  readonly K: number;
  readonly N: number;
  /** [...rows, N] and its element count. */
  readonly accShape: readonly number[];
  readonly total: number;
  readonly blocking: EpilogueBlocking;
  /** Lanes per output's dot product (a subgroup when `useSg`). */
  readonly lanes: number;
  readonly useSg: boolean;
  /** Outputs per block. */
  readonly Bk: number;
  /** Its own workgroup size. */
  readonly wg: number;
  readonly blocks: number;
  /** 16-byte weight loads. */
  readonly vec: boolean;
  /** The B operands' packed format when they are read packed (lanes split each block, decision 0806). */
  readonly packed?: PackedFormat;
  /** Serial threads with SIMD loads (the CPU): one thread per output, each dot product a load4 loop (`simdDot`). */
  readonly serial?: boolean;
}

/** Outputs per block on serial threads (one thread each): about one head of RoPE, several blocks per thread to claim. */
const SERIAL_BLOCK = 64;

/**
 * The packed format every B shares when this kernel can read them packed (CUDA caps, f32 A, blocks of a multiple
 * of 8 elements), undefined when B is dense, null when B is packed in a way it cannot serve.
 */
function packedWeights(Bs: readonly Access[], A: Access, caps: SynthCaps): PackedFormat | undefined | null {
  const B = Bs[0] as Access;
  if (!isPacked(B.dtype)) return Bs.some((x) => isPacked(x.dtype)) ? null : undefined;
  const f = B.dtype.packed;
  const same = Bs.every((x) => isPacked(x.dtype) && x.dtype.packed.name === f.name);
  return same &&
    caps.vectorLoads === true &&
    caps.subgroupSize !== undefined &&
    A.dtype === "f32" &&
    f.blockSize % 8 === 0
    ? f
    : null;
}

/**
 * The sizes of the block GEMV for a contraction with a neighbour-reading epilogue, or null where it does not apply
 * (more than 8 rows of A, packed operands off the CUDA caps, strided operands, unbounded epilogue reads, a block that
 * does not fit workgroup memory). `workgroup` fixes the workgroup size (a member of a group): the block then holds about one output per
 * lane group of it.
 */
export function blockGemv(
  inputs: readonly Access[],
  heads: number,
  epilogue: Region,
  accDtype: ScalarDType,
  transposeB: boolean,
  output: Access,
  caps: SynthCaps,
  workgroup?: number,
): BlockGemv | null {
  const A = inputs[0] as Access;
  const Bs = inputs.slice(1, 1 + heads);
  const extras = inputs.slice(1 + heads);
  const B = Bs[0] as Access;
  // Serial threads (the CPU): only where every dot product is a SIMD load4 loop (packed B read as bytes).
  const serial = caps.serialThreads === true;
  if (
    serial &&
    (workgroup !== undefined ||
      caps.simdLoads !== true ||
      isPacked(A.dtype) ||
      !Bs.every((x) => simdDotApplies(A, x, transposeB)))
  )
    return null;
  if (epilogue.nodes.some((n) => n.op === "Reduce")) return null;
  if (B.shape.length !== 2 || ![A, ...Bs].every(isDense) || isPacked(A.dtype)) return null;
  // Packed weights ([N, K] rows of blocks) on the CUDA caps: lanes split each block, 8 elements a lane (decision 0806).
  const packed = serial ? undefined : packedWeights(Bs, A, caps);
  if (packed === null) return null;
  const wDtype = B.dtype as ScalarDType;
  const xDtype = A.dtype as ScalarDType;
  if (
    !serial &&
    packed === undefined &&
    (Bs.some((b) => b.dtype !== wDtype) || ![wDtype, xDtype].every((d) => d === "f32" || d === "bf16" || d === "f16"))
  )
    return null;
  const K = A.shape[A.shape.length - 1] as number;
  const nk = transposeB || packed !== undefined || isPacked(B.dtype);
  const N = B.shape[nk ? 0 : 1] as number;
  if (B.shape[nk ? 1 : 0] !== K || (packed !== undefined && K % packed.blockSize !== 0)) return null;
  const accShape = [...A.shape.slice(0, -1), N];
  const total = numel(accShape);
  // A GEMV (at most 8 rows of A): each output re-reads its weight row, so many rows belong to a tiled GEMM.
  if (total / N > 8) return null;
  const blocking = epilogueBlocking(epilogue, heads, accShape, extras, output);
  if (blocking === null || total % blocking.granule !== 0) return null;

  // Lanes per output as in the plain GEMV (one on serial threads); outputs per block: a multiple of the granule,
  // about 256 threads' worth (serial: SERIAL_BLOCK outputs, so a phase has several blocks per thread to claim).
  const sg = caps.subgroupSize;
  const lanesWant = serial ? 1 : pow2Workgroup(K, 32);
  const useSg = !serial && sg !== undefined && sg > 1 && sg <= caps.maxWorkgroup && lanesWant >= sg;
  const lanes = useSg ? (sg as number) : lanesWant;
  const g = blocking.granule;
  const perWg = Math.max(
    1,
    Math.floor((workgroup ?? Math.min(serial ? SERIAL_BLOCK : 256, caps.maxWorkgroup)) / lanes),
  );
  const Bk = Math.min(total, g * Math.ceil(perWg / g));
  // Serial threads: one thread per block computes its dot products, then its epilogue — no barrier, so the Wasm
  // target keeps every value in registers (a barrier puts each name in a memory frame).
  let wg = serial ? 1 : (workgroup ?? Math.max(lanes, pow2Workgroup(Bk * lanes, Math.min(caps.maxWorkgroup, 1024))));
  while (workgroup === undefined && wg > lanes && blockSharedBytes(Bk * heads, useSg, wg) > caps.sharedBytes) wg >>= 1;
  if (wg > caps.maxWorkgroup || blockSharedBytes(Bk * heads, useSg, wg) > caps.sharedBytes) return null;
  const vec =
    useSg &&
    caps.vectorLoads === true &&
    transposeB &&
    xDtype === "f32" &&
    (wDtype === "bf16" || wDtype === "f16") &&
    K % (8 * lanes) === 0;
  return {
    inputs,
    heads,
    epilogue,
    accDtype,
    transposeB,
    output,
    xDtype,
    wDtype,
    K,
    N,
    accShape,
    total,
    blocking,
    lanes,
    useSg,
    Bk,
    wg,
    blocks: Math.ceil(total / Bk),
    vec,
    ...(packed !== undefined ? { packed } : {}),
    ...(serial ? { serial } : {}),
  };
}

/** Workgroup memory of a block GEMV: the block's accumulators, and a lane-sum scratch without subgroups. */
export function blockSharedBytes(accs: number, useSg: boolean, wg: number): number {
  return (accs + (useSg ? 0 : wg)) * 4;
}

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
            // Window write: out[start + c] = update[c]; the rest of the (aliased) output already holds the cache.
            const starts = c.map((_, d) => {
              const v = em.arg(update.args[d + 2] as RegionArg, []) as Val<"i32">;
              return let_(
                b.min(b.max(v, b.i32(0)), b.i32(Math.max(0, (output.shape[d] as number) - (space[d] as number)))).u32(),
                "start",
              );
            });
            storeAccess(
              b,
              out,
              output,
              c.map((v, d) => v.add(starts[d] as Val<"u32">)),
              em.arg(update.args[1] as RegionArg, c),
            );
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
