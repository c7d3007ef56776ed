// The AMD mma test setup: caps with the MFMA (wave64) and WMMA (wave32) units, the one-subgroup fragment kernel,
// and llc's assembly of a kernel's LLVM IR for one GPU (TOOLS: whether the ROCm LLVM tools are here).

import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll } from "vitest";
import { assembleAmdgpu, type DeviceCaps } from "@poot/codegen";
import { kernel, MMA_LAYOUTS, mmaOperandTypes, type Kernel, type MmaInput, type MmaShape } from "@poot/kernel-dsl";
import { AMD_CAPS } from "./helpers.js";

const run = promisify(execFile);
/** AMD caps with the MFMA unit (gfx90a/gfx942 style, wave64). */
export const MFMA_CAPS: DeviceCaps = {
  ...AMD_CAPS,
  subgroupSize: 64,
  matrixShapes: [
    { m: 16, n: 16, k: 16, input: "f16", layout: "mfma" },
    { m: 16, n: 16, k: 16, input: "bf16", layout: "mfma" },
  ],
};
/** AMD caps with the WMMA unit (gfx1100 style, wave32). */
export const WMMA_CAPS: DeviceCaps = {
  ...AMD_CAPS,
  subgroupSize: 32,
  matrixShapes: [
    { m: 16, n: 16, k: 16, input: "f16", layout: "wmma" },
    { m: 16, n: 16, k: 16, input: "bf16", layout: "wmma" },
  ],
};

/** One subgroup: each lane's fragments read as words (lane-major), one mma, D written back. */
export function fragmentKernel(shape: MmaShape, input: MmaInput): Kernel {
  const ty = mmaOperandTypes(shape);
  return kernel(
    `mma_${shape}_${input}`,
    { workgroupSize: [MMA_LAYOUTS[shape].lanes, 1, 1] },
    ({ buffer, let_, mma, subgroupLane }) => {
      const a = buffer("a", ty.a, "read");
      const b = buffer("b", ty.b, "read");
      const c = buffer("c", "vec4<f32>", "read");
      const d = buffer("d", "vec4<f32>", "write");
      const lane = let_(subgroupLane, "lane");
      d.set(lane, mma(input, a.at(lane), b.at(lane), c.at(lane), shape));
    },
  );
}

const TMP = mkdtempSync(join(tmpdir(), "poot-mma-amd-"));
afterAll(() => rmSync(TMP, { recursive: true, force: true }));
/** llc's assembly for `mcpu` (to see which instruction was selected), or undefined when llc is missing. */
export async function asm(ir: string, mcpu: string): Promise<string | undefined> {
  const f = join(TMP, `${mcpu}-${Math.random().toString(36).slice(2)}.ll`);
  writeFileSync(f, ir);
  for (const llc of ["llc-19", "llc"]) {
    try {
      const { stdout } = await run(llc, ["-mtriple=amdgcn-amd-amdhsa", `-mcpu=${mcpu}`, "-O2", "-o", "-", f]);
      return stdout;
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT") throw e;
    }
  }
  return undefined;
}
export const TOOLS = (await assembleAmdgpu("", { mcpu: "gfx942" })).status !== "unavailable";
