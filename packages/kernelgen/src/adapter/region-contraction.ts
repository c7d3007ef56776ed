// Contractions computed inline in a region kernel (region-kernels.ts): each accumulator a K-loop evaluated where the
// epilogue reads it (packed weights decoded per element, SIMD dot products on serial CPU threads), for epilogues the
// GEMV/GEMM synthesizers cannot take.

import type { Arr, Builder, Val } from "@poot/kernel-dsl";
import { isPacked } from "@poot/graph-ir";
import type { PackedFormat, ScalarDType } from "@poot/graph-ir";
import type { Access, Region } from "@poot/graph-plan";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { blockDecoder } from "../synth/decode.js";
import { loadAccess } from "./access.js";
import { simdDot, simdDotApplies } from "./contraction-cpu.js";
import type { Coords } from "./region-emit.js";
import { declareBuffers, regionKernel, regionRow, type RegionSource } from "./region-kernels.js";

/** Options of {@link contractionSource}. */
export interface ContractionSourceOptions {
  /** Arrays declared elsewhere (one per input, then out): a horizontal group declares its buffers once for every member. */
  readonly buffers?: (b: Builder, output: Access) => { bufs: Arr[]; out: Arr };
  /** Serial-thread caps with SIMD loads (the CPU backend): dot products through `load4`. */
  readonly cpuSimd?: boolean;
}

/**
 * The region inputs of a contraction computed inline: inputs 0..heads-1 are the accumulators A·B_h (each value a
 * K-loop, rounded to accDtype; packed B decoded per element), then the extra operands. Buffers in0 (A), in1..
 * (the B operands), then the extras, named in<request input index>, unless `options.buffers` supplies them.
 */
export function contractionSource(
  inputs: readonly Access[],
  heads: number,
  accDtype: ScalarDType,
  transposeB: boolean,
  options: ContractionSourceOptions = {},
): RegionSource & { readonly accShape: readonly number[] } {
  const A = inputs[0] as Access;
  const Bs = inputs.slice(1, 1 + heads);
  const extras = inputs.slice(1 + heads);
  const B0 = Bs[0] as Access;
  const K = A.shape[A.shape.length - 1] as number;
  const N = B0.shape[B0.shape.length - (transposeB ? 2 : 1)] as number;
  const aLead = A.shape.slice(0, -1);
  const bBatch = B0.shape.slice(0, -2);
  const accShape =
    aLead.length - 1 >= bBatch.length
      ? [...aLead, N]
      : [...bBatch.slice(0, bBatch.length - (aLead.length - 1)), ...aLead, N];
  const ar = accShape.length;
  return {
    accShape,
    shapes: [...Bs.map(() => accShape), ...extras.map((a) => a.shape)],
    dtypes: [...Bs.map(() => accDtype), ...extras.map((a) => a.dtype as ScalarDType)],
    access: (i) => (i < heads ? undefined : extras[i - heads]),
    declare: (b, output) => {
      // CPU SIMD (serial threads + load4): B operands are read by simdDot, packed ones as bytes — only where this
      // source declares its own buffers (a horizontal group declares packed weights as words for every member).
      const { buffers, cpuSimd = false } = options;
      const simd = Bs.map(
        (B) => cpuSimd && simdDotApplies(A, B, transposeB) && (buffers === undefined || !isPacked(B.dtype)),
      );
      const u8 = (i: number) =>
        i >= 1 && i <= heads && simd[i - 1] && isPacked((Bs[i - 1] as Access).dtype) ? "u8" : undefined;
      const { bufs, out } = buffers === undefined ? declareBuffers(b, inputs, output, u8) : buffers(b, output);
      const decs = Bs.map((B, h) =>
        isPacked(B.dtype) && !simd[h] ? blockDecoder(b, B.dtype.packed, bufs[1 + h] as Arr<"u32">) : undefined,
      );
      const dot = (h: number, c: Coords): Val<"f32"> => {
        const B = Bs[h] as Access;
        const dec = decs[h];
        if (simd[h]) {
          const acc = simdDot(
            b,
            A,
            bufs[0] as Arr,
            B,
            bufs[1 + h] as Arr,
            c.slice(ar - A.shape.length, ar).map((x, d) => ((A.shape[d] as number) === 1 ? b.u32(0) : x)),
            c[ar - 1] as Val<"u32">,
          );
          return b.let_(
            accDtype === "f32" ? acc : b.unpack(accDtype as "bf16", b.pack(accDtype as "bf16", acc)),
            "acc",
          );
        }
        const acc = b.var_(b.f32(0), "dot");
        const n = c[ar - 1] as Val<"u32">;
        b.for_(
          b.u32(0),
          K,
          1,
          (kk) => {
            const ac = [...c.slice(ar - 1 - (A.shape.length - 1), ar - 1), kk].map((x, d) =>
              (A.shape[d] as number) === 1 ? b.u32(0) : x,
            );
            const av = loadAccess(b, bufs[0] as Arr, A, ac) as Val<"f32">;
            let wv: Val<"f32">;
            if (dec !== undefined) {
              // Packed [N, K] rows blocked along K: element (n, k) is element k mod bs of block (n·K + k) / bs.
              const f = (B.dtype as { packed: PackedFormat }).packed;
              const lin = b.let_(n.mul(K).add(kk), "lin");
              dec.block(b.let_(lin.div(f.blockSize).mul(f.bytesPerBlock), "base"));
              wv = dec.element(b.let_(lin.rem(f.blockSize), "bi"));
            } else {
              const bb = c.slice(ar - 2 - bBatch.length, ar - 2);
              const bc = [...bb, ...(transposeB ? [n, kk] : [kk, n])].map((x, d) =>
                (B.shape[d] as number) === 1 ? b.u32(0) : x,
              );
              wv = loadAccess(b, bufs[1 + h] as Arr, B, bc) as Val<"f32">;
            }
            acc.set(acc.add(av.mul(wv)));
          },
          "k",
        );
        return b.let_(accDtype === "f32" ? acc : b.unpack(accDtype as "bf16", b.pack(accDtype as "bf16", acc)), "acc");
      };
      return {
        reader: (i, c) => (i < heads ? dot(i, c) : loadAccess(b, bufs[1 + i] as Arr, extras[i - heads] as Access, c)),
        out,
      };
    },
  };
}

/**
 * A contraction whose epilogue is more than elementwise in the accumulator (several heads sharing A, RoPE and head
 * transposes, KV-cache writes, row reductions such as a fused RMSNorm): the region runs as an elementwise or row
 * kernel over `contractionSource`, so every accumulator it reads is computed where it is needed. Slower than the
 * GEMV/GEMM synthesizers; used only when the epilogue needs it.
 */
export function inlineContraction(
  name: string,
  inputs: readonly Access[],
  heads: number,
  epilogue: Region | null,
  accDtype: ScalarDType,
  transposeB: boolean,
  output: Access,
  caps: SynthCaps,
): SynthKernel {
  const src = contractionSource(inputs, heads, accDtype, transposeB, {
    cpuSimd: caps.serialThreads === true && caps.simdLoads === true,
  });
  const region: Region = epilogue ?? {
    nodes: [{ op: "Cast", args: [{ in: 0 }], params: { to: accDtype } as never, dtype: accDtype, shape: src.accShape }],
    result: 0,
  };
  return region.nodes.some((n) => n.op === "Reduce")
    ? regionRow(name, region, src, output, caps)
    : regionKernel(name, region, src, output, caps);
}
