// The tensor-core GEMM end to end on the PTX path: kernelgen synthesizes it for the cuda caps (graph-plan's
// defaults list mma m16n8k16), `codegenCapsFor` hands PTX the matrix shapes, and every emitted kernel assembles with
// `ptxas` for sm_80 and sm_90; WGSL/SPIR-V/Wasm caps carry no matrix shapes, so codegen refuses it there. The same on
// the AMDGPU path (decision 2401): graph-plan's ROCm caps per GPU give MFMA (gfx90a, gfx942) or WMMA (gfx1100), and
// every emitted GEMM is compiled by llc and linked by ld.lld for each GPU that has the instruction.

import * as fs from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import {
  amdgpuGpusFor,
  assembleAmdgpu,
  CodegenError,
  lowerAmdgpu,
  lowerPtx,
  lowerSpirv,
  validatePtx,
} from "@poot/codegen";
import { defaultTarget, ROCM_ARCHS, type DeviceCaps } from "@poot/graph-plan";
import { synthCapsFrom, synthesizeMmaGemm } from "@poot/kernelgen";
import { bufferIo, runCli } from "@poot/cli";
import { describe, expect, test } from "vitest";
import { codegenCapsFor } from "@poot/executor/lowering";
import { fixture, needFixture } from "@poot/testkit";

const probe = await validatePtx("", { arch: "sm_90" });
const missing = probe.status === "unavailable" ? probe.reason : undefined;
const cuda = defaultTarget("cuda").caps as DeviceCaps;
const synth = synthCapsFrom(cuda);

const shapes: [number, number, number, "f32" | "bf16" | "f16", "bf16" | "f16", "nk" | "kn"][] = [
  [1, 1, 1, "bf16", "bf16", "nk"],
  [17, 33, 20, "f32", "bf16", "nk"],
  [128, 256, 64, "f32", "bf16", "kn"],
  [70, 9, 24, "f16", "f16", "kn"],
];

