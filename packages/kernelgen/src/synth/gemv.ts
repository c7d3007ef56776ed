// The GEMV synthesizer: y[b, n] = epilogue(Σ_k x[b, k] · W(k, n)) for B ≤ 8 rows of x, generated for the weight
// layout: [N, K] rows get a lane group per output (subgroup reduce when the caps have it), [K, N] gets columns per lane.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";
import { checkCaps, grid2d, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { prepareEpilogue } from "./epilogue.js";
import { gemvNKSimd } from "./gemv-cpu.js";
import type { Epilogue, PreparedEpilogue } from "./epilogue.js";
import { checkDType, elemOf, storeAs } from "./storage.js";
import type { StorageDType } from "./storage.js";

/** A GEMV: x [batch, K] (f32/bf16/f16), W [N, K] (`nk`, HF linear) or [K, N] (`kn`), out [batch, N]. */
export interface GemvRequest {
  readonly name: string;
  readonly K: number;
  readonly N: number;
  /** Rows of x sharing each weight read (1..8, default 1; any number on the CPU with an [N, K] weight, tiled). */
  readonly batch?: number;
  readonly xDtype?: StorageDType;
  readonly weight: { readonly dtype: StorageDType; readonly layout: "nk" | "kn" };
  /** Weights sharing x (default 1): buffers W, W1, W2, ...; the epilogue reads acc, acc1, acc2, ... (e.g. gate and up). */
  readonly heads?: number;
  readonly outDtype?: StorageDType;
  readonly epilogue?: Epilogue;
}

const SYNTH = "gemv";

/** Sums `v` over aligned groups of `lanes` consecutive threads (subgroup reduce, or a shared tree per group). */
export function laneGroupSum(
  b: Builder,
  v: Val<"f32">,
  lanes: number,
  useSg: boolean,
  scratch: Arr<"f32"> | undefined,
  tid: Val<"u32">,
  lane: Val<"u32">,
): Val<"f32"> {
  const { barrier, if_, let_ } = b;
  if (useSg) return b.subgroupAdd(v);
  if (lanes === 1) return v;
  const sh = scratch as Arr<"f32">;
  sh.set(tid, v);
  barrier();
  for (let s = lanes >> 1; s > 0; s >>= 1) {
    if_(lane.lt(s), () => sh.set(tid, sh.at(tid).add(sh.at(tid.add(s)))));
    barrier();
  }
  const r = let_(sh.at(tid.sub(lane)), "gsum");
  barrier();
  return r;
}

/** True when the CPU's register-tiled SIMD kernel serves an [N, K] weight: serial threads with SIMD loads. */
export function cpuTiledGemv(caps: SynthCaps, layout: "kn" | "nk"): boolean {
  return caps.serialThreads === true && caps.simdLoads === true && layout === "nk";
}

/** Generates the GEMV. Buffers: x, W, epilogue inputs, y. */
export function synthesizeGemv(req: GemvRequest, caps: SynthCaps): SynthKernel {
  return synthesizeGemvWith(req, caps, prepareEpilogue(SYNTH, req.epilogue, req.outDtype ?? "f32"));
}

/** @internal The same with an already prepared epilogue (graph-plan regions come in this way). */
export function synthesizeGemvWith(req: GemvRequest, caps: SynthCaps, ep: PreparedEpilogue): SynthKernel {
  checkCaps(SYNTH, caps);
  const { K, N } = req;
  const B = req.batch ?? 1;
  if (![K, N].every((d) => Number.isInteger(d) && d >= 1))
    throw new KernelgenError("bad_shape", `K ${K}, N ${N}`, { synth: SYNTH, param: "shape" });
  // The CPU's SIMD [N, K] kernel tiles any number of rows (grid z); the others hold every row in registers.
  const maxB = cpuTiledGemv(caps, req.weight.layout) ? Number.MAX_SAFE_INTEGER : 8;
  if (!Number.isInteger(B) || B < 1 || B > maxB)
    throw new KernelgenError("bad_param", `batch ${B} must be 1..${maxB}`, { synth: SYNTH, param: "batch", value: B });
  const xDtype = checkDType(SYNTH, "x", req.xDtype ?? "f32", ["f32", "bf16", "f16"]);
  const wDtype = checkDType(SYNTH, "weight", req.weight.dtype, ["f32", "bf16", "f16"]);
  const outDtype = req.outDtype ?? "f32";
  const H = req.heads ?? 1;
  if (!Number.isInteger(H) || H < 1 || H > 4)
    throw new KernelgenError("bad_param", `heads ${H} must be 1..4`, { synth: SYNTH, param: "heads", value: H });
  if (req.weight.layout === "kn") return gemvKN(req, caps, B, H, xDtype, wDtype, outDtype, ep);
  if (cpuTiledGemv(caps, req.weight.layout)) return gemvNKSimd(req, caps, B, H, xDtype, wDtype, outDtype, ep);
  // [N, K]: a group of `lanes` threads per output row, striding over K (coalesced); rowsPerWg rows per workgroup.
  // Serial threads (CPU): a thread per output row, U independent partial sums (no reduction, no barrier).
  const serial = caps.serialThreads === true;
  const sg = caps.subgroupSize;
  const lanesWant = serial ? 1 : pow2Workgroup(K, 32);
  const useSg = !serial && sg !== undefined && sg > 1 && sg <= caps.maxWorkgroup && lanesWant >= sg;
  const lanes = useSg ? (sg as number) : lanesWant;
  const U = serial && K % 4 === 0 ? 4 : 1;
  let wg = serial
    ? pow2Workgroup(Math.min(N, 8), caps.maxWorkgroup)
    : Math.max(lanes, pow2Workgroup(Math.min(N * lanes, 256), caps.maxWorkgroup));
  while (!useSg && wg > lanes && wg * 4 > caps.sharedBytes) wg >>= 1;
  if (!useSg && wg * 4 > caps.sharedBytes)
    throw new KernelgenError("exceeds_caps", `needs ${wg * 4} bytes of workgroup memory`, {
      synth: SYNTH,
      param: "caps.sharedBytes",
    });
  const rowsPerWg = wg / lanes;
  if (
    useSg &&
    caps.vectorLoads === true &&
    xDtype === "f32" &&
    (wDtype === "bf16" || wDtype === "f16") &&
    K % (8 * lanes) === 0
  ) {
    return gemvNKVec(req, caps, B, H, wDtype, outDtype, ep, lanes, wg);
  }
  const k = kernel(req.name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const { let_, var_, for_, if_, wid, nwg, lid, f32, u32 } = b;
    const x = b.buffer("x", elemOf(xDtype), "read") as Arr<"f32">;
    const Ws = Array.from(
      { length: H },
      (_, h) => b.buffer(h === 0 ? "W" : `W${h}`, elemOf(wDtype), "read") as Arr<"f32">,
    );
    ep.declare(b);
    const y = b.buffer("y", elemOf(outDtype), "write");
    const scratch = useSg || lanes === 1 ? undefined : b.shared("scratch", "f32", wg);
    const tid = let_(lid.x, "tid");
    const lane = let_(tid.rem(lanes), "lane");
    const n = let_(wid.y.mul(nwg.x).add(wid.x).mul(rowsPerWg).add(tid.div(lanes)), "n");
    const live = let_(n.lt(N), "live");
    const parts = Array.from({ length: B }, (_, j) =>
      Ws.map((_, h) => Array.from({ length: U }, (_, q) => var_(f32(0), `acc${j}_${h}_${q}`))),
    );
    // Rows past N still take part in the group reductions (barriers / subgroup ops need every lane).
    if_(live, () => {
      for_(
        lane,
        K,
        lanes * U,
        (kk) => {
          for (let q = 0; q < U; q++) {
            const ws = Ws.map((W) => let_(W.at(n.mul(K).add(kk).add(q)), "w"));
            parts.forEach((row, j) => {
              const xv = let_(x.at(u32(j * K + q).add(kk)), "xv");
              row.forEach((ps, h) => ps[q]!.set(ps[q]!.add(xv.mul(ws[h] as Val<"f32">))));
            });
          }
        },
        "k",
      );
    });
    // The U partial sums combine pairwise: (p0 + p1) + (p2 + p3).
    const accs = parts.map((row) =>
      row.map((ps) => (U === 1 ? ps[0]! : let_(ps[0]!.add(ps[1]!).add(ps[2]!.add(ps[3]!)), "acc"))),
    );
    accs.forEach((row, j) => {
      const totals = row.map((acc) => laneGroupSum(b, acc as Val<"f32">, lanes, useSg, scratch, tid, lane));
      if_(live.and(lane.eq(0)), () => {
        const idx = let_(n.add(j * N), "yi");
        storeAs(b, y, outDtype, idx, ep.apply(b, totals, n, idx));
      });
    });
  });
  return { kernel: k, grid: grid2d(Math.ceil(N / rowsPerWg), caps), ...(useSg ? { subgroupSize: sg } : {}) };
}

