// Validation of kernel files as they lie on disk, with the target's own validator (codegen's runners), a few
// at a time; and the summary `poot kernels --validate` prints.
import { readFile } from "node:fs/promises";
import { validateTargetCode, type TargetName, type TargetValidation, type ValidateOptions } from "@poot/codegen";

/** File extension of each target's kernel files (AMDGPU code objects are `<kernel>.<gpu>.hsaco` beside the `.ll`). */
export const KERNEL_EXT: Readonly<Record<TargetName, string>> = {
  wgsl: "wgsl",
  ptx: "ptx",
  spirv: "spv",
  amdgpu: "ll",
  wasm: "wasm",
  x86: "ll",
};

/** One kernel file's validation: every validator run (per PTX architecture, per AMD GPU, ...). */
export interface KernelCheck {
  /** Kernel name (the file stem). */
  readonly name: string;
  /** Each validator run. */
  readonly runs: readonly TargetValidation[];
}

/** Whether every validator run accepted the kernel ("unavailable" is not a pass). */
export const passed = (c: KernelCheck): boolean => c.runs.length > 0 && c.runs.every((r) => r.result.status === "ok");

/** Runs `work` over `items` with at most `limit` in flight, keeping the input order in the result. */
export async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}

/** Validates the file `path` of kernel `name` as `target` code (binary targets are read as bytes). */
export async function validateKernelFile(
  name: string,
  path: string,
  target: TargetName,
  options: ValidateOptions,
): Promise<KernelCheck> {
  const bytes = new Uint8Array(await readFile(path));
  const code =
    target === "spirv" || target === "wasm"
      ? { target, binary: bytes }
      : { target, text: new TextDecoder().decode(bytes) };
  return { name, runs: await validateTargetCode(code, options) };
}

/** What a failed run says: the validator's message, or why it could not run. */
function why(r: TargetValidation): string {
  const res = r.result;
  return res.status === "invalid"
    ? res.message
    : res.status === "unavailable"
      ? `validator unavailable: ${res.reason}`
      : "ok";
}

/**
 * The report of a validation: one summary line (kernels, passed, failed, and each failing kernel with its first
 * message line), then every failing run's full message.
 */
export function validationReport(target: TargetName, checks: readonly KernelCheck[]): string {
  const failed = checks.filter((c) => !passed(c));
  const brief = failed.map((c) => {
    const bad = c.runs.filter((r) => r.result.status !== "ok");
    return `${c.name} (${bad.map((r) => `${r.label}: ${why(r).split("\n")[0] ?? ""}`).join("; ")})`;
  });
  const lines = [
    `${target}: kernels ${checks.length}, passed ${checks.length - failed.length}, failed ${failed.length}${failed.length > 0 ? `: ${brief.join(", ")}` : ""}`,
  ];
  for (const c of failed) {
    for (const r of c.runs.filter((x) => x.result.status !== "ok"))
      lines.push(`--- ${c.name} (${r.label}, ${r.result.tool})`, why(r));
  }
  return lines.join("\n") + "\n";
}
