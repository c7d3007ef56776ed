// The CPU (serial-thread, SIMD-load) dense GEMV for [N, K] weights: one thread per output row reads four weights and
// four x values per `load4` (f16/bf16 widened in-register) into four independent vec4 sums, then the K % 4 tail
// element by element (docs/decisions/0951). Many rows of x (prefill) run as a register-tiled GEMM: grid z takes tiles
// of ROW_TILE rows, each weight vec4 loaded (and widened) once per tile into one vec4 sum per row (decision 2305).

import { kernel } from "@poot/kernel-dsl";
import type { Arr, Builder, Val, Var } from "@poot/kernel-dsl";
import { grid2d, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { sum4x4 } from "./dequant-cpu.js";
import type { PreparedEpilogue } from "./epilogue.js";
import type { GemvRequest } from "./gemv.js";
import { elemOf, storeAs } from "./storage.js";
import type { StorageDType } from "./storage.js";

/**
 * Rows of x per thread and weight row (each head's): one vec4 sum per row and head. Measured on V8's Wasm SIMD
 * (x86-64, 16 vector registers): 8 rows beat 4 and 16 with one weight, and 4 with two (decision 2305).
 */
export const ROW_TILE = 8;

/** Horizontal sum of a row's vec4 sums: four ({@link sum4x4}) or one ((x + y) + (z + w)). */
function sumParts(b: Builder, ps: readonly Val<"vec4<f32>">[]): Val<"f32"> {
  if (ps.length === 4) return sum4x4(b, ps);
  const v = b.let_(ps[0]!, "hsum");
  return v.x.add(v.y).add(v.z.add(v.w));
}

/**
 * Generates the SIMD [N, K] GEMV (a GEMM for `B` above one row tile) for serial-thread caps with `simdLoads`.
 * Buffers: x, W (W1, …), epilogue inputs, y. Grid [N / workgroup, 1, B / tile].
 */
export function gemvNKSimd(
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
  const K16 = K - (K % 16),
    K4 = K - (K % 4);
  const wg = pow2Workgroup(Math.min(N, 8), caps.maxWorkgroup);
  const chunk = Math.min(B, ROW_TILE);
  // Four vec4 sums per row hide the add latency of one row; from four rows on, the rows' sums do, one each.
  const U = chunk >= 4 ? 1 : 4;
  const k = kernel(req.name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const { let_, var_, for_, if_, wid, nwg, lid, f32, u32 } = b;
    const x = b.buffer("x", elemOf(xDtype), "read") as Arr<"f32">;
    const Ws = Array.from(
      { length: H },
      (_, h) => b.buffer(h === 0 ? "W" : `W${h}`, elemOf(wDtype), "read") as Arr<"f32">,
    );
    ep.declare(b);
    const y = b.buffer("y", elemOf(outDtype), "write");
    const n = let_(wid.y.mul(nwg.x).add(wid.x).mul(wg).add(lid.x), "n");
    const live = let_(n.lt(N), "live");
    const zero = (): Val<"vec4<f32>"> => b.vec("vec4<f32>", f32(0), f32(0), f32(0), f32(0));
    const parts = Array.from({ length: chunk }, (_, j) =>
      Ws.map((_, h) => Array.from({ length: U }, (_, q) => var_(zero(), `vacc${j}_${h}_${q}`))),
    );
    const tails = Array.from({ length: chunk }, (_, j) => Ws.map((_, h) => var_(f32(0), `tail${j}_${h}`)));
    // Rows of this tile (constant offsets when one tile holds every row); rows past B read row B - 1 (in bounds)
    // and store nothing.
    const r0 = B === chunk ? u32(0) : let_(b.wid.z.mul(chunk), "r0");
    const xRow = parts.map((_, j) => (B === chunk ? u32(j * K) : let_(b.min(r0.add(j), u32(B - 1)).mul(K), `xr${j}`)));
    if_(live, () => {
      const row = let_(n.mul(K), "row");
      /** Four weights at kk + 4q per head, times x, into sum q. */
      const quad = (kk: Val<"u32">, q: number, to: (j: number, h: number) => Var<"vec4<f32>">): void => {
        const ws = Ws.map((W) => W.at4(row.add(kk).add(4 * q), "vec4<f32>"));
        for (let j = 0; j < chunk; j++) {
          const xv = x.at4(kk.add(xRow[j]!).add(4 * q), "vec4<f32>");
          ws.forEach((w, h) => to(j, h).set(to(j, h).add(xv.mul(w))));
        }
      };
      if (K16 > 0)
        for_(u32(0), K16, 16, (kk) => [0, 1, 2, 3].forEach((q) => quad(kk, q, (j, h) => parts[j]![h]![q % U]!)), "k");
      if (K4 > K16) for_(u32(K16), K4, 4, (kk) => quad(kk, 0, (j, h) => parts[j]![h]![0]!), "k4");
      if (K > K4) {
        for_(
          u32(K4),
          K,
          1,
          (kk) => {
            const ws = Ws.map((W) => W.at(row.add(kk)));
            tails.forEach((rowT, j) => {
              const xv = let_(x.at(kk.add(xRow[j]!)), "xv");
              rowT.forEach((t, h) => t.set(t.add(xv.mul(ws[h] as Val<"f32">))));
            });
          },
          "k1",
        );
      }
    });
    parts.forEach((rowP, j) => {
      const totals = rowP.map((ps, h) => let_(sumParts(b, ps).add(tails[j]![h]!), "acc"));
      if_(B === chunk ? live : live.and(r0.add(j).lt(B)), () => {
        const idx = let_(B === chunk ? n.add(j * N) : r0.add(j).mul(N).add(n), "yi");
        storeAs(b, y, outDtype, idx, ep.apply(b, totals, n, idx));
      });
    });
  });
  const [gx, gy] = grid2d(Math.ceil(N / wg), caps);
  return { kernel: k, grid: [gx, gy, Math.ceil(B / chunk)] };
}
