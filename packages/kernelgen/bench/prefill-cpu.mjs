// CPU prefill GEMM bench (decision 2305): kernelgen's register-tiled SIMD kernel for dense [N, K] weights
// (`synthesizeGemv` with a batch of M rows on the cpu caps) against the generic tiled GEMM (`synthesizeGemm`, the
// kernel prefill used before), both lowered by codegen's Wasm target and run on this thread, interleaved run by run.
// Prints per case the median CPU time, multiply-adds per second, the ratio, and the worst error of sampled outputs
// against a float64 reference.
//
// usage: pnpm --filter @poot/kernelgen bench:prefill [-- --runs 5] [--rows 64]
// Reads the built dist of kernelgen, codegen and kernel-dsl (a bench may cross package layers; decision 0451).
import { cpuSynthCaps, synthesizeGemm, synthesizeGemv } from "../dist/index.js";
import { lowerWasm } from "../../codegen/dist/index.js";
import { f16BitsToF32, f32ToF16Bits } from "../../kernel-dsl/dist/index.js";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return Number(i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : dflt);
};
const RUNS = arg("runs", 5),
  M = arg("rows", 64);
/** Llama-3.2-1B prefill contractions: [dtype, K, N]. */
const CASES = [
  ["f16", 2048, 2048],
  ["f16", 2048, 8192],
  ["f16", 8192, 2048],
  ["f32", 2048, 2048],
  ["bf16", 2048, 2048],
];
const CAPS = {
  maxWorkgroup: 1024,
  subgroupSize: 1,
  sharedBytes: 1 << 16,
  dtypes: ["f32", "u32", "i32"],
  maxStorageBuffers: 64,
  f16: false,
  bf16: false,
};
const align = (n) => Math.ceil(n / 64) * 64;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const bf16 = (x) => new Uint32Array(new Float32Array([x]).buffer)[0] >>> 16;

/** x [M, K] and w [N, K] (stored as `dtype`, values of magnitude ≤ 0.5 and ≤ 0.05, no subnormals). */
function data(dtype, K, N) {
  const x = Float32Array.from({ length: M * K }, (_, i) => Math.sin(i * 12.9898) * 0.5);
  const wf = Float32Array.from({ length: N * K }, (_, i) => Math.sin(i * 78.233 + 1) * 0.05);
  const stored = dtype === "f32" ? wf : Uint16Array.from(wf, (v) => (dtype === "f16" ? f32ToF16Bits(v) : bf16(v)));
  const wide =
    dtype === "f32"
      ? wf
      : Float32Array.from(stored, (b) =>
          dtype === "f16" ? f16BitsToF32(b) : new Float32Array(new Uint32Array([b << 16]).buffer)[0],
        );
  return { x, stored, wide };
}

/** Instantiates `s` over a fresh memory holding x and W; returns its runner and the output view. */
function instance(s, K, N, d) {
  const code = lowerWasm(s.kernel, CAPS);
  const wg = code.workgroupSize[0] * code.workgroupSize[1] * code.workgroupSize[2];
  const xAt = 4096,
    wAt = align(xAt + 4 * M * K),
    yAt = align(wAt + d.stored.byteLength),
    perAt = align(yAt + 4 * M * N);
  const per = align(code.abi.sharedBytes) + align(code.abi.frameBytes * wg);
  const memory = new WebAssembly.Memory({
    initial: Math.ceil((perAt + per) / 65536) + 1,
    maximum: 65536,
    shared: true,
  });
  new Float32Array(memory.buffer, xAt, M * K).set(d.x);
  new Uint8Array(memory.buffer, wAt, d.stored.byteLength).set(new Uint8Array(d.stored.buffer));
  const at = { x: xAt, A: xAt, W: wAt, y: yAt, C: yAt };
  const view = new DataView(memory.buffer);
  const bufs = code.bindings.filter((b) => b.kind === "buffer").map((b) => at[b.buffer]);
  const [gx, gy, gz] = s.grid;
  [...bufs, gx, gy, gz, perAt, perAt + align(code.abi.sharedBytes)].forEach((v, j) =>
    view.setUint32(256 + 4 * j, v, true),
  );
  const math = {
    exp: Math.exp,
    log: Math.log,
    tanh: Math.tanh,
    erf: Math.tanh,
    sin: Math.sin,
    cos: Math.cos,
    f16_to_f32: f16BitsToF32,
    f32_to_f16: f32ToF16Bits,
  };
  const fn = new WebAssembly.Instance(new WebAssembly.Module(code.binary), { env: { memory }, math }).exports[
    code.entryPoint
  ];
  const run = () => {
    for (let z = 0; z < gz; z++) for (let y = 0; y < gy; y++) for (let x = 0; x < gx; x++) fn(256, x, y, z, 0, wg);
  };
  return { run, y: new Float32Array(memory.buffer, yAt, M * N) };
}

/** Worst |y - ref| / Σ|terms| over sampled outputs (float64 reference). */
function error(y, d, K, N) {
  let worst = 0;
  for (const [m, n] of [
    [0, 0],
    [M - 1, N - 1],
    [M >> 1, N >> 1],
    [M - 1, 0],
  ]) {
    let s = 0,
      a = 0;
    for (let k = 0; k < K; k++)
      (s += d.x[m * K + k] * d.wide[n * K + k]), (a += Math.abs(d.x[m * K + k] * d.wide[n * K + k]));
    worst = Math.max(worst, Math.abs(y[m * N + n] - s) / a);
  }
  return worst;
}

console.log(
  `# CPU prefill GEMM bench: ${M} rows, one thread, median CPU time of ${RUNS} interleaved runs, node ${process.version}`,
);
const caps = cpuSynthCaps();
for (const [dtype, K, N] of CASES) {
  const d = data(dtype, K, N);
  const weight = { dtype, layout: "nk" };
  const tiled = instance(synthesizeGemv({ name: "tiled", K, N, batch: M, weight }, caps), K, N, d);
  const generic = instance(synthesizeGemm({ name: "generic", M, N, K, weight }, caps), K, N, d);
  tiled.run();
  generic.run();
  const errs = [error(tiled.y, d, K, N), error(generic.y, d, K, N)];
  const tt = [],
    tg = [];
  for (let r = 0; r < RUNS; r++) {
    let c = cpuMs();
    generic.run();
    tg.push(cpuMs() - c);
    c = cpuMs();
    tiled.run();
    tt.push(cpuMs() - c);
  }
  const gmac = (ms) => ((M * K * N) / ms / 1e6).toFixed(2);
  const [a, b] = [median(tt), median(tg)];
  console.log(
    `${dtype.padEnd(4)} K=${K} N=${N}: tiled ${a.toFixed(1)} ms (${gmac(a)} GMAC/s)  generic ${b.toFixed(1)} ms (${gmac(b)} GMAC/s)  ` +
      `${(b / a).toFixed(2)}x  error ${errs[0].toExponential(1)} / ${errs[1].toExponential(1)} ${Math.max(...errs) < 1e-5 ? "ok" : "WRONG"}`,
  );
}
