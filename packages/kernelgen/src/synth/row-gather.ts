// The CPU's gather of packed rows of whole u32 words (a movement op, movement.ts): one thread per gathered slice
// copying its words in a loop, as SIMD 16-byte units where the slice allows.

import { kernel } from "@poot/kernel-dsl";
import type { Arr } from "@poot/kernel-dsl";
import { grid2d, numelOf, pow2Workgroup } from "../caps.js";
import type { SynthCaps, SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import { clampIndex, linearThread } from "./index-math.js";
import type { MovementOp } from "./movement.js";

/**
 * A gather of whole u32-word slices (packed rows of whole words) where a workgroup's threads run one after another
 * (the CPU): one thread per gathered slice copies its words in a loop, instead of one thread per word each through
 * the index math (the bind-time Q/K row gather of a GGUF llama: 89 MB per 1B model, decision 1660). Same buffers
 * (`x`, `indices`, `out`), same clamped indices, same bytes.
 */
export function rowGather(
  name: string,
  shape: readonly number[],
  op: Extract<MovementOp, { op: "gather" }>,
  caps: SynthCaps,
): SynthKernel {
  const r = shape.length;
  const ax = op.axis < 0 ? op.axis + r : op.axis;
  if (ax < 0 || ax >= r)
    throw new KernelgenError("bad_shape", `gather axis ${op.axis}`, { synth: "movement", param: "op" });
  const n = numelOf(op.indicesShape);
  const slice = numelOf(shape.slice(ax + 1));
  const rows = numelOf(shape.slice(0, ax)) * n;
  const hi = (shape[ax] as number) - 1;
  const wg = pow2Workgroup(rows, Math.min(caps.maxWorkgroup, 256));
  // Slices of whole 16-byte units (Q8_0 / Q4_K rows of 2048 values: 544 / 288 words) move as vec4<u32> (one SIMD
  // load and store per 16 bytes); other slices a u32 word at a time. Units are then 4 words and offsets count them.
  const unit = caps.simdLoads === true && slice % 4 === 0 ? 4 : 1;
  const units = slice / unit;
  const k = kernel(name, { workgroupSize: [wg, 1, 1] }, (b) => {
    const type = unit === 4 ? "vec4<u32>" : "u32";
    const x = b.buffer("x", type, "read") as Arr<"u32">;
    const indices = b.buffer("indices", "i32", "read");
    const out = b.buffer("out", type, "write") as Arr<"u32">;
    const e = linearThread(b, wg);
    b.if_(e.lt(rows), () => {
      const pre = b.let_(e.div(n), "pre");
      const id = clampIndex(b, indices.at(b.let_(e.rem(n), "which")), hi, "st");
      const src = b.let_(pre.mul((hi + 1) * units).add(id.mul(units)), "src");
      const dst = b.let_(e.mul(units), "dst");
      b.for_(b.u32(0), units, 1, (j) => out.set(dst.add(j), x.at(src.add(j))), "w");
    });
  });
  return { kernel: k, grid: grid2d(Math.ceil(rows / wg), caps) };
}
