// The ROCm executor's argument packing against the code objects' own metadata, for every AMDGPU kernel of the
// demo model and the five HF fixture families (decode and prefill) on gfx90a, gfx942 and gfx1100: @poot/backend-rocm parses the msgpack note,
// `llvm-readobj --notes` (LLVM's own reader) prints the same note as YAML, the two must agree field by field, and
// the packer's offsets must equal the metadata's. A planted shifted offset must make packing fail.
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  expectedLayout,
  packKernargs,
  readCodeObjectMetadata,
  RocmError,
  signatureOf,
  type CodeObjectMetadata,
  type KernelMeta,
} from "@poot/backend-rocm";
import { ROCM_ARCHS } from "@poot/graph-plan";
import { fixture, needFixture } from "@poot/testkit";
import { afterAll, describe, expect, test } from "vitest";
import { parse } from "yaml";
import { graphKind, trace } from "../src/commands/compile.js";
import { compileFor, emitKernels, type EmittedKernel } from "../src/commands/kernels-emit.js";

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const FAMILIES = ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"];
const NO_FIXTURES = needFixture(...FAMILIES.map((f) => `hf/${f}`));
// The fixture families' weights are f32, so none of their contractions goes to the matrix units; Llama-3.2-1B's
// config (bf16 weights, no weights needed to plan) adds the MFMA / WMMA GEMMs of a bf16 prefill of 16 tokens (8 go to
// the GEMVs).
const BF16_CONFIG = "configs/llama-3.2-1b.json";
const MODELS: [string, string][] = [
  ["demo", path.join(ROOT, "models/demo")],
  ...(NO_FIXTURES === undefined ? FAMILIES.map((f): [string, string] => [f, fixture("hf", f)]) : []),
  ...(needFixture(BF16_CONFIG) === undefined ? [["llama1b", fixture(BF16_CONFIG)] as [string, string]] : []),
];
const ARCHS = ["gfx90a", "gfx942", "gfx1100"] as const;
const TMP = fs.mkdtempSync(path.join(tmpdir(), "poot-rocm-kernargs-"));
afterAll(() => fs.rmSync(TMP, { recursive: true, force: true }));

/** The first of `names` that runs with --version (LLVM 19's suffixed names first). */
async function tool(...names: string[]): Promise<string | undefined> {
  for (const n of names) {
    try {
      await run(n, ["--version"]);
      return n;
    } catch {
      // try the next name
    }
  }
  return undefined;
}
const TOOLS = {
  link: await tool("llvm-link-19", "llvm-link"),
  llc: await tool("llc-19", "llc"),
  lld: await tool("ld.lld-19", "ld.lld"),
  readobj: await tool("llvm-readobj-19", "llvm-readobj"),
};
const MISSING = Object.entries(TOOLS)
  .filter(([, v]) => v === undefined)
  .map(([k]) => k);

/**
 * Every distinct AMDGPU kernel of the models in both modes as planned for `arch` (graph-plan's ROCM_ARCHS: wave64 and
 * MFMA on gfx90a/gfx942, wave32 and WMMA on gfx1100), renamed `<model>_<mode>_<name>` so one module holds all.
 */
function allKernels(arch: (typeof ARCHS)[number]): { name: string; k: EmittedKernel; ir: string }[] {
  const out: { name: string; k: EmittedKernel; ir: string }[] = [];
  // The same kernel under another name (another layer, family or mode) adds nothing: one copy is checked.
  const seen = new Set<string>();
  for (const [model, dir] of MODELS)
    for (const mode of ["decode", "prefill"] as const) {
      const g = trace(
        dir,
        graphKind({
          mode,
          batch: "1",
          context: "2048",
          tokens: mode === "decode" ? "1" : model === "llama1b" ? "16" : "8",
        }),
      );
      for (const k of emitKernels(compileFor(g, "amdgpu", mode, dir, ROCM_ARCHS[arch]), "amdgpu", dir)) {
        const name = `${model}_${mode}_${k.code.entryPoint}`;
        const text = k.code.text ?? "";
        const key = text.split(k.code.entryPoint).join("\u0000");
        if (seen.has(key)) continue;
        seen.add(key);
        const ir = text.replace(`@${k.code.entryPoint}(`, `@${name}(`);
        expect(ir).not.toBe(text);
        out.push({ name, k, ir });
      }
    }
  return out;
}

