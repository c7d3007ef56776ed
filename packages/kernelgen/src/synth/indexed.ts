// The segmented IndexedMatMul synthesizer (routed experts): acc[t, s, n] = Σ_k x[t, k] · w[ids[t, s], n, k]. A
// workgroup owns one expert and a block of output columns and serves every (t, s) routed to it (its segment),
// so an expert's weight rows are streamed by one workgroup however many tokens chose it.

import { kernel } from "@poot/kernel-dsl";
import type { Arr } from "@poot/kernel-dsl";
import { checkCaps, grid2d, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { prepareEpilogue } from "./epilogue.js";
import type { Epilogue, PreparedEpilogue } from "./epilogue.js";
import { laneGroupSum } from "./gemv.js";
import { checkDType, elemOf, storeAs } from "./storage.js";
import type { StorageDType } from "./storage.js";

/** x [T, K], w [E, N, K], ids i32 [T, S] (expert of each token slot), out [T, S, N]. */
export interface IndexedMatMulRequest {
  readonly name: string;
  readonly T: number;
  readonly S: number;
  readonly K: number;
  readonly N: number;
  readonly experts: number;
  readonly xDtype?: StorageDType;
  readonly wDtype?: StorageDType;
  readonly outDtype?: StorageDType;
  /** Epilogue over `acc`; `element` inputs are indexed like the output [T, S, N], `col` inputs by n. */
  readonly epilogue?: Epilogue;
}

const SYNTH = "indexedMatMul";

/** Generates the kernel. Buffers: x, w, ids, epilogue inputs, out. Grid: experts × ceil(N / rows per workgroup). */
export function synthesizeIndexedMatMul(req: IndexedMatMulRequest, caps: SynthCaps): SynthKernel {
  return synthesizeIndexedMatMulWith(req, caps, prepareEpilogue(SYNTH, req.epilogue, req.outDtype ?? "f32"));
}

/** @internal The same with an already prepared epilogue (graph-plan regions come in this way). */
export function synthesizeIndexedMatMulWith(
  req: IndexedMatMulRequest,
  caps: SynthCaps,
  ep: PreparedEpilogue,
): SynthKernel {
  checkCaps(SYNTH, caps);
  const { T, S, K, N, experts: E } = req;
  if (![T, S, K, N, E].every((d) => Number.isInteger(d) && d >= 1))
    throw new KernelgenError("bad_shape", "IndexedMatMul dims must be positive integers", {
      synth: SYNTH,
      param: "shape",
    });
  const xDtype = checkDType(SYNTH, "x", req.xDtype ?? "f32", ["f32", "bf16", "f16"]);
  const wDtype = checkDType(SYNTH, "w", req.wDtype ?? "f32", ["f32", "bf16", "f16"]);
  const outDtype = req.outDtype ?? "f32";
  const sg = caps.subgroupSize;
  const lanesWant = pow2Workgroup(K, 32);
  const useSg = sg !== undefined && sg > 1 && sg <= caps.maxWorkgroup && lanesWant >= sg;
  const lanes = useSg ? (sg as number) : lanesWant;
  let wg = Math.max(lanes, pow2Workgroup(Math.min(N * lanes, 128), caps.maxWorkgroup));
  while (!useSg && wg > lanes && wg * 4 > caps.sharedBytes) wg >>= 1;
  if (!useSg && wg * 4 > caps.sharedBytes)
    throw new KernelgenError("exceeds_caps", `needs ${wg * 4} bytes of workgroup memory`, {
      synth: SYNTH,
      param: "caps.sharedBytes",
    });
  const rowsPerWg = wg / lanes;
  const colBlocks = Math.ceil(N / rowsPerWg);
  const k = kernel(req.name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const { let_, var_, for_, if_, wid, nwg, lid, f32, u32, return_ } = b;
    const x = b.buffer("x", elemOf(xDtype), "read") as Arr<"f32">;
    const w = b.buffer("w", elemOf(wDtype), "read") as Arr<"f32">;
    const ids = b.buffer("ids", "i32", "read");
    ep.declare(b);
    const out = b.buffer("out", elemOf(outDtype), "write");
    const scratch = useSg ? undefined : b.shared("scratch", "f32", wg);
    const wgId = let_(wid.y.mul(nwg.x).add(wid.x), "wg");
    if_(wgId.ge(E * colBlocks), () => return_());
    const e = let_(wgId.div(colBlocks), "expert");
    const tid = let_(lid.x, "tid");
    const lane = let_(tid.rem(lanes), "lane");
    const n = let_(wgId.rem(colBlocks).mul(rowsPerWg).add(tid.div(lanes)), "n");
    const live = let_(n.lt(N), "live");
    const wRow = let_(e.mul(N).add(n).mul(K), "w_row");
    // Every thread scans the routing table identically, so the branch below is uniform over the workgroup.
    for_(
      u32(0),
      T * S,
      1,
      (ts) => {
        const id = let_(ids.at(ts), "id");
        if_(id.u32().eq(e).and(id.ge(0)), () => {
          const t = let_(ts.div(S), "t");
          const acc = var_(f32(0), "acc");
          if_(live, () => {
            for_(lane, K, lanes, (kk) => acc.set(acc.add(x.at(t.mul(K).add(kk)).mul(w.at(wRow.add(kk))))), "k");
          });
          const total = laneGroupSum(b, acc, lanes, useSg, scratch, tid, lane);
          if_(live.and(lane.eq(0)), () => {
            const idx = let_(ts.mul(N).add(n), "oi");
            storeAs(b, out, outDtype, idx, ep.apply(b, total, n, idx));
          });
        });
      },
      "ts",
    );
  });
  return { kernel: k, grid: grid2d(E * colBlocks, caps), ...(useSg ? { subgroupSize: sg } : {}) };
}
