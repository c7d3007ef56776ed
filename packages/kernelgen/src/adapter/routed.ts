// Gate-routed IndexedMatMul (routed experts from graph-plan): one thread per output element finds its token's
// chosen experts (non-zero gates, ascending), computes their dot products, the per-slot epilogue and the slot sum.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";
import { isPacked, numel } from "@poot/graph-ir";
import type { PackedFormat, ScalarDType } from "@poot/graph-ir";
import { PLAN_OPS } from "@poot/graph-plan";
import type { Access, ExpertRouting, Region, RegionNode } from "@poot/graph-plan";
import { grid2d, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { blockDecoder } from "../synth/decode.js";
import type { BlockDecoder } from "../synth/decode.js";
import type { ExprType } from "../synth/expr.js";
import { linearThread } from "../synth/index-math.js";
import { delinearize, elemForDType, loadAccess, storeAccess } from "./access.js";
import { RegionEmitter } from "./region-emit.js";
import type { Coords } from "./region-emit.js";

const SYNTH = "routedIndexedMatMul";

/** The params of a gate-routed IndexedMatMul request (graph-plan's IndexedMatMulParams with routing). */
export interface RoutedParams {
  /** Dtype each dot product is rounded to before the epilogue reads it. */
  readonly accDtype: ScalarDType;
  /** Weights sharing x (gate and up); default 1. */
  readonly heads?: number;
  /** Per-slot epilogue over (accumulators, the slot's gate weight, ...extra); null: the accumulator. */
  readonly epilogue: Region | null;
  /** Slots, how they combine, and the post region. */
  readonly routing: ExpertRouting;
}

/** A region the kernel evaluates at the thread's own element: only elementwise nodes (operands broadcast). */
function requirePointwise(r: Region | null, what: string): void {
  for (const n of r?.nodes ?? []) {
    if (PLAN_OPS[n.op]?.category !== "elementwise")
      throw new KernelgenError(
        "bad_param",
        `the ${what} region of a routed IndexedMatMul may hold only elementwise ops, found ${n.op}`,
        { synth: SYNTH, param: what, value: n.op },
      );
  }
}

function roundTo(b: Builder, d: ScalarDType, v: Val<"f32">): Val<"f32"> {
  return d === "f16" || d === "bf16" ? b.unpack(d, b.pack(d, v)) : v;
}

/**
 * Kernel for IndexedMatMul(x [T, K] | [T, S, K], w_0..w_{h-1} [E, N, K] (float or packed), gates [T, E], ...extra)
 * with gate routing. Buffers in0 (x), in1..in<h> (weights), in<h+1> (gates), the extras, out; one thread per element.
 */
export function routedIndexedMatMul(
  name: string,
  inputs: readonly Access[],
  p: RoutedParams,
  output: Access,
  caps: SynthCaps,
): SynthKernel {
  const h = p.heads ?? 1;
  const x = inputs[0] as Access,
    ws = inputs.slice(1, 1 + h),
    gates = inputs[1 + h] as Access,
    extras = inputs.slice(2 + h);
  if (x === undefined || ws.length !== h || gates === undefined)
    throw new KernelgenError("bad_param", `a routed IndexedMatMul needs x, ${h} weight(s) and the gates`, {
      synth: SYNTH,
      param: "inputs",
    });
  const { slots: S, combine, post } = p.routing;
  requirePointwise(p.epilogue, "epilogue");
  requirePointwise(post, "post");
  const [T, E] = gates.shape as [number, number];
  const [, N, K] = (ws[0] as Access).shape as [number, number, number];
  const perSlot = x.shape.length === 3;
  for (const w of ws)
    if (isPacked(w.dtype) && w.offset !== 0)
      throw new KernelgenError("bad_shape", "packed expert weights must start at offset 0", {
        synth: SYNTH,
        param: "w",
      });
  const slotShape = [T, S, N];
  const epiDtype: ScalarDType =
    p.epilogue === null ? p.accDtype : (p.epilogue.nodes[p.epilogue.result] as RegionNode).dtype;
  const total = Math.max(1, numel(output.shape));
  const wg = pow2Workgroup(total, Math.min(caps.maxWorkgroup, 256));
  const k = kernel(name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const bufs = inputs.map((a, i) => b.buffer(`in${i}`, elemForDType(a.dtype), "read"));
    const out = b.buffer("out", elemForDType(output.dtype), "write");
    const decs: (BlockDecoder | undefined)[] = ws.map((w, i) =>
      isPacked(w.dtype) ? blockDecoder(b, w.dtype.packed, bufs[1 + i] as Arr<"u32">) : undefined,
    );
    // The slot being evaluated: its expert, gate weight and (for per-slot x) its slot coordinate.
    let cur: { ex: Val<"u32">; gw: Val<"f32">; s: Val<"u32"> } | undefined;
    const dot = (i: number, c: Coords): Val<"f32"> => {
      const slot = cur as { ex: Val<"u32">; gw: Val<"f32">; s: Val<"u32"> };
      const w = ws[i] as Access,
        dec = decs[i];
      const acc = b.var_(b.f32(0), "dot");
      const t = c[0] as Val<"u32">,
        n = c[2] as Val<"u32">;
      b.for_(
        b.u32(0),
        K,
        1,
        (kk) => {
          const xv = loadAccess(b, bufs[0] as Arr, x, perSlot ? [t, slot.s, kk] : [t, kk]) as Val<"f32">;
          let wv: Val<"f32">;
          if (dec !== undefined) {
            // Packed [E, N, K] rows blocked along K: element (e, n, k) is element lin mod bs of block lin / bs.
            const f = (w.dtype as { packed: PackedFormat }).packed;
            const lin = b.let_(slot.ex.mul(N).add(n).mul(K).add(kk), "lin");
            dec.block(b.let_(lin.div(f.blockSize).mul(f.bytesPerBlock), "base"));
            wv = dec.element(b.let_(lin.rem(f.blockSize), "bi"));
          } else wv = loadAccess(b, bufs[1 + i] as Arr, w, [slot.ex, n, kk]) as Val<"f32">;
          acc.set(acc.add(xv.mul(wv)));
        },
        "k",
      );
      return b.let_(roundTo(b, p.accDtype, acc), "acc");
    };
    const em =
      p.epilogue === null
        ? undefined
        : new RegionEmitter(
            b,
            p.epilogue,
            [...ws.map(() => slotShape), [T, S, 1], ...extras.map((a) => a.shape)],
            (i, c) => {
              if (i < h) return dot(i, c);
              if (i === h) return (cur as { gw: Val<"f32"> }).gw;
              return loadAccess(b, bufs[1 + i] as Arr, extras[i - h - 1] as Access, c);
            },
            SYNTH,
            [...ws.map(() => p.accDtype), gates.dtype as ScalarDType, ...extras.map((a) => a.dtype as ScalarDType)],
          );
    const slotValue = (c: Coords): Val<ExprType> =>
      em === undefined ? dot(0, c) : em.scoped(() => em.at((p.epilogue as Region).result, c));
    const thread = linearThread(b, wg);
    b.if_(thread.lt(total), () => {
      const c = delinearize(b, thread, output.shape);
      const t = c[0] as Val<"u32">;
      // Slot j of a token is its j-th non-zero gate in ascending expert order (NaN counts: !(g == 0)).
      const want = combine === "slots" ? [c[1] as Val<"u32">] : Array.from({ length: S }, (_, j) => b.u32(j));
      const ex = want.map(() => b.var_(b.u32(E), "ex"));
      const gw = want.map(() => b.var_(b.f32(0), "gw"));
      const cnt = b.var_(b.u32(0), "cnt");
      b.for_(
        b.u32(0),
        E,
        1,
        (e) => {
          const g = b.let_(loadAccess(b, bufs[1 + h] as Arr, gates, [t, e]) as Val<"f32">, "g");
          b.if_(g.eq(0).not(), () => {
            want.forEach((j, q) =>
              b.if_(cnt.eq(j), () => {
                (ex[q] as Var<"u32">).set(e);
                (gw[q] as Var<"f32">).set(g);
              }),
            );
            cnt.set(cnt.add(1));
          });
        },
        "e",
      );
      if (combine === "slots") {
        const v = b.var_(b.f32(0), "v");
        b.if_((ex[0] as Val<"u32">).lt(E), () => {
          cur = { ex: ex[0] as Val<"u32">, gw: gw[0] as Val<"f32">, s: c[1] as Val<"u32"> };
          v.set(slotValue(c) as Val<"f32">);
        });
        storeAccess(b, out, output, c, v);
        return;
      }
      // Filled slots summed in ascending expert order, like the dense sum (empty ones add nothing).
      const n = c[1] as Val<"u32">;
      const sum = b.var_(b.f32(0), "sum");
      want.forEach((j, q) => {
        b.if_((ex[q] as Val<"u32">).lt(E), () => {
          cur = { ex: ex[q] as Val<"u32">, gw: gw[q] as Val<"f32">, s: j };
          sum.set(sum.add(slotValue([t, j, n]) as Val<"f32">));
        });
      });
      const total0 = b.let_(roundTo(b, epiDtype, sum), "moe");
      if (post === null) {
        storeAccess(b, out, output, c, total0);
        return;
      }
      const pe = new RegionEmitter(
        b,
        post,
        [[T, N], ...extras.map((a) => a.shape)],
        (i, cc) => (i === 0 ? total0 : loadAccess(b, bufs[1 + h + i] as Arr, extras[i - 1] as Access, cc)),
        SYNTH,
        [epiDtype, ...extras.map((a) => a.dtype as ScalarDType)],
      );
      storeAccess(b, out, output, c, pe.at(post.result, [t, n]));
    });
  });
  return { kernel: k, grid: grid2d(Math.ceil(total / wg), caps) };
}