/** One code object per GPU holding every kernel: llvm-link, then llc and ld.lld as codegen's assembler runs them. */
async function codeObject(irs: string[], mcpu: string): Promise<string> {
  const dir = fs.mkdtempSync(path.join(TMP, `${mcpu}-`));
  const srcs = irs.map((ir, i) => {
    const f = path.join(dir, `k${i}.ll`);
    fs.writeFileSync(f, ir);
    return f;
  });
  await run(TOOLS.link as string, ["-o", path.join(dir, "all.bc"), ...srcs]);
  await run(TOOLS.llc as string, [
    "-mtriple=amdgcn-amd-amdhsa",
    `-mcpu=${mcpu}`,
    "-O2",
    "-filetype=obj",
    "-o",
    path.join(dir, "all.o"),
    path.join(dir, "all.bc"),
  ]);
  await run(TOOLS.lld as string, ["-shared", "-o", path.join(dir, "all.hsaco"), path.join(dir, "all.o")]);
  return path.join(dir, "all.hsaco");
}

/** The metadata as llvm-readobj prints it: the YAML document after `AMDGPU Metadata:`, in our field names. */
async function readobjMetadata(file: string): Promise<CodeObjectMetadata> {
  const { stdout } = await run(TOOLS.readobj as string, ["--notes", file], { maxBuffer: 64 << 20 });
  const m = /AMDGPU Metadata: (---\n[\s\S]*?\n\.\.\.)\n/.exec(stdout);
  if (m === null) throw new Error(`llvm-readobj printed no AMDGPU Metadata for ${file}`);
  // LLVM tags some names `!str`; the tag does not change the value.
  const doc = parse((m[1] as string).replace(/!str /g, "")) as Record<string, unknown>;
  const kernels = doc["amdhsa.kernels"] as Record<string, unknown>[];
  return {
    version: doc["amdhsa.version"] as number[],
    target: doc["amdhsa.target"] as string,
    kernels: kernels.map(
      (k): KernelMeta => ({
        name: String(k[".name"]),
        symbol: String(k[".symbol"]),
        kernargSegmentSize: k[".kernarg_segment_size"] as number,
        kernargSegmentAlign: k[".kernarg_segment_align"] as number,
        groupSegmentFixedSize: k[".group_segment_fixed_size"] as number,
        privateSegmentFixedSize: k[".private_segment_fixed_size"] as number,
        wavefrontSize: k[".wavefront_size"] as number,
        maxFlatWorkgroupSize: k[".max_flat_workgroup_size"] as number,
        args: ((k[".args"] ?? []) as Record<string, unknown>[]).map((a) => ({
          offset: a[".offset"] as number,
          size: a[".size"] as number,
          valueKind: a[".value_kind"] as string,
          ...(a[".name"] === undefined ? {} : { name: String(a[".name"]) }),
          ...(a[".address_space"] === undefined ? {} : { addressSpace: a[".address_space"] as string }),
        })),
      }),
    ),
  };
}

const built = new Map<string, { file: string; ours: CodeObjectMetadata }>();
const KERNELS_OF = new Map<string, ReturnType<typeof allKernels>>();

