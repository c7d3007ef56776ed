// Turns the native kernel library's LLVM IR into a shared object for x86-64 Linux: `opt -O3` (variables to registers,
// loop and SLP optimizations), `llc` to an ELF relocatable, `ld.lld -shared` to the `.so` (stripped, no build id:
// the same IR and tools always give the same bytes).

import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { findTool, runProcess, withTempDir, type ValidationResult } from "./result.js";
import { X86_TRIPLE } from "../x86/target.js";
import { ARM64_TRIPLE } from "../x86/arm64.js";

/** Options of {@link assembleX86}. */
export interface X86ToolOptions {
  /** Path to llc; default `llc-19`, then `llc`. */
  readonly llc?: string;
  /** Path to ld.lld; default `ld.lld-19`, then `ld.lld`. */
  readonly lld?: string;
  /** Path to opt; default `opt-19`, then `opt`. */
  readonly opt?: string;
}

/** The opt arguments of the native library (no fast-math: reassociation and contraction stay off). */
export const X86_OPT_ARGS: readonly string[] = [`-mtriple=${X86_TRIPLE}`, "-O3"];

/** The llc arguments of the native library (no FMA contraction: products and sums round as written, decision 0951). */
export const X86_LLC_ARGS: readonly string[] = [
  `-mtriple=${X86_TRIPLE}`,
  "-mcpu=x86-64",
  "-O3",
  "--relocation-model=pic",
  "--fp-contract=off",
  "-filetype=obj",
];

/** The ld.lld arguments of the native library. */
export const X86_LLD_ARGS: readonly string[] = ["-shared", "--build-id=none", "-z", "noexecstack", "-s"];

/** The opt arguments of the arm64 native library (decision 2310; no fast-math, as x86-64's). */
export const ARM64_OPT_ARGS: readonly string[] = [`-mtriple=${ARM64_TRIPLE}`, "-O3"];

/** The llc arguments of the arm64 native library (baseline ARMv8-A with NEON; no FMA contraction). */
export const ARM64_LLC_ARGS: readonly string[] = [
  `-mtriple=${ARM64_TRIPLE}`,
  "-mcpu=generic",
  "-O3",
  "--relocation-model=pic",
  "--fp-contract=off",
  "-filetype=obj",
];

/** Compiles the library's LLVM IR and links it; `artifact` is the shared object on success. */
export async function assembleX86(ir: string, options: X86ToolOptions = {}): Promise<ValidationResult> {
  return assemble(ir, X86_OPT_ARGS, X86_LLC_ARGS, options);
}

/**
 * Compiles the arm64 library's LLVM IR (`arm64Library`) and links it for aarch64 Linux with the same tools; the object
 * cannot run on an x86-64 machine, so llc and ld.lld accepting it is the check there.
 */
export async function assembleArm64(ir: string, options: X86ToolOptions = {}): Promise<ValidationResult> {
  return assemble(ir, ARM64_OPT_ARGS, ARM64_LLC_ARGS, options);
}

/** How long opt and llc may take over a library module: opt alone took 6 min on the 2-core machine under load. */
const LIBRARY_TOOL_MS = 1_200_000;

async function assemble(
  ir: string,
  optArgs: readonly string[],
  llcArgs: readonly string[],
  options: X86ToolOptions,
): Promise<ValidationResult> {
  const llc = options.llc ?? (await findTool(["llc-19", "llc"], ["--version"]));
  const lld = options.lld ?? (await findTool(["ld.lld-19", "ld.lld"], ["--version"]));
  const opt = options.opt ?? (await findTool(["opt-19", "opt"], ["--version"]));
  if (llc === undefined || lld === undefined || opt === undefined) {
    const reason = "opt/llc/ld.lld not found (apt install llvm-19 lld-19)";
    return { status: "unavailable", tool: "opt+llc+ld.lld", reason };
  }
  return withTempDir(async (dir) => {
    const src = join(dir, "lib.ll");
    const bc = join(dir, "lib.bc");
    const obj = join(dir, "lib.o");
    const out = join(dir, "lib.so");
    await writeFile(src, ir);
    // The native library is one module of every kernel: minutes of opt and llc on a loaded 2-core machine (2430).
    const o = await runProcess(opt, [...optArgs, "-o", bc, src], LIBRARY_TOOL_MS);
    if (o.spawnError !== undefined) return { status: "unavailable", tool: opt, reason: o.spawnError };
    if (o.code !== 0) return { status: "invalid", tool: opt, message: o.output.trim() };
    const c = await runProcess(llc, [...llcArgs, "-o", obj, bc], LIBRARY_TOOL_MS);
    if (c.spawnError !== undefined) return { status: "unavailable", tool: llc, reason: c.spawnError };
    if (c.code !== 0) return { status: "invalid", tool: llc, message: c.output.trim() };
    const l = await runProcess(lld, [...X86_LLD_ARGS, "-o", out, obj]);
    if (l.spawnError !== undefined) return { status: "unavailable", tool: lld, reason: l.spawnError };
    if (l.code !== 0) return { status: "invalid", tool: lld, message: l.output.trim() };
    return { status: "ok", tool: `${opt}+${llc}+${lld}`, artifact: new Uint8Array(await readFile(out)) };
  });
}
