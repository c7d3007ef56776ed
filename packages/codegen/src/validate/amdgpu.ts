// Turns emitted AMDGPU LLVM IR into a code object: `llc` to an ELF relocatable, `ld.lld -shared` to `.hsaco`.
// Success of both steps is the AMDGPU target's validation; the linked code object is returned.

import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { findTool, runProcess, withTempDir, type ValidationResult } from "./result.js";

/**
 * The GPUs an AMDGPU module is assembled for: gfx90a and gfx942 when it issues MFMA (CDNA only), gfx1100 when it
 * issues WMMA (RDNA3 only), all three otherwise (decision 2401).
 */
export function amdgpuGpusFor(ir: string): readonly string[] {
  if (ir.includes("@llvm.amdgcn.mfma.")) return ["gfx90a", "gfx942"];
  if (ir.includes("@llvm.amdgcn.wmma.")) return ["gfx1100"];
  return ["gfx90a", "gfx942", "gfx1100"];
}

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
    const c = await runProcess(llc, [
      "-mtriple=amdgcn-amd-amdhsa",
      `-mcpu=${options.mcpu}`,
      "-O2",
      "-filetype=obj",
      "-o",
      obj,
      src,
    ]);
    if (c.spawnError !== undefined) return { status: "unavailable", tool: llc, reason: c.spawnError };
    if (c.code !== 0) return { status: "invalid", tool: llc, message: c.output.trim() };
    const l = await runProcess(lld, ["-shared", "-o", out, obj]);
    if (l.spawnError !== undefined) return { status: "unavailable", tool: lld, reason: l.spawnError };
    if (l.code !== 0) return { status: "invalid", tool: lld, message: l.output.trim() };
    return { status: "ok", tool: `${llc}+${lld}`, artifact: new Uint8Array(await readFile(out)) };
  });
}

/** Options of {@link assembleAmdgpuMany}. */
export interface AmdgpuBatchOptions extends AmdgpuToolOptions {
  /** Path to llvm-link; default `llvm-link-19`, then `llvm-link`. */
  readonly llvmLink?: string;
  /** Most kernels linked into one module (default 48). */
  readonly batch?: number;
}

/** The kernels a module defines with external linkage (`define amdgpu_kernel void @name(`). */
function kernelNames(ir: string): string[] {
  return [...ir.matchAll(/^define\s+amdgpu_kernel\s+void\s+@([\w.$]+)\s*\(/gm)].map((m) => m[1] as string);
}

/**
 * Validates many kernels' IR for one GPU in few tool runs: modules are linked in batches with `llvm-link`, each
 * batch compiled by one `llc` and linked by one `ld.lld`. A batch that fails is retried module by module with
 * {@link assembleAmdgpu}, so every failure names its own module and carries its own diagnostic. Results are in
 * input order; an "ok" from a batch carries no per-module artifact (use {@link assembleAmdgpu} for the `.hsaco`).
 */
export async function assembleAmdgpuMany(
  irs: readonly string[],
  options: AmdgpuBatchOptions,
): Promise<ValidationResult[]> {
  const link = options.llvmLink ?? (await findTool(["llvm-link-19", "llvm-link"], ["--version"]));
  const llc = options.llc ?? (await findTool(["llc-19", "llc"], ["--version"]));
  const lld = options.lld ?? (await findTool(["ld.lld-19", "ld.lld"], ["--version"]));
  const one = (ir: string): Promise<ValidationResult> =>
    assembleAmdgpu(ir, { mcpu: options.mcpu, ...(llc ? { llc } : {}), ...(lld ? { lld } : {}) });
  if (link === undefined || llc === undefined || lld === undefined) return Promise.all(irs.map(one));
  // Batches never hold two modules that define the same kernel name (llvm-link would refuse the pair).
  const batches: number[][] = [];
  let names = new Set<string>();
  for (let i = 0; i < irs.length; i++) {
    const own = kernelNames(irs[i] as string);
    const last = batches[batches.length - 1];
    if (last === undefined || last.length >= (options.batch ?? 48) || own.some((n) => names.has(n))) {
      batches.push([i]);
      names = new Set(own);
    } else {
      last.push(i);
      own.forEach((n) => names.add(n));
    }
  }
  const out = new Array<ValidationResult>(irs.length);
  for (const b of batches) {
    const ok = await withTempDir(async (dir) => {
      const srcs = await Promise.all(
        b.map(async (i, j) => {
          const f = join(dir, `m${j}.ll`);
          await writeFile(f, irs[i] as string);
          return f;
        }),
      );
      const linked = join(dir, "all.bc");
      const obj = join(dir, "all.o");
      const steps: [string, string[]][] = [
        [link, ["-o", linked, ...srcs]],
        [llc, ["-mtriple=amdgcn-amd-amdhsa", `-mcpu=${options.mcpu}`, "-O2", "-filetype=obj", "-o", obj, linked]],
        [lld, ["-shared", "-o", join(dir, "all.hsaco"), obj]],
      ];
      for (const [tool, args] of steps) {
        const r = await runProcess(tool, args);
        if (r.code !== 0) return false;
      }
      return true;
    });
    if (ok) for (const i of b) out[i] = { status: "ok", tool: `${link}+${llc}+${lld}` };
    else for (const i of b) out[i] = await one(irs[i] as string);
  }
  return out;
}