/**
 * Words of 16 bytes each lane loads before its arithmetic (8, 4, 2 or 1): as many as K allows while every lane
 * takes the same number of loop trips, at most 8 words (32 registers) over all heads. Enough bytes in flight per SM
 * is what brings a GEMV to the memory bandwidth (decision 0805).
 */
export function vecUnroll(K8: number, lanes: number, heads: number): number {
  for (const u of [8, 4, 2]) if (u * heads <= 8 && K8 % (u * lanes) === 0) return u;
  return 1;
}

/**
 * @internal The K loop of a 16-byte-load GEMV row: lane `lane` takes words lane, lane + lanes, ... of the row
 * (K8 = K / 8 words of 8 bf16/f16), `unroll` words per head per trip all loaded before any fma. `rowWord` is the
 * row's first word in every W; `xs[j]` the first vec4<f32> of x row j; `accs[j][h]` accumulate row j, head h.
 */
export function vecWordLoop(
  b: Builder,
  Ws: readonly Arr<"vec4<u32>">[],
  x: Arr<"vec4<f32>">,
  rowWord: Val<"u32">,
  xs: readonly Val<"u32">[],
  accs: readonly (readonly Var<"f32">[])[],
  lane: Val<"u32">,
  o: { readonly K8: number; readonly lanes: number; readonly unroll: number; readonly fmt: "bf16x2" | "f16x2" },
): void {
  const { let_, for_, unpack, fma } = b;
  for_(
    lane,
    o.K8,
    o.lanes * o.unroll,
    (c0) => {
      const cs = Array.from({ length: o.unroll }, (_, u) => (u === 0 ? c0 : let_(c0.add(u * o.lanes), `c${u}`)));
      // Every weight word of the trip is loaded before any arithmetic (more bytes in flight).
      const ws = cs.map((c, u) => Ws.map((W, h) => let_(W.at(rowWord.add(c)), `w${u}_${h}`)));
      cs.forEach((c, u) => {
        const halves = ws[u]!.map((w, h) =>
          [w.x, w.y, w.z, w.w].map((word, q) => let_(unpack(o.fmt, word), `p${u}_${h}_${q}`)),
        );
        accs.forEach((row, j) => {
          const xi = let_((xs[j] as Val<"u32">).add(c.mul(2)), `xi${u}_${j}`);
          const xa = let_(x.at(xi), `xa${u}_${j}`);
          const xb = let_(x.at(xi.add(1)), `xb${u}_${j}`);
          row.forEach((acc, h) => {
            const [p0, p1, p2, p3] = halves[h]!;
            let a: Val<"f32"> = acc;
            a = fma(p0!.x, xa.x, a);
            a = fma(p0!.y, xa.y, a);
            a = fma(p1!.x, xa.z, a);
            a = fma(p1!.y, xa.w, a);
            a = fma(p2!.x, xb.x, a);
            a = fma(p2!.y, xb.y, a);
            a = fma(p3!.x, xb.z, a);
            a = fma(p3!.y, xb.w, a);
            acc.set(a);
          });
        });
      });
    },
    "c",
  );
}

