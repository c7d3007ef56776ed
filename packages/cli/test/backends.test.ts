// `poot backends` through the bin: every backend with a status from the four the issue names, the device of
// each available one, and `auto` resolving to a GPU backend only for a hardware GPU (never llvmpipe).
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const bin = join(dirname(fileURLToPath(import.meta.url)), "../bin/poot.mjs");

interface Listing {
  auto: string;
  backends: { name: string; status: string; device: string | null; gpu: boolean; detail: string }[];
}

function backends(env: Record<string, string> = {}): Listing & { stderr: string } {
  const r = spawnSync(process.execPath, [bin, "backends", "--json"], {
    encoding: "utf8",
    env: { ...process.env, ...env },
    timeout: 120_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return { ...(JSON.parse(r.stdout) as Listing), stderr: r.stderr };
}

test("every backend is listed with a status, a device when available, and auto picks a hardware GPU or cpu", {
  timeout: 120_000,
}, () => {
  const l = backends();
  expect(l.backends.map((b) => b.name)).toEqual([
    "cuda",
    "rocm",
    "vulkan",
    "wgpu",
    "cpu",
    "eval",
    "eval-reference",
    "interp",
  ]);
  for (const b of l.backends) {
    expect(["available", "missing package", "no driver", "no device"]).toContain(b.status);
    if (b.status === "available") expect(b.device).toBeTruthy();
    else expect(b.detail).not.toBe("");
  }
  const firstGpu = l.backends.find(
    (b) => ["cuda", "vulkan", "wgpu"].includes(b.name) && b.status === "available" && b.gpu,
  );
  expect(l.auto).toBe(firstGpu?.name ?? "cpu");
  // llvmpipe (lavapipe) is a CPU emulation: listed as available where installed, never a GPU.
  for (const b of l.backends) if (/llvmpipe/.test(b.device ?? "")) expect(b.gpu).toBe(false);
});

test("without a Vulkan driver, vulkan says no driver and auto falls back to the CPU backend", {
  timeout: 120_000,
}, (t) => {
  const l = backends({ VK_DRIVER_FILES: "/nonexistent/icd.json" });
  if (l.backends.find((b) => b.name === "cuda")?.status === "available")
    t.skip("a CUDA device is present: auto picks it");
  expect(l.backends.find((b) => b.name === "vulkan")?.status).toBe("no driver");
  expect(l.auto).toBe("cpu");
  // Dawn is not started on Linux without Vulkan: no loader warnings ("vkCreateInstance failed ...") on stderr.
  if (process.platform === "linux") {
    expect(l.backends.find((b) => b.name === "wgpu")).toMatchObject({ status: "no device", detail: /no driver/ });
    expect(l.stderr).toBe("");
  }
});

test("--help lists the backends", () => {
  const r = spawnSync(process.execPath, [bin, "--help"], { encoding: "utf8" });
  for (const name of ["auto", "cuda", "vulkan", "wgpu", "cpu", "eval", "interp"])
    expect(r.stdout).toMatch(new RegExp(`^  ${name} `, "m"));
});
