// Writes every run-test kernel as PTX plus its inputs and the interpreter's outputs into <repo>/.gpu/codegen,
// for tools/ptx-cuda-check.py on a machine with an NVIDIA GPU. Run: pnpm vitest run --config tools/vitest.gpu.config.ts

import { mkdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { test } from "vitest";
import { lowerPtx } from "@poot/codegen";
import { interpret, type KernelBuffer } from "@poot/kernel-dsl";
import { cases, coverageCases, rng } from "../test/cases.js";
import { CUDA_CAPS } from "../test/helpers.js";

const dir = fileURLToPath(new URL("../../../.gpu/codegen", import.meta.url));
const dtype = (a: KernelBuffer): string => a.constructor.name.replace("Array", "").toLowerCase();
test("dump PTX cases for the GPU check", () => {
  mkdirSync(dir, { recursive: true });
  const index: unknown[] = [];
  for (const c of [...cases, ...coverageCases]) {
    const inputs = c.buffers(rng(7));
    const want = c.buffers(rng(7));
    interpret(c.kernel, { grid: c.grid, buffers: want, uniforms: c.uniforms, subgroupSize: 32 });
    const code = lowerPtx(c.kernel, CUDA_CAPS);
    const name = c.kernel.name;
    writeFileSync(`${dir}/${name}.ptx`, code.text!);
    const args = [
      ...c.kernel.buffers.map((b) => {
        const a = inputs[b.name]!;
        writeFileSync(`${dir}/${name}.${b.name}.in`, new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
        const w = want[b.name]!;
        writeFileSync(`${dir}/${name}.${b.name}.want`, new Uint8Array(w.buffer, w.byteOffset, w.byteLength));
        return { kind: "buffer", name: b.name, dtype: dtype(a), output: b.access !== "read" };
      }),
      ...c.kernel.uniforms.map((u) => ({ kind: u.type, name: u.name, value: c.uniforms[u.name] })),
    ];
    const tol = name === "scalar_ops" ? 3e-3 : c.tol === 0 ? 0 : Math.max(c.tol, 1e-5);
    index.push({ name, entry: code.entryPoint, grid: c.grid, block: code.workgroupSize, args, tol });
  }
  writeFileSync(`${dir}/index.json`, JSON.stringify(index, null, 1));
});