/**
 * [N, K] bf16/f16 weights read 16 bytes (8 elements) per lane per load, x f32 read as vec4<f32>: a subgroup per
 * output row, up to 8 words per lane in flight ({@link vecUnroll}). Needs `caps.vectorLoads`, subgroups and
 * K % (8 · lanes) = 0.
 */
function gemvNKVec(
  req: GemvRequest,
  caps: SynthCaps,
  B: number,
  H: number,
  wDtype: "bf16" | "f16",
  outDtype: StorageDType,
  ep: PreparedEpilogue,
  lanes: number,
  wg: number,
): SynthKernel {
  const { K, N } = req;
  const K8 = K / 8,
    K4 = K / 4;
  const unroll = vecUnroll(K8, lanes, H);
  // Four rows per workgroup: twice the workgroups of eight, so 2048-row GEMVs spread evenly over 132 SMs.
  const rowsPerWg = Math.max(1, Math.min(wg / lanes, 4));
  const k = kernel(req.name, { workgroupSize: [rowsPerWg * lanes, 1, 1] }, (b) => {
    const { let_, var_, if_, wid, nwg, lid, f32, u32 } = b;
    const x = b.buffer("x", "vec4<f32>", "read");
    const Ws = Array.from({ length: H }, (_, h) => b.buffer(h === 0 ? "W" : `W${h}`, "vec4<u32>", "read"));
    ep.declare(b);
    const y = b.buffer("y", elemOf(outDtype), "write");
    const tid = let_(lid.x, "tid");
    const lane = let_(tid.rem(lanes), "lane");
    const n = let_(wid.y.mul(nwg.x).add(wid.x).mul(rowsPerWg).add(tid.div(lanes)), "n");
    const live = let_(n.lt(N), "live");
    const accs = Array.from({ length: B }, (_, j) => Ws.map((_, h) => var_(f32(0), `acc${j}_${h}`)));
    if_(live, () => {
      vecWordLoop(
        b,
        Ws,
        x,
        let_(n.mul(K8), "rw"),
        accs.map((_, j) => u32(j * K4)),
        accs,
        lane,
        { K8, lanes, unroll, fmt: wDtype === "bf16" ? "bf16x2" : "f16x2" },
      );
    });
    accs.forEach((row, j) => {
      const totals = row.map((acc) => b.subgroupAdd(acc));
      if_(live.and(lane.eq(0)), () => {
        const idx = let_(n.add(j * N), "yi");
        storeAs(b, y, outDtype, idx, ep.apply(b, totals, n, idx));
      });
    });
  });
  return { kernel: k, grid: grid2d(Math.ceil(N / rowsPerWg), caps), subgroupSize: lanes };
}

