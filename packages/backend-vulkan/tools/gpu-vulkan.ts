// GPU-machine entry point (bundled by tools/gpu-bundle.sh): the Vulkan device the NVIDIA driver offers, the
// kernel checks against the interpreter, and every @poot/executor conformance case, with results as JSON.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { interpret } from "@poot/kernel-dsl";
import { checkConformanceCase, conformanceCases } from "@poot/executor/conformance";
import { createVulkanExecutor, launchKernel, probeVulkan, VulkanDevice } from "@poot/backend-vulkan";
import { gemv, siluMul } from "../test/kernels.js";

const outDir = process.env.OUT ?? ".gpu/out";
mkdirSync(outDir, { recursive: true });
const report: Record<string, unknown> = { date: new Date().toISOString() };
let failures = 0;

const probe = probeVulkan();
report.probe = probe.ok ? probe.devices.map((d) => ({ ...d, handle: String(d.handle) })) : probe;
console.log(JSON.stringify(report.probe, null, 1));
if (!probe.ok) process.exit(1);

const device = VulkanDevice.open({ validation: "if-available" });
report.caps = device.caps;
try {
  const rows = 256,
    K = 4096;
  const w = Float32Array.from({ length: rows * K }, (_, i) => Math.sin(i * 0.37));
  const x = Float32Array.from({ length: K }, (_, i) => Math.cos(i * 0.11));
  const got = new Float32Array(rows).fill(NaN),
    ref = new Float32Array(rows).fill(NaN);
  const t = launchKernel(device, gemv, [rows, 1, 1], { w, x, y: got }, { k: K }, { timestamps: true });
  interpret(gemv, { grid: [rows, 1, 1], buffers: { w, x, y: ref }, uniforms: { k: K } });
  let e = 0;
  for (let i = 0; i < rows; i++) e = Math.max(e, Math.abs(got[i]! - ref[i]!) / Math.max(1, Math.abs(ref[i]!)));
  const n = 1 << 16,
    a = Float32Array.from({ length: n }, (_, i) => Math.sin(i)),
    b = Float32Array.from({ length: n }, (_, i) => Math.cos(i));
  const o1 = new Float32Array(n),
    o2 = new Float32Array(n);
  launchKernel(device, siluMul, [n / 64, 1, 1], { a, b, out: o1 }, { n, scale: 0.5 });
  interpret(siluMul, { grid: [n / 64, 1, 1], buffers: { a, b, out: o2 }, uniforms: { n, scale: 0.5 } });
  let e2 = 0;
  for (let i = 0; i < n; i++) e2 = Math.max(e2, Math.abs(o1[i]! - o2[i]!));
  const ok = e < 1e-5 && e2 < 1e-5 && device.instance.errors().length === 0;
  if (!ok) failures++;
  report.kernels = {
    ok,
    gemvRelErr: e,
    gemvNs: t?.ns ?? null,
    siluMaxAbsErr: e2,
    validation: device.instance.validation,
    validationErrors: device.instance.errors(),
  };
} catch (err) {
  failures++;
  report.kernels = { error: (err as Error).stack };
}
console.log("kernels", JSON.stringify(report.kernels));

const results: { name: string; ok: boolean; error?: string }[] = [];
const t0 = performance.now();
for (const d of ["f32", "f16", "bf16"] as const) {
  for (const c of conformanceCases(d)) {
    const exec = createVulkanExecutor({ device });
    try {
      checkConformanceCase(exec, c, 1e-5);
      results.push({ name: c.name, ok: true });
    } catch (err) {
      failures++;
      results.push({ name: c.name, ok: false, error: (err as Error).message });
    } finally {
      exec.dispose();
    }
  }
}
report.conformance = { results, seconds: (performance.now() - t0) / 1000 };
for (const r of results) console.log(`${r.ok ? "pass" : "FAIL"} ${r.name}${r.error ? `: ${r.error}` : ""}`);
report.validationErrors = device.instance.errors();
device.dispose();
report.failures = failures;
writeFileSync(join(outDir, "gpu-vulkan.json"), JSON.stringify(report, null, 1));
console.log(`${failures} failure(s)`);
process.exit(failures ? 1 : 0);
