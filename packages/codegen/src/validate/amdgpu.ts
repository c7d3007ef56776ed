// Turns emitted AMDGPU LLVM IR into a code object: `llc` to an ELF relocatable, `ld.lld -shared` to `.hsaco`.
// Success of both steps is the AMDGPU target's validation; the linked code object is returned.

import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { findTool, runProcess, withTempDir, type ValidationResult } from "./result.js";

/** Options of {@link assembleAmdgpu}. */
export interface AmdgpuToolOptions {
  /** GPU, e.g. `gfx90a`, `gfx942`, `gfx1100`. */
  readonly mcpu: string;
  /** Path to llc; default `llc-19`, then `llc`. */
  readonly llc?: string;
  /** Path to ld.lld; default `ld.lld-19`, then `ld.lld`. */
  readonly lld?: string;
}

/** Compiles LLVM IR for amdgcn-amd-amdhsa and links it; `artifact` is the `.hsaco` on success. */
export async function assembleAmdgpu(ir: string, options: AmdgpuToolOptions): Promise<ValidationResult> {
  const llc = options.llc ?? (await findTool(["llc-19", "llc"], ["--version"]));
  const lld = options.lld ?? (await findTool(["ld.lld-19", "ld.lld"], ["--version"]));
  if (llc === undefined || lld === undefined) {
    return { status: "unavailable", tool: "llc+ld.lld", reason: "llc/ld.lld not found (apt install llvm-19 lld-19)" };
  }
  return withTempDir(async (dir) => {
    const src = join(dir, "kernel.ll");
    const obj = join(dir, "kernel.o");
    const out = join(dir, "kernel.hsaco");
    await writeFile(src, ir);
    const c = await runProcess(llc, ["-mtriple=amdgcn-amd-amdhsa", `-mcpu=${options.mcpu}`, "-O2", "-filetype=obj", "-o", obj, src]);
    if (c.spawnError !== undefined) return { status: "unavailable", tool: llc, reason: c.spawnError };
    if (c.code !== 0) return { status: "invalid", tool: llc, message: c.output.trim() };
    const l = await runProcess(lld, ["-shared", "-o", out, obj]);
    if (l.spawnError !== undefined) return { status: "unavailable", tool: lld, reason: l.spawnError };
    if (l.code !== 0) return { status: "invalid", tool: lld, message: l.output.trim() };
    return { status: "ok", tool: `${llc}+${lld}`, artifact: new Uint8Array(await readFile(out)) };
  });
}
