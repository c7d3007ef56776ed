// Every backend failure and bad argument through the real `poot` bin: one line on stderr naming what is wrong
// and what to do, exit code 1 (a failed command) or 2 (a usage error), and never a JavaScript stack trace.
// Device loss and out-of-memory cannot be caused on demand: their mapping is checked on the backends' own
// error classes in-process.
import { spawnSync } from "node:child_process";
import { mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CudaError } from "@poot/backend-cuda";
import { RocmError } from "@poot/backend-rocm";
import { VulkanError } from "@poot/backend-vulkan";
import { WgpuError } from "@poot/backend-wgpu";
import { CliError } from "@poot/cli";
import { DeviceError } from "@poot/executor";
import { fixture } from "@poot/testkit";
import { describe, expect, test } from "vitest";
import { backendFailure } from "../src/commands/backends.js";
import { probeBackend } from "../src/commands/backend-probe.js";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(pkgDir, "bin/poot.mjs");
const demo = join(pkgDir, "../../models/demo");

/** Runs the bin; returns the exit code and stderr's lines, minus Dawn's own native log lines (C++ frames). */
function poot(
  args: string[],
  env: Record<string, string> = {},
): { code: number | null; lines: string[]; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], {
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: 120_000,
  });
  return {
    code: r.status,
    stderr: r.stderr,
    lines: r.stderr.split("\n").filter((l) => l.startsWith("poot") || l.startsWith("error")),
  };
}

/** A JavaScript stack frame: `    at fn (file.js:1:2)` or `    at file.ts:3:4`. */
const JS_FRAME = /^\s+at .*\.(m?js|ts|cjs):\d+/m;

function expectOneLine(r: ReturnType<typeof poot>, code: 1 | 2, says: RegExp): void {
  expect(r.stderr).not.toMatch(JS_FRAME);
  expect(r.code).toBe(code);
  expect(r.lines).toHaveLength(1);
  expect(r.lines[0]).toMatch(says);
}

/** llama3's folder with only its bf16 weights (as the fixture is committed, before tests derive model.safetensors). */
function bf16Only(): string {
  const src = fixture("hf", "llama3");
  const dir = mkdtempSync(join(tmpdir(), "poot-bf16-only-"));
  for (const f of ["config.json", "tokenizer.json", "model.bf16.safetensors"]) symlinkSync(join(src, f), join(dir, f));
  return dir;
}

const noVulkanDriver = { VK_DRIVER_FILES: "/nonexistent/icd.json" };