describe("tensor-core GEMM through PTX", () => {
  for (const [M, N, K, a, w, layout] of shapes) {
    for (const arch of ["sm_80", "sm_90"]) {
      test.skipIf(missing !== undefined)(
        `M=${M} N=${N} K=${K} A ${a} W ${w} ${layout} assembles for ${arch}${missing ? ` (skipped: ${missing})` : ""}`,
        async () => {
          const s = synthesizeMmaGemm({ name: "gemm_mma", M, N, K, aDtype: a, weight: { dtype: w, layout } }, synth);
          const text = lowerPtx(s.kernel, codegenCapsFor("ptx", cuda), { arch }).text!;
          expect(text).toContain(`mma.sync.aligned.m16n8k16.row.col.f32.${w}.${w}.f32`);
          const r = await validatePtx(text, { arch });
          expect(r.status === "invalid" ? r.message : r.status).toBe("ok");
        },
      );
    }
  }

  // A bf16 model (Llama-3.2-1B's config.json, no weights needed): prefill contractions go to the tensor cores.
  const config = fixture("configs/llama-3.2-1b.json");
  const skip = missing ?? needFixture("configs/llama-3.2-1b.json");
  test.skipIf(skip !== undefined)(
    `poot kernels on a bf16 config emits mma.sync for prefill and every kernel passes ptxas${skip ? ` (skipped: ${skip})` : ""}`,
    async () => {
      const out = fs.mkdtempSync(path.join(tmpdir(), "poot-mma-"));
      const io = bufferIo();
      const code = await runCli(
        ["kernels", config, "--target", "ptx", "--out", out, "--mode", "prefill", "--tokens", "16", "--validate"],
        { io },
      );
      const files = fs.readdirSync(out).filter((f) => f.endsWith(".ptx"));
      expect(code, io.stderr()).toBe(0);
      expect(io.stdout()).toContain(`ptx: kernels ${files.length}, passed ${files.length}, failed 0\n`);
      const mma = files.filter((f) =>
        fs.readFileSync(path.join(out, f), "utf8").includes("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
      );
      expect(mma.length).toBeGreaterThan(0);
    },
    180_000,
  );

  test("SPIR-V caps carry no matrix shapes, so the kernel is refused there", () => {
    const s = synthesizeMmaGemm(
      { name: "gemm_mma", M: 17, N: 33, K: 20, weight: { dtype: "bf16", layout: "nk" } },
      synth,
    );
    const vk = defaultTarget("vulkan").caps as DeviceCaps;
    expect(() => lowerSpirv(s.kernel, codegenCapsFor("spirv", vk))).toThrow(CodegenError);
    expect(() => lowerSpirv(s.kernel, codegenCapsFor("spirv", vk))).toThrow(
      expect.objectContaining({ code: "missing-capability" }),
    );
  });
});

const amdProbe = await assembleAmdgpu("", { mcpu: "gfx942" });
const noLlc = amdProbe.status === "unavailable" ? amdProbe.reason : undefined;

describe("tensor-core GEMM through AMDGPU (MFMA on gfx90a/gfx942, WMMA on gfx1100)", () => {
  for (const arch of ["gfx90a", "gfx942", "gfx1100"] as const) {
    const caps = defaultTarget("rocm", ROCM_ARCHS[arch]).caps as DeviceCaps;
    const insn = arch === "gfx1100" ? "llvm.amdgcn.wmma.f32.16x16x16" : "llvm.amdgcn.mfma.f32.16x16x16";
    for (const [M, N, K, a, w, layout] of shapes) {
      test.skipIf(noLlc !== undefined)(
        `${arch}: M=${M} N=${N} K=${K} A ${a} W ${w} ${layout} compiles and links${noLlc ? ` (skipped: ${noLlc})` : ""}`,
        async () => {
          const s = synthesizeMmaGemm(
            { name: "gemm_mma", M, N, K, aDtype: a, weight: { dtype: w, layout } },
            synthCapsFrom(caps),
          );
          expect(s.subgroupSize).toBe(caps.subgroupSize);
          const text = lowerAmdgpu(s.kernel, codegenCapsFor("amdgpu", caps)).text!;
          expect(text).toContain(insn);
          expect(amdgpuGpusFor(text)).toContain(arch);
          const r = await assembleAmdgpu(text, { mcpu: arch });
          expect(r.status === "invalid" ? r.message : r.status).toBe("ok");
        },
      );
    }
  }

  const config = fixture("configs/llama-3.2-1b.json");
  const skip = noLlc ?? needFixture("configs/llama-3.2-1b.json");
  test.skipIf(skip !== undefined)(
    `poot kernels --target amdgpu on a bf16 config emits MFMA for prefill, and every kernel links for its GPUs${skip ? ` (skipped: ${skip})` : ""}`,
    async () => {
      const out = fs.mkdtempSync(path.join(tmpdir(), "poot-mfma-"));
      const io = bufferIo();
      const code = await runCli(
        ["kernels", config, "--target", "amdgpu", "--out", out, "--mode", "prefill", "--tokens", "16", "--validate"],
        { io },
      );
      const files = fs.readdirSync(out).filter((f) => f.endsWith(".ll"));
      expect(code, io.stderr()).toBe(0);
      expect(io.stdout()).toContain(`amdgpu: kernels ${files.length}, passed ${files.length}, failed 0\n`);
      const mfma = files.filter((f) => fs.readFileSync(path.join(out, f), "utf8").includes("@llvm.amdgcn.mfma."));
      expect(mfma.length).toBeGreaterThan(0);
      // An MFMA kernel has code objects for the CDNA GPUs only.
      const stem = mfma[0]!.slice(0, -3);
      expect(fs.existsSync(path.join(out, `${stem}.gfx942.hsaco`))).toBe(true);
      expect(fs.existsSync(path.join(out, `${stem}.gfx1100.hsaco`))).toBe(false);
    },
    300_000,
  );
});