/** [K, N]: WGX adjacent columns per workgroup (coalesced), WGY threads split K, partials combined in shared memory. */
function gemvKN(
  req: GemvRequest,
  caps: SynthCaps,
  B: number,
  H: number,
  xDtype: StorageDType,
  wDtype: StorageDType,
  outDtype: StorageDType,
  ep: PreparedEpilogue,
): SynthKernel {
  const { K, N } = req;
  const wgx = pow2Workgroup(N, Math.min(64, caps.maxWorkgroup));
  let wgy = pow2Workgroup(Math.ceil(K / 16), Math.max(1, Math.floor(Math.min(256, caps.maxWorkgroup) / wgx)));
  while (wgy > 1 && wgx * wgy * B * H * 4 > caps.sharedBytes) wgy >>= 1;
  if (wgy > 1 && wgx * wgy * B * H * 4 > caps.sharedBytes)
    throw new KernelgenError("exceeds_caps", "not enough workgroup memory", {
      synth: SYNTH,
      param: "caps.sharedBytes",
    });
  const k = kernel(req.name, { workgroupSize: [wgx, wgy, 1] }, (b) => {
    const { let_, var_, for_, if_, wid, nwg, lid, f32, u32, barrier } = b;
    const x = b.buffer("x", elemOf(xDtype), "read") as Arr<"f32">;
    const Ws = Array.from(
      { length: H },
      (_, h) => b.buffer(h === 0 ? "W" : `W${h}`, elemOf(wDtype), "read") as Arr<"f32">,
    );
    ep.declare(b);
    const y = b.buffer("y", elemOf(outDtype), "write");
    const part = wgy > 1 ? b.shared("part", "f32", wgx * wgy * B * H) : undefined;
    const tx = let_(lid.x, "tx");
    const ty = let_(lid.y, "ty");
    const n = let_(wid.y.mul(nwg.x).add(wid.x).mul(wgx).add(tx), "n");
    const accs = Array.from({ length: B }, (_, j) => Ws.map((_, h) => var_(f32(0), `acc${j}_${h}`)));
    if_(n.lt(N), () => {
      for_(
        ty,
        K,
        wgy,
        (kk) => {
          const ws = Ws.map((W) => let_(W.at(kk.mul(N).add(n)), "w"));
          accs.forEach((row, j) => {
            const xv = let_(x.at(u32(j * K).add(kk)), "xv");
            row.forEach((acc, h) => acc.set(acc.add(xv.mul(ws[h] as Val<"f32">))));
          });
        },
        "k",
      );
    });
    // Partial (row j, head h) of thread (tx, ty) lives at ((j·H + h)·wgx + tx)·wgy + ty.
    const slot = (j: number, h: number, i: Val<"u32">) =>
      tx
        .mul(wgy)
        .add(i)
        .add((j * H + h) * wgx * wgy);
    if (part !== undefined) {
      accs.forEach((row, j) => row.forEach((acc, h) => part.set(slot(j, h, ty), acc)));
      barrier();
    }
    if_(ty.eq(0).and(n.lt(N)), () => {
      accs.forEach((row, j) => {
        const totals = row.map((acc, h) => {
          if (part === undefined) return acc as Val<"f32">;
          const s = var_(f32(0), "s");
          for_(u32(0), wgy, 1, (i) => s.set(s.add(part.at(slot(j, h, i)))), "i");
          return s as Val<"f32">;
        });
        const idx = let_(n.add(j * N), "yi");
        storeAs(b, y, outDtype, idx, ep.apply(b, totals, n, idx));
      });
    });
  });
  return { kernel: k, grid: grid2d(Math.ceil(N / wgx), caps) };
}
