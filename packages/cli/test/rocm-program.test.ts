// The ROCm device's own path short of the HIP runtime, for the demo model and every fixtures/hf family (decode and
// prefill) on each GPU the backend supports: the program lowered with that GPU's caps (rocmLowering), every kernel's
// code object built for the GPU with llc + ld.lld and picked by its gcnArchName (buildKernelImage), and every launch
// of the program packed from the code object's metadata (packLaunch) — the exact functions RocmDevice.load, bind and
// submit call — checked against the metadata: segment size, each buffer's address and each uniform at its offset,
// the hidden block counts and group sizes, the wavefront size against the caps the program was planned for.
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import {
  buildKernelImage,
  CodeObjectBuilder,
  packLaunch,
  RocmError,
  rocmLowering,
  type RocmKernelImage,
} from "@poot/backend-rocm";
import { lowerProgram } from "@poot/executor/lowering";
import { fixture, needFixture } from "@poot/testkit";
import { describe, expect, test } from "vitest";
import { graphKind, trace } from "../src/commands/compile.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const FAMILIES = [
  ...(needFixture("hf/llama3") === undefined ? ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"] : []),
  "granite",
  "smollm3",
  "phi4",
  "gptoss",
  "deepseek2",
];
const BF16_CONFIG = "configs/llama-3.2-1b.json";
const MODELS: [string, string][] = [
  ["demo", path.join(ROOT, "models/demo")],
  ...FAMILIES.map((f): [string, string] => [f, fixture("hf", f)]),
  // bf16 weights: its prefill GEMMs go to MFMA (gfx90a, gfx942) or WMMA (gfx1100).
  ...(needFixture(BF16_CONFIG) === undefined ? [["llama1b", fixture(BF16_CONFIG)] as [string, string]] : []),
];
const GPUS = ["gfx90a", "gfx942:sramecc+:xnack-", "gfx1100"] as const;

let builder: CodeObjectBuilder | undefined;
let noTools: string | undefined;
try {
  builder = new CodeObjectBuilder();
  builder.tools();
} catch (e) {
  noTools = (e as Error).message;
}

