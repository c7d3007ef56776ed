// Runs Khronos `spirv-val` on an emitted SPIR-V binary under a Vulkan target environment.
// The binary is written to a temporary `.spv` file because spirv-val reads files.

import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { findTool, runProcess, withTempDir, type ValidationResult } from "./result.js";

/** Options of {@link validateSpirv}. */
export interface SpirvValOptions {
  /** `--target-env`, default `vulkan1.1`. */
  readonly targetEnv?: string;
  /** Path to spirv-val; default `spirv-val` on PATH. */
  readonly spirvVal?: string;
}

/** Validates a SPIR-V module; invalid modules yield spirv-val's diagnostics. */
export async function validateSpirv(binary: Uint8Array, options: SpirvValOptions = {}): Promise<ValidationResult> {
  const tool = options.spirvVal ?? (await findTool(["spirv-val"], ["--version"]));
  if (tool === undefined)
    return { status: "unavailable", tool: "spirv-val", reason: "spirv-val not found (apt install spirv-tools)" };
  return withTempDir(async (dir) => {
    const file = join(dir, "kernel.spv");
    await writeFile(file, binary);
    const r = await runProcess(tool, ["--target-env", options.targetEnv ?? "vulkan1.1", file]);
    if (r.spawnError !== undefined) return { status: "unavailable", tool, reason: r.spawnError };
    return r.code === 0 ? { status: "ok", tool } : { status: "invalid", tool, message: r.output.trim() };
  });
}