describe("backend failures through the bin", () => {
  test("cuda without a driver", { timeout: 120_000 }, async (t) => {
    if ((await probeBackend("cuda")).status === "available") t.skip("this machine has a CUDA device");
    expectOneLine(
      poot(["run", demo, "--prompt", "hi", "--backend", "cuda", "--max-tokens", "2"]),
      1,
      /^poot: --backend cuda: needs an NVIDIA GPU and its driver .*; install the NVIDIA driver or use --backend cpu$/,
    );
  });

  test("vulkan without a driver", { timeout: 120_000 }, () => {
    expectOneLine(
      poot(["run", demo, "--prompt", "hi", "--backend", "vulkan", "--max-tokens", "2"], noVulkanDriver),
      1,
      /^poot: --backend vulkan: no Vulkan (loader|device).*use --backend cpu$/,
    );
  });

  test("wgpu without an adapter", { timeout: 120_000 }, () => {
    expectOneLine(
      poot(["run", demo, "--prompt", "hi", "--backend", "wgpu", "--max-tokens", "2"], noVulkanDriver),
      1,
      /^poot: --backend wgpu: no WebGPU adapter .*use --backend cpu$/,
    );
  });

  test("device lost and out of memory, on the backends' own errors", () => {
    const cases: [string, Error, RegExp][] = [
      ["vulkan", new VulkanError("device-lost", "vkQueueSubmit: VK_ERROR_DEVICE_LOST"), /device was lost.*run again/],
      [
        "vulkan",
        new VulkanError("out-of-memory", "vkAllocateMemory: VK_ERROR_OUT_OF_DEVICE_MEMORY"),
        /out of memory.*smaller model/,
      ],
      ["wgpu", new WgpuError("device-lost", "the device was lost (unknown)"), /device was lost/],
      ["wgpu", new WgpuError("out-of-memory", "createBuffer failed"), /out of memory.*smaller model/],
      [
        "cuda",
        new CudaError("driver-call", "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY", {
          call: "cuMemAlloc_v2",
          result: 2,
        }),
        /GPU is out of memory/,
      ],
      [
        "wgpu",
        new WgpuError("no-webgpu", "the optional 'webgpu' package (Dawn) is not installed"),
        /npm install webgpu/,
      ],
      // The generic staged program's device errors (the ROCm device raises them), and the ROCm backend's own.
      ["rocm", new DeviceError("device-lost", "submit: hipGraphLaunch failed: hipError 700", "rocm"), /GPU was lost/],
      ["rocm", new DeviceError("out-of-memory", "1073741824 bytes", "rocm"), /GPU is out of memory/],
      [
        "rocm",
        new RocmError(
          "no_code_object",
          "no code objects are planned for this GPU (gfx1030); the ROCm backend supports gfx1100, gfx90a, gfx942",
          {
            arch: "gfx1030",
          },
        ),
        /not one the ROCm backend builds for \(.*gfx1030.*\); use --backend vulkan or cpu$/,
      ],
      [
        "rocm",
        new RocmError("no_toolchain", "no llc to build AMDGPU code objects (tried llc)"),
        /needs llc and ld.lld/,
      ],
    ];
    for (const [name, err, says] of cases) {
      const mapped = backendFailure(name, "run", err);
      expect(mapped).toBeInstanceOf(CliError);
      expect((mapped as CliError).message).toMatch(says);
      expect((mapped as CliError).message).not.toContain("\n");
    }
  });
});

describe("bad arguments through the bin", () => {
  test.each([
    [["run", "--prompt", "hi", "--bogus"], 2, /^error: unknown option '--bogus'/],
    [["run", "--prompt", "hi", "--backend", "tpu"], 1, /^poot: unknown backend "tpu" \(available: auto, /],
    [["run", "--prompt", "hi", "--max-tokens", "abc"], 1, /^poot: --max-tokens must be an integer, got "abc"$/],
    [["run", "--prompt", "hi", "--temperature", "-1"], 1, /^poot: --temperature must be a finite number >= 0, got -1$/],
    [["run", "--prompt", "hi", "--top-p", "2"], 1, /^poot: --top-p must be in \(0, 1\], got 2$/],
    [["run", "--prompt", "hi", "-c", "-1"], 1, /^poot: --context must be an integer >= 2, got -1$/],
    [
      ["run", bf16Only(), "--prompt", "hi", "--backend", "cpu"],
      1,
      /^poot: no model\.safetensors in the model folder \(it has model\.bf16\.safetensors: weights bf16\) \(file .*model\.safetensors\)$/,
    ],
    [
      ["run", "/nonexistent/model", "--prompt", "hi"],
      1,
      /^poot: no such file or folder \(file \/nonexistent\/model\)$/,
    ],
    [
      ["generate", demo, "--ids", "99999999", "--backend", "cpu", "--max-tokens", "2", "--greedy"],
      1,
      /^poot: .*token id 99999999 is outside the vocabulary \[0, 4096\)/,
    ],
    [
      ["generate", demo, "--ids", "99999999", "--backend", "interp", "--max-tokens", "2", "--greedy"],
      1,
      /^poot: .*token id 99999999 is outside the vocabulary/,
    ],
  ] as [string[], 1 | 2, RegExp][])("%j", { timeout: 120_000 }, (args, code, says) => {
    expectOneLine(poot(args), code, says);
  });
});
