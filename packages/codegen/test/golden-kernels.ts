// The kernels of the golden tests (an axpy and a bf16 widening, two small kernels every target lowers) and the
// SPIR-V disassembly they are pinned through.

import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kernel } from "@poot/kernel-dsl";

/** y[i] = a·x[i] + y[i] for i < n. */
export const axpy = kernel("axpy", { workgroupSize: [64, 1, 1] }, ({ buffer, uniform, gid, let_, if_ }) => {
  const x = buffer("x", "f32", "read");
  const y = buffer("y", "f32", "read_write");
  const n = uniform("n", "u32");
  const a = uniform("a", "f32");
  const i = let_(gid.x, "i");
  if_(i.lt(n), () => y.set(i, x.at(i).mul(a).add(y.at(i))));
});

/** out[i] = bf16(in[i]) widened to f32 (no bounds check: the grid covers the buffer exactly). */
export const widen = kernel("bf16_widen", { workgroupSize: [32, 1, 1] }, ({ buffer, gid, let_ }) => {
  const src = buffer("src", "bf16", "read");
  const out = buffer("out", "f32", "write");
  const i = let_(gid.x, "i");
  out.set(i, src.at(i));
});

export let spirvDis: boolean;
try {
  execFileSync("spirv-dis", ["--version"]);
  spirvDis = true;
} catch {
  spirvDis = false;
}
export function disassemble(binary: Uint8Array): string {
  const f = join(mkdtempSync(join(tmpdir(), "poot-golden-")), "k.spv");
  writeFileSync(f, binary);
  return execFileSync("spirv-dis", ["--raw-id", "--no-header", f]).toString();
}
export const hex = (b: Uint8Array): string =>
  Buffer.from(b)
    .toString("hex")
    .replace(/(.{64})/g, "$1\n");
