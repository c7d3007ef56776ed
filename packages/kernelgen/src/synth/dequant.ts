// The dequant GEMV synthesizer: y[b, n] = epilogue(Σ_k x[b, k] · decode(W)[n, k]) for a packed [N, K] weight,
// with the decode generated from the format's descriptor; each lane decodes exactly the weights it multiplies.

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";
import type { PackedFormat } from "@poot/graph-ir";
import { checkCaps, grid2d, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { blockDecoder, checkFormat } from "./decode.js";
import type { BlockDecoder } from "./decode.js";
import { serialDequantLoop } from "./dequant-cpu.js";
import { prepareEpilogue } from "./epilogue.js";
import type { Epilogue, PreparedEpilogue } from "./epilogue.js";
import { laneGroupSum } from "./gemv.js";
import { checkDType, elemOf, storeAs } from "./storage.js";
import type { StorageDType } from "./storage.js";

/** A dequant GEMV: x [batch, K], W packed [N, K] (rows blocked along K, as little-endian u32 words), y [batch, N]. */
export interface DequantGemvRequest {
  readonly name: string;
  readonly K: number;
  readonly N: number;
  readonly format: PackedFormat;
  /** Rows of x (default 1). Up to 8 rows share each decoded weight; more rows run as chunks of 8 (grid z): a dequant GEMM. */
  readonly batch?: number;
  /** Packed weights sharing x (default 1): buffers W, W1, ...; the epilogue reads acc, acc1, ... */
  readonly heads?: number;
  readonly xDtype?: StorageDType;
  readonly outDtype?: StorageDType;
  readonly epilogue?: Epilogue;
}

const SYNTH = "dequantGemv";

/**
 * @internal The K loop of one packed [N, K] row on a GPU (decision 0806): a warp per row, each lane decoding 8
 * consecutive elements of a block per task, so a block's bytes are read by neighbouring lanes together and every
 * lane has work even when the row has fewer blocks than lanes (a 2048-wide Q4_K row has 8). `xRows[j]` is the first
 * element of x row j; `accs[j][h]` accumulate row j with weight h. Needs blockSize % 8 = 0.
 */
export function packedSplitLoop(
  b: Builder,
  decs: readonly BlockDecoder[],
  f: PackedFormat,
  K: number,
  x: Arr<"f32">,
  n: Val<"u32">,
  lane: Val<"u32">,
  lanes: number,
  xRows: readonly Val<"u32">[],
  accs: readonly (readonly Var<"f32">[])[],
): void {
  const { let_, for_ } = b;
  const split = f.blockSize / 8,
    nb = K / f.blockSize;
  for_(
    lane,
    nb * split,
    lanes,
    (t) => {
      const blk = let_(t.div(split), "blk");
      const i0 = let_(t.rem(split).mul(8), "i0");
      for (const dec of decs) dec.block(let_(n.mul(nb).add(blk).mul(f.bytesPerBlock), "base"));
      const k0 = let_(blk.mul(f.blockSize).add(i0), "k0");
      for (let e = 0; e < 8; e++) {
        const ws = decs.map((dec) => let_(dec.element(e === 0 ? i0 : i0.add(e)), "w"));
        accs.forEach((row, j) => {
          const xv = let_(x.at(k0.add(e).add(xRows[j] as Val<"u32">)), "xv");
          row.forEach((acc, h) => acc.set(acc.add(xv.mul(ws[h] as Val<"f32">))));
        });
      }
    },
    "t",
  );
}

/**
 * Generates the kernel. Buffers: x, W (u32 words; block (n, j) at byte (n·K/blockSize + j)·bytesPerBlock), epilogue
 * inputs, y. A lane group per output row strides over the row's blocks; subgroup reduce when the caps have it.
 */
export function synthesizeDequantGemv(req: DequantGemvRequest, caps: SynthCaps): SynthKernel {
  return synthesizeDequantGemvWith(req, caps, prepareEpilogue(SYNTH, req.epilogue, req.outDtype ?? "f32"));
}

/** @internal The same with an already prepared epilogue (graph-plan regions come in this way). */
export function synthesizeDequantGemvWith(req: DequantGemvRequest, caps: SynthCaps, ep: PreparedEpilogue): SynthKernel {
  checkCaps(SYNTH, caps);
  const { K, N, format: f } = req;
  const B = req.batch ?? 1;
  checkFormat(SYNTH, f);
  if (![K, N].every((d) => Number.isInteger(d) && d >= 1) || K % f.blockSize !== 0)
    throw new KernelgenError(
      "bad_shape",
      `K ${K} must be a positive multiple of the ${f.name} block size ${f.blockSize}; N ${N}`,
      { synth: SYNTH, param: "K", value: K },
    );
  if (!Number.isInteger(B) || B < 1)
    throw new KernelgenError("bad_param", `batch ${B} must be a positive integer`, {
      synth: SYNTH,
      param: "batch",
      value: B,
    });
  const chunk = Math.min(B, 8);
  const H = req.heads ?? 1;
  if (!Number.isInteger(H) || H < 1 || H > 4)
    throw new KernelgenError("bad_param", `heads ${H} must be 1..4`, { synth: SYNTH, param: "heads", value: H });
  const xDtype = checkDType(SYNTH, "x", req.xDtype ?? "f32", ["f32", "bf16", "f16"]);
  const outDtype = req.outDtype ?? "f32";
  const nb = K / f.blockSize;
  const sg = caps.subgroupSize;
  // Serial threads (CPU): a thread per output row walks all its blocks (no reduction, no barrier).
  const serial = caps.serialThreads === true;
  // With caps.vectorLoads (the CUDA target) and subgroups, a block is split over lanes taking 8 elements each.
  const split =
    !serial && caps.vectorLoads === true && sg !== undefined && sg > 1 && f.blockSize % 8 === 0 ? f.blockSize / 8 : 1;
  const lanesWant = serial ? 1 : pow2Workgroup(nb * split, 32);
  const useSg = !serial && sg !== undefined && sg > 1 && sg <= caps.maxWorkgroup && lanesWant >= sg;
  const lanes = useSg ? (sg as number) : lanesWant;
  let wg = serial
    ? pow2Workgroup(Math.min(N, 8), caps.maxWorkgroup)
    : Math.max(lanes, pow2Workgroup(Math.min(N * lanes, 128), caps.maxWorkgroup));
  while (!useSg && wg > lanes && wg * 4 > caps.sharedBytes) wg >>= 1;
  if (!useSg && wg * 4 > caps.sharedBytes)
    throw new KernelgenError("exceeds_caps", `needs ${wg * 4} bytes of workgroup memory`, {
      synth: SYNTH,
      param: "caps.sharedBytes",
    });
  const rowsPerWg = wg / lanes;
  const k = kernel(req.name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const { let_, var_, for_, if_, wid, nwg, lid, f32, u32 } = b;
    const x = b.buffer("x", elemOf(xDtype), "read") as Arr<"f32">;
    // CPU kernels read the packed bytes directly (u8 loads); other targets read u32 words.
    const Ws = Array.from({ length: H }, (_, h) => b.buffer(h === 0 ? "W" : `W${h}`, serial ? "u8" : "u32", "read"));
    ep.declare(b);
    const y = b.buffer("y", elemOf(outDtype), "write");
    const scratch = useSg || lanes === 1 ? undefined : b.shared("scratch", "f32", wg);
    const tid = let_(lid.x, "tid");
    const lane = let_(tid.rem(lanes), "lane");
    const n = let_(wid.y.mul(nwg.x).add(wid.x).mul(rowsPerWg).add(tid.div(lanes)), "n");
    const live = let_(n.lt(N), "live");
    const accs = Array.from({ length: chunk }, (_, j) => Ws.map((_, h) => var_(f32(0), `acc${j}_${h}`)));
    // Rows of this chunk; rows past B read row B-1 (in bounds) and store nothing.
    const r0 = let_(b.wid.z.mul(chunk), "r0");
    const xRow = accs.map((_, j) => let_(b.min(r0.add(j), u32(B - 1)).mul(K), `xr${j}`));
    const decs = Ws.map((W) => blockDecoder(b, f, W as Arr<"u32">));
    if (serial) {
      // The block is unrolled; with SIMD loads four weights decode and multiply at once (dequant-cpu.ts).
      if_(live, () =>
        serialDequantLoop(b, { f, Ws: Ws as Arr<"u32">[], decs, x, xRow, accs, n, nb, simd: caps.simdLoads === true }),
      );
    } else if (split > 1) {
      if_(live, () => packedSplitLoop(b, decs, f, K, x, n, lane, lanes, xRow, accs));
    } else
      if_(live, () => {
        for_(
          lane,
          nb,
          lanes,
          (blk) => {
            const base = let_(n.mul(nb).add(blk).mul(f.bytesPerBlock), "base");
            for (const dec of decs) dec.block(base);
            const k0 = let_(blk.mul(f.blockSize), "k0");
            for_(
              u32(0),
              f.blockSize,
              1,
              (i) => {
                const ws = decs.map((dec) => let_(dec.element(i), "w"));
                accs.forEach((row, j) => {
                  const xv = let_(x.at(k0.add(i).add(xRow[j] as Val<"u32">)), "xv");
                  row.forEach((acc, h) => acc.set(acc.add(xv.mul(ws[h] as Val<"f32">))));
                });
              },
              "i",
            );
          },
          "blk",
        );
      });
    accs.forEach((row, j) => {
      const total = row.map((acc) => laneGroupSum(b, acc, lanes, useSg, scratch, tid, lane));
      if_(live.and(lane.eq(0)).and(r0.add(j).lt(B)), () => {
        const idx = let_(r0.add(j).mul(N).add(n), "yi");
        storeAs(b, y, outDtype, idx, ep.apply(b, total, n, idx));
      });
    });
  });
  const [gx, gy] = grid2d(Math.ceil(N / rowsPerWg), caps);
  return { kernel: k, grid: [gx, gy, Math.ceil(B / chunk)], ...(useSg ? { subgroupSize: sg } : {}) };
}