const TITLE = `kernargs of every AMDGPU kernel of ${MODELS.map((m) => m[0]).join(", ")} (decode and prefill)${NO_FIXTURES === undefined ? "" : ` (families skipped: ${NO_FIXTURES})`}`;
describe.skipIf(MISSING.length > 0)(`${TITLE}${MISSING.length ? ` (skipped: no ${MISSING.join(", ")})` : ""}`, () => {
  for (const mcpu of ARCHS) {
    test(`${mcpu}: the parsed metadata equals llvm-readobj's, the packer's offsets equal the metadata's`, async () => {
      const t0 = performance.now();
      const KERNELS = allKernels(mcpu);
      KERNELS_OF.set(mcpu, KERNELS);
      const file = await codeObject(
        KERNELS.map((x) => x.ir),
        mcpu,
      );
      const ours = readCodeObjectMetadata(new Uint8Array(fs.readFileSync(file)));
      built.set(mcpu, { file, ours });
      const theirs = await readobjMetadata(file);
      expect(ours.target).toBe(`amdgcn-amd-amdhsa--${mcpu}`);
      expect(ours).toEqual(theirs);
      expect(ours.kernels.map((k) => k.name).sort()).toEqual(KERNELS.map((x) => x.name).sort());
      let hidden = 0;
      for (const { name, k } of KERNELS) {
        const meta = ours.kernels.find((m) => m.name === name) as KernelMeta;
        const sig = { ...signatureOf(k.code, k.kernel.uniforms), name };
        const [x, y, z] = k.code.workgroupSize;
        const p = packKernargs(
          meta,
          sig,
          {
            buffers: Array.from({ length: sig.buffers }, (_, i) => 0x7f00_0000_0000n + BigInt(i) * 0x1000n),
            uniforms: sig.uniforms.map((u, i) => (u.type === "f32" ? 0.5 + i : i + 1)),
          },
          { grid: [3, 2, 1], block: [x, y, z] },
        );
        const explicit = meta.args.filter((a) => !a.valueKind.startsWith("hidden_"));
        expect(p.offsets, name).toEqual(explicit.map((a) => a.offset));
        expect(p.offsets, name).toEqual(expectedLayout(sig).map((a) => a.offset));
        expect(p.bytes.length, name).toBe(meta.kernargSegmentSize);
        hidden += p.filled.length;
      }
      expect(hidden).toBeGreaterThan(0);
      const matrix = KERNELS.filter((x) =>
        x.ir.includes(mcpu === "gfx1100" ? "@llvm.amdgcn.wmma." : "@llvm.amdgcn.mfma."),
      );
      if (needFixture(BF16_CONFIG) === undefined) expect(matrix.length).toBeGreaterThan(0);
      console.log(
        `${mcpu}: ${KERNELS.length} kernels (${KERNELS.filter((x) => /@llvm\.amdgcn\.(mfma|wmma)\./.test(x.ir)).length} MFMA/WMMA, ${KERNELS.filter((x) => x.name.includes("_decode_")).length} decode, ${KERNELS.filter((x) => x.name.includes("_prefill_")).length} prefill) in one code object, checked in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
    }, 120_000);
  }

  test("planted: a shifted argument offset fails packing; a changed field fails the comparison with llvm-readobj", async () => {
    const b = built.get("gfx942");
    const KERNELS = KERNELS_OF.get("gfx942");
    if (b === undefined || KERNELS === undefined) throw new Error("the gfx942 test did not build its code object");
    const { name, k } = KERNELS.find((x) => x.k.kernel.uniforms.length > 0) as (typeof KERNELS)[number];
    const meta = b.ours.kernels.find((m) => m.name === name) as KernelMeta;
    const i = meta.args.findIndex((a) => a.valueKind === "by_value");
    const shifted: KernelMeta = {
      ...meta,
      args: meta.args.map((a, j) => (j === i ? { ...a, offset: a.offset + 4 } : a)),
    };
    const sig = { ...signatureOf(k.code, k.kernel.uniforms), name };
    const values = { buffers: Array.from({ length: sig.buffers }, () => 0n), uniforms: sig.uniforms.map(() => 0) };
    const [x, y, z] = k.code.workgroupSize;
    let err: unknown;
    try {
      packKernargs(shifted, sig, values, { grid: [1, 1, 1], block: [x, y, z] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RocmError);
    expect((err as RocmError).code).toBe("kernarg_mismatch");
    expect((err as RocmError).message).toContain(
      `kernel ${name}: argument ${i}: the code object has by_value at ${meta.args[i]!.offset + 4}`,
    );
    const theirs = await readobjMetadata(b.file);
    const planted = { ...b.ours, kernels: b.ours.kernels.map((m) => (m.name === name ? shifted : m)) };
    expect(planted).not.toEqual(theirs);
  });
});