describe.skipIf(noTools !== undefined)(
  `ROCm programs without a GPU: lowered, built and packed per launch${noTools ? ` (skipped: ${noTools})` : ""}`,
  () => {
    for (const gpu of GPUS) {
      test(`${gpu}: every launch of ${MODELS.map((m) => m[0]).join(", ")} (decode, prefill) packs by its code object's metadata`, () => {
        const target = rocmLowering(gpu);
        const t0 = performance.now();
        const images = new Map<string, RocmKernelImage>();
        let launches = 0,
          matrix = 0;
        for (const [model, dir] of MODELS)
          for (const mode of ["decode", "prefill"] as const) {
            const tokens = mode === "decode" ? "1" : model === "llama1b" ? "16" : "8";
            const g = trace(dir, graphKind({ mode, batch: "1", context: "256", tokens }));
            // One program name for all: a kernel the models share has the same IR and is built once.
            const p = lowerProgram(g, target, { name: "program" });
            // As createRocmExecutor does: the program's kernels in one llvm-link + llc + ld.lld run.
            builder!.prebuild(
              p.kernels.map((k) => k.code.text!),
              gpu.split(":")[0]!,
            );
            const imgs = p.kernels.map((k) => {
              const key = k.code.text!;
              let img = images.get(key);
              if (img === undefined) {
                img = buildKernelImage(k, gpu, builder!);
                images.set(key, img);
                if (/@llvm\.amdgcn\.(mfma|wmma)\./.test(key)) matrix++;
                // The code object's wave size is the one the kernel was planned for where lanes matter.
                if (/"target-features"="\+wavefrontsize/.test(key))
                  expect(img.meta.wavefrontSize, k.name).toBe(target.plan.subgroupSize);
                expect(img.meta.groupSegmentFixedSize, k.name).toBeLessThanOrEqual(target.plan.sharedBytes);
                expect(img.meta.maxFlatWorkgroupSize, k.name).toBe(img.block[0] * img.block[1] * img.block[2]);
              }
              return img;
            });
            for (const l of p.launches) {
              const img = imgs[l.kernel]!;
              // Distinct, recognizable addresses per buffer id.
              const addr = (id: number): bigint => 0x7f00_0000_0000n + BigInt(id + 64) * 0x10_0000n;
              const buffers = Object.fromEntries(Object.entries(l.args).map(([n, a]) => [n, addr(a.buffer)]));
              const packed = packLaunch(img, buffers, l.uniforms, l.grid);
              const v = new DataView(packed.bytes.buffer);
              const where = `${model} ${mode} ${img.kernel.name}`;
              expect(packed.bytes.length, where).toBe(img.meta.kernargSegmentSize);
              const explicit = img.meta.args.filter((a) => !a.valueKind.startsWith("hidden_"));
              expect(packed.offsets, where).toEqual(explicit.map((a) => a.offset));
              img.buffers.forEach((b, i) =>
                expect(v.getBigUint64(explicit[i]!.offset, true), `${where} ${b}`).toBe(buffers[b]),
              );
              img.signature.uniforms.forEach((u, i) => {
                const at = explicit[img.buffers.length + i]!.offset;
                const got =
                  u.type === "f32"
                    ? v.getFloat32(at, true)
                    : u.type === "i32"
                      ? v.getInt32(at, true)
                      : v.getUint32(at, true);
                expect(got, `${where} ${u.name}`).toBe(
                  u.type === "f32" ? Math.fround(l.uniforms[u.name]!) : l.uniforms[u.name],
                );
              });
              for (const a of img.meta.args) {
                const axis = "xyz".indexOf(a.valueKind.slice(-1));
                if (a.valueKind.startsWith("hidden_block_count_"))
                  expect(v.getUint32(a.offset, true)).toBe(l.grid[axis]);
                if (a.valueKind.startsWith("hidden_group_size_"))
                  expect(v.getUint16(a.offset, true)).toBe(img.block[axis]);
              }
              launches++;
            }
          }
        expect(launches).toBeGreaterThan(0);
        if (needFixture(BF16_CONFIG) === undefined) expect(matrix).toBeGreaterThan(0);
        console.log(
          `${gpu}: ${images.size} distinct kernels built (${matrix} MFMA/WMMA), ${launches} launches packed, in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
        );
      }, 900_000);
    }

    test("planted: a gfx942 program's MFMA kernel on a gfx1100 GPU is no_code_object naming both; a missing buffer fails packing", () => {
      const g = trace(fixture(BF16_CONFIG), graphKind({ mode: "prefill", batch: "1", context: "256", tokens: "16" }));
      const p = lowerProgram(g, rocmLowering("gfx942"), { name: "program" });
      const k = p.kernels.find((x) => x.code.text!.includes("@llvm.amdgcn.mfma."))!;
      let err: unknown;
      try {
        buildKernelImage(k, "gfx1100", builder!);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(RocmError);
      expect((err as RocmError).code).toBe("no_code_object");
      expect((err as RocmError).message).toBe(
        "no code object for this GPU (gfx1100); code objects exist for gfx90a, gfx942",
      );
      const l = p.launches[0]!;
      const img = buildKernelImage(p.kernels[l.kernel]!, "gfx942", builder!);
      const [drop] = Object.keys(l.args);
      const buffers = Object.fromEntries(
        Object.keys(l.args)
          .filter((n) => n !== drop)
          .map((n) => [n, 0n]),
      );
      expect(() => packLaunch(img, buffers, l.uniforms, l.grid)).toThrow(`no buffer bound for ${drop}`);
      expect(() => rocmLowering("gfx1030")).toThrow(
        "no code objects are planned for this GPU (gfx1030); the ROCm backend supports gfx1100, gfx90a, gfx942",
      );
    }, 300_000);
  },
);

test("the tools' absence is a typed error naming every place tried", () => {
  const saved = process.env["PATH"];
  process.env["PATH"] = "";
  try {
    const b = new CodeObjectBuilder({ rocmPath: "/nonexistent/rocm" });
    expect(() => b.tools()).toThrow(
      /no llc to build AMDGPU code objects \(tried \/nonexistent\/rocm\/llvm\/bin\/llc, /,
    );
  } finally {
    process.env["PATH"] = saved;
  }
});
