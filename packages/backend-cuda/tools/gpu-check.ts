// The GPU entry point (bundled by gpu-pack, run on the GPU machine): device facts, PTX correctness against
// the kernel-dsl interpreter, JIT cache, typed JIT errors, launch overhead, copy bandwidth and GEMVs.

import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createCudaContext, CudaError, loadPtx } from "@poot/backend-cuda";
import { benchMachine, loadSampler, writeBenchResult } from "@poot/testkit";
import { benchCopy, benchGemv, benchLaunch, type GemvFigure } from "./gpu-bench.js";
import { addPos, runCorrectness, runSlotGraph } from "./gpu-cases.js";
import { benchDecodeStep } from "./gpu-decode.js";
import { gpuCheckInput } from "./gpu-check-result.js";

const outDir = process.env.OUT ?? ".gpu/out";
mkdirSync(outDir, { recursive: true });
const cacheDir = "/tmp/poot-cuda-cache";
rmSync(cacheDir, { recursive: true, force: true });
const load = loadSampler();
const results: Record<string, unknown> = { date: new Date().toISOString(), node: process.version };
const save = (): void => writeFileSync(join(outDir, "gpu-check.json"), JSON.stringify(results, null, 1));
let failures = 0;

function section<T>(name: string, fn: () => T): T | undefined {
  const t0 = performance.now();
  try {
    const r = fn();
    results[name] = r;
    console.log(`== ${name} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    console.log(JSON.stringify(r, null, 1));
    return r;
  } catch (e) {
    failures++;
    const err = e as CudaError;
    results[name] = { error: err.message, code: err.code, context: err.context, stack: err.stack };
    console.log(`== ${name} FAILED: ${err.message}\n${err.stack}`);
    return undefined;
  } finally {
    save();
  }
}

const ctx = createCudaContext({ cacheDir });
section("device", () => ({ ...ctx.device.info, caps: ctx.caps, memory: ctx.device.memoryInfo() }));
const correctness = section("ptx-vs-interpreter", () => runCorrectness(ctx));
if (correctness) failures += correctness.filter((c) => !c.ok).length;
const slot = section("slot-graph", () => runSlotGraph(ctx));
if (slot && !slot.ok) failures++;
section("jit-cache", () => {
  const code = ctx.compile(addPos).code.text!;
  const opts = {
    arch: ctx.device.info.arch,
    driverVersion: ctx.device.info.driverVersion,
    cacheDir: join(cacheDir, "bench"),
  };
  const miss = loadPtx(ctx.device.api, code, opts);
  const hit = loadPtx(ctx.device.api, code, opts);
  const plain = loadPtx(ctx.device.api, code, { arch: opts.arch, driverVersion: opts.driverVersion });
  for (const m of [miss, hit, plain]) m.module.dispose();
  return {
    missMs: miss.loadMs,
    hitMs: hit.loadMs,
    noCacheMs: plain.loadMs,
    missCacheHit: miss.cacheHit,
    hitCacheHit: hit.cacheHit,
  };
});
section("jit-error", () => {
  try {
    loadPtx(
      ctx.device.api,
      ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry broken() {\n  mov.u32 %r1, 1;\n  ret;\n}\n",
      { arch: "sm_90", driverVersion: 0, name: "broken" },
    );
    failures++;
    return { ok: false, detail: "bad PTX was accepted" };
  } catch (e) {
    const err = e as CudaError;
    const ok = err instanceof CudaError && err.code === "ptx-jit" && (err.context.log ?? "").length > 0;
    if (!ok) failures++;
    return { ok, code: err.code, resultName: err.context.resultName, log: err.context.log };
  }
});
const launch = section("launch-overhead", () => benchLaunch(ctx));
const copy = section("copy-bandwidth", () => benchCopy(ctx));
const gemv: GemvFigure[] = [];
const shapes: [number, number][] = [
  [2048, 2048],
  [8192, 2048],
  [2048, 8192],
  [128256, 2048],
];
for (const dtype of ["bf16", "f32"] as const) {
  for (const [N, K] of shapes) {
    const f = section(`gemv-${dtype}-${N}x${K}`, () => benchGemv(ctx, N, K, dtype, copy?.copyReadWriteGBps ?? NaN));
    if (f) gemv.push(...f);
  }
}
for (const f of gemv) if (!(f.maxRelErr < 1e-4)) failures++;
const decode = section("decode-step-gemvs", () => benchDecodeStep(ctx, copy?.copyReadWriteGBps ?? NaN));
console.log("\nSUMMARY");
console.log(`device ${ctx.device.info.name} ${ctx.device.info.arch}, driver ${ctx.device.info.driverVersion}`);
for (const c of correctness ?? []) console.log(`${c.ok ? "ok  " : "FAIL"} ${c.name}: ${c.detail}`);
if (slot) console.log(`${slot.ok ? "ok  " : "FAIL"} ${slot.name}: ${slot.detail}`);
if (launch)
  console.log(
    `launch: plain ${launch.plainHostUsPerLaunch!.toFixed(2)} us host/launch, graph ${launch.graphWallUsPerKernel!.toFixed(3)} us/kernel wall, ${launch.graphGpuUsPerKernel!.toFixed(3)} us/kernel GPU`,
  );
if (copy) console.log(`copy: ${copy.copyReadWriteGBps!.toFixed(0)} GB/s (read+write)`);
for (const f of gemv)
  console.log(
    `gemv ${f.dtype} ${f.N}x${f.K} ${f.kernel}: ${f.us.toFixed(2)} us, ${f.GBps.toFixed(0)} GB/s, ${(f.ratioToCopy * 100).toFixed(1)}% of copy, err ${f.maxRelErr.toExponential(1)}`,
  );
if (decode)
  console.log(
    `decode-step GEMVs (${decode.kernels} kernels, ${(decode.weightBytes! / 1e9).toFixed(2)} GB): plain ${decode.plainWallMs!.toFixed(3)} ms, graph ${decode.graphWallMs!.toFixed(3)} ms wall (${decode.graphTokPerSecBound!.toFixed(0)} tok/s bound, ${(decode.fractionOfFloor! * 100).toFixed(1)}% of the copy floor)`,
  );
console.log(`${failures} failure(s)`);
results.failures = failures;
save();
// The timing figures as a poot-bench-result/1 file (decision 2110); gpu-bundle.sh records the commit it bundled.
if (launch && copy) {
  const commitFile = new URL("./bench-commit", import.meta.url);
  const info = ctx.device.info;
  const file = writeBenchResult(
    gpuCheckInput(results, {
      commit: existsSync(commitFile) ? readFileSync(commitFile, "utf8").trim() : "unknown",
      command: `node ${process.argv[1] ?? "gpu-check.mjs"}`,
      load: load.summary(),
      machine: benchMachine(`${info.name} (${info.arch}), CUDA driver API ${info.driverVersion}`),
    }),
    join(outDir, "bench-results"),
  );
  console.log(`bench result: ${file}`);
}
ctx.dispose();
process.exit(failures ? 1 : 0);
