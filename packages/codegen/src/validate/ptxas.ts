// Runs NVIDIA's `ptxas` on emitted PTX for one SM architecture (the PTX target's validator).
// ptxas assembles to SASS, so acceptance means the PTX is valid for that ISA version and architecture.

import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { findTool, runProcess, withTempDir, type ValidationResult } from "./result.js";

/** Options of {@link validatePtx}. */
export interface PtxasOptions {
  /** Target architecture, e.g. `sm_90` or `sm_80`. */
  readonly arch: string;
  /** Path to ptxas; by default `ptxas` on PATH, then `/usr/local/cuda/bin/ptxas`. */
  readonly ptxas?: string;
}

/** Assembles `ptx` with `ptxas -arch=<arch>`; invalid PTX yields ptxas's diagnostics. */
export async function validatePtx(ptx: string, options: PtxasOptions): Promise<ValidationResult> {
  const tool = options.ptxas ?? (await findTool(["ptxas", "/usr/local/cuda/bin/ptxas"], ["--version"]));
  if (tool === undefined)
    return { status: "unavailable", tool: "ptxas", reason: "ptxas not found (install the CUDA toolkit)" };
  return withTempDir(async (dir) => {
    const src = join(dir, "kernel.ptx");
    await writeFile(src, ptx);
    const r = await runProcess(tool, [`-arch=${options.arch}`, "-o", join(dir, "kernel.cubin"), src]);
    if (r.spawnError !== undefined) return { status: "unavailable", tool, reason: r.spawnError };
    return r.code === 0 ? { status: "ok", tool } : { status: "invalid", tool, message: r.output.trim() };
  });
}
