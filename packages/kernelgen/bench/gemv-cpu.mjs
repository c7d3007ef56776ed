// CPU decode-GEMV bench: kernelgen's GEMVs for the Llama-3.2-1B shapes, lowered by codegen's Wasm target and run on
// 1 and 2 worker_threads over one shared memory, against a plain Wasm SIMD read loop measured in the same run.
//
// usage: pnpm --filter @poot/kernelgen bench [-- --runs N] [--dtypes F16,Q8_0] [--threads 1,2]
// Reads the built dist of kernelgen, codegen, kernel-dsl and models (a bench may cross the package layers that
// library code may not; docs/decisions/0451). Prints per kernel the median time, GB/s of weight bytes, the ratio to
// the probe, a check of sampled outputs against a float64 reference, and projected decode tok/s per GGUF type.
import { randomFillSync } from "node:crypto";
import * as os from "node:os";
import { Worker } from "node:worker_threads";
import { synthesizeDequantGemv, synthesizeGemv, cpuSynthCaps } from "../dist/index.js";
import { lowerWasm, WasmCode, WasmModule, ValType } from "../../codegen/dist/index.js";
import { QUANT_FORMATS, ggmlPackedFormat } from "../../models/dist/index.js";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : dflt;
};
const RUNS = Number(arg("runs", "7"));
const DTYPES = arg("dtypes", "F32,F16,BF16,Q8_0,Q4_K,Q6_K").split(",");
const THREADS = arg("threads", "1,2").split(",").map(Number);
/** The decode GEMVs of Llama-3.2-1B as [K, N] (in, out). */
const SHAPES = [
  [2048, 2048],
  [2048, 512],
  [2048, 8192],
  [8192, 2048],
  [2048, 128256],
];
const WORKER = new URL("./gemv-worker.mjs", import.meta.url);
const WASM_CAPS = {
  maxWorkgroup: 1024,
  subgroupSize: 1,
  sharedBytes: 1 << 16,
  dtypes: ["f32", "u32", "i32"],
  maxStorageBuffers: 64,
  f16: false,
  bf16: false,
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const align = (n, a = 64) => Math.ceil(n / a) * a;

/** Weight bytes of a [N, K] matrix in `dtype`. */
function weightBytes(dtype, K, N) {
  const f = QUANT_FORMATS[dtype];
  return ((K * N) / f.blockElems) * f.blockBytes;
}

/** Random but valid weights: finite f16/bf16 values, small finite f16 block scales. */
function fillWeights(dtype, bytes) {
  randomFillSync(bytes);
  const u16 = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 1);
  if (dtype === "F32") {
    const f = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2);
    const u = new Uint32Array(f.buffer, f.byteOffset, f.length);
    for (let i = 0; i < u.length; i++) u[i] = (u[i] & 0x807fffff) | ((118 + (u[i] & 3)) << 23);
  } else if (dtype === "F16")
    for (let i = 0; i < u16.length; i++) u16[i] = (u16[i] & 0x83ff) | ((6 + (u16[i] & 3)) << 10);
  else if (dtype === "BF16")
    for (let i = 0; i < u16.length; i++) u16[i] = (u16[i] & 0x807f) | ((118 + (u16[i] & 3)) << 7);
  else {
    const f = QUANT_FORMATS[dtype];
    const halves = f.fields.filter((x) => x.kind === "f16");
    for (let o = 0; o < bytes.length; o += f.blockBytes)
      for (const h of halves)
        for (let k = 0; k < h.count; k++) {
          const at = o + h.offset + 2 * k;
          bytes[at] = bytes[at] & 0xff;
          bytes[at + 1] = 0x0c | (bytes[at + 1] & 0x83); // |x| in [2^-12, 2^-10)
        }
  }
}

/** The kernel of one case, from kernelgen's choice for the cpu caps. */
function synthesize(dtype, K, N) {
  const caps = cpuSynthCaps();
  const name = `gemv_${dtype.toLowerCase()}_${K}x${N}`;
  if (dtype === "F32" || dtype === "F16" || dtype === "BF16")
    return synthesizeGemv({ name, K, N, weight: { dtype: dtype.toLowerCase(), layout: "nk" } }, caps);
  return synthesizeDequantGemv({ name, K, N, format: ggmlPackedFormat(dtype) }, caps);
}

/** Float64 reference of output rows `rows` (decoded with @poot/models' reference decoders). */
function reference(dtype, K, xs, w, rows) {
  const f = QUANT_FORMATS[dtype];
  const rowBytes = (K / f.blockElems) * f.blockBytes;
  const dec = new Float32Array(K);
  return rows.map((n) => {
    for (let b = 0; b < K / f.blockElems; b++) f.decodeBlock(w, n * rowBytes + b * f.blockBytes, dec, b * f.blockElems);
    let s = 0,
      a = 0;
    for (let k = 0; k < K; k++) (s += xs[k] * dec[k]), (a += Math.abs(xs[k] * dec[k]));
    return [s, a];
  });
}

/** Spawns `n` workers on `binary`, each given a share of `groups`; returns a runner and a closer. */
async function team(memory, ctlAddr, binary, entry, shares) {
  const ctl = new Int32Array(memory.buffer, ctlAddr, 4);
  Atomics.store(ctl, 0, 0), Atomics.store(ctl, 1, 0), Atomics.store(ctl, 2, 0);
  const workers = shares.map((s) => new Worker(WORKER, { workerData: { binary, memory, entry, ctlAddr, ...s } }));
  await Promise.all(
    workers.map(
      (w) =>
        new Promise((res, rej) => {
          w.once("online", res);
          w.once("error", rej);
        }),
    ),
  );
  const run = () => {
    Atomics.store(ctl, 1, 0);
    Atomics.add(ctl, 0, 1);
    Atomics.notify(ctl, 0);
    for (let d; (d = Atomics.load(ctl, 1)) < workers.length; ) Atomics.wait(ctl, 1, d, 1000);
  };
  const close = async () => {
    Atomics.store(ctl, 2, 1);
    Atomics.add(ctl, 0, 1);
    Atomics.notify(ctl, 0);
    await Promise.all(workers.map((w) => new Promise((res) => w.once("exit", res))));
  };
  return { run, close };
}

/** Warms `run` up for at least 300 ms (Wasm tiers up to optimized code), then times it RUNS times, each run
 * followed by a run of `probe` (the baseline, interleaved); returns both medians in ms. */
function time(run, probe) {
  for (const t0 = performance.now(); performance.now() - t0 < 300; ) run();
  const ts = [],
    ps = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    run();
    ts.push(performance.now() - t0);
    if (probe) {
      const t1 = performance.now();
      probe();
      ps.push(performance.now() - t1);
    }
  }
  return { ms: median(ts), probeMs: probe ? median(ps) : NaN };
}

/** A plain Wasm SIMD read loop: `probe(addr, bytes, out)` sums 64 bytes per iteration into four i32x4 lanes. */
function probeModule() {
  const c = new WasmCode(3);
  const end = c.local(ValType.i32);
  const acc = [0, 1, 2, 3].map(() => c.local(ValType.v128));
  c.opU(0x20, 0).opU(0x20, 1).op(0x6a).opU(0x21, end);
  c.open(0x02).open(0x03);
  c.opU(0x20, 0).opU(0x20, end).op(0x4f).opU(0x0d, 1);
  acc.forEach((a, k) =>
    c
      .opU(0x20, a)
      .opU(0x20, 0)
      .simdMem(0x00, 4, 16 * k)
      .simd(0xae)
      .opU(0x21, a),
  );
  c.opU(0x20, 0).i32(64).op(0x6a).opU(0x21, 0).opU(0x0c, 0);
  c.op(0x0b).op(0x0b);
  c.opU(0x20, 2)
    .opU(0x20, acc[0])
    .opU(0x20, acc[1])
    .simd(0xae)
    .opU(0x20, acc[2])
    .simd(0xae)
    .opU(0x20, acc[3])
    .simd(0xae)
    .simdMem(0x0b, 4, 0);
  const m = new WasmModule();
  m.importMemory({ module: "env", name: "memory", minimum: 1, maximum: 65536, shared: true });
  for (const n of ["exp", "log", "tanh", "erf", "sin", "cos"]) m.importFunc("math", n, [ValType.f32], [ValType.f32]);
  m.importFunc("math", "f16_to_f32", [ValType.i32], [ValType.f32]);
  m.importFunc("math", "f32_to_f16", [ValType.f32], [ValType.i32]);
  m.exportFunc("probe", m.func([ValType.i32, ValType.i32, ValType.i32], [], c));
  return m.encode();
}

const PROBE_BYTES = 512 << 20;
/** A team of `threads` workers each streaming its own share of a 512 MiB buffer (read bandwidth baseline). */
async function probeTeam(threads) {
  const total = PROBE_BYTES;
  const memory = new WebAssembly.Memory({ initial: (total + (1 << 20)) >> 16, maximum: 65536, shared: true });
  randomFillSync(new Uint8Array(memory.buffer, 1 << 20, 1 << 20));
  const per = total / threads;
  const shares = Array.from({ length: threads }, (_, i) => ({
    probe: { addr: (1 << 20) + i * per, bytes: per, out: 1024 + 16 * i },
    groups: [],
    threads: 0,
    argsAddr: 0,
  }));
  return team(memory, 0, probeModule(), "probe", shares);
}

/** Runs one GEMV case on `threads` workers interleaved with the probe; returns medians and the worst sampled error. */
async function gemv(dtype, K, N, threads, probe) {
  const s = synthesize(dtype, K, N);
  const code = lowerWasm(s.kernel, WASM_CAPS);
  const abi = code.abi;
  const wg = code.workgroupSize[0] * code.workgroupSize[1] * code.workgroupSize[2];
  const wBytes = weightBytes(dtype, K, N);
  const xAt = 4096,
    wAt = align(xAt + 4 * K),
    yAt = align(wAt + wBytes),
    perAt = align(yAt + 4 * N);
  const per = align(abi.sharedBytes) + align(abi.frameBytes * wg);
  const total = perAt + threads * per;
  const memory = new WebAssembly.Memory({ initial: Math.ceil(total / 65536) + 1, maximum: 65536, shared: true });
  const bytes = new Uint8Array(memory.buffer);
  const x = new Float32Array(memory.buffer, xAt, K);
  for (let k = 0; k < K; k++) x[k] = Math.sin(k * 12.9898) * 0.5;
  const w = bytes.subarray(wAt, wAt + wBytes);
  fillWeights(dtype, w);
  const view = new DataView(memory.buffer);
  const bufs = { x: xAt, W: wAt, y: yAt };
  const order = code.bindings.filter((b) => b.kind === "buffer").map((b) => bufs[b.buffer]);
  const [gx, gy, gz] = s.grid;
  const all = [];
  for (let z = 0; z < gz; z++) for (let yy = 0; yy < gy; yy++) for (let xx = 0; xx < gx; xx++) all.push([xx, yy, z]);
  const shares = Array.from({ length: threads }, (_, i) => {
    const argsAddr = 256 * (i + 1);
    [...order, gx, gy, gz, perAt + i * per, perAt + i * per + align(abi.sharedBytes)].forEach((v, j) =>
      view.setUint32(argsAddr + 4 * j, v, true),
    );
    const lo = Math.floor((all.length * i) / threads),
      hi = Math.floor((all.length * (i + 1)) / threads);
    return { argsAddr, groups: all.slice(lo, hi).flat(), threads: wg };
  });
  const t = await team(memory, 0, code.binary, code.entryPoint, shares);
  new Float32Array(memory.buffer, yAt, N).fill(NaN);
  const { ms, probeMs } = time(t.run, probe.run);
  await t.close();
  const y = new Float32Array(memory.buffer, yAt, N);
  const rows = [0, 1, N >> 1, N - 1];
  let err = 0;
  reference(dtype, K, x, w, rows).forEach(
    ([s0, a], i) => (err = Math.max(err, Math.abs(y[rows[i]] - s0) / a || (Number.isNaN(y[rows[i]]) ? Infinity : 0))),
  );
  return { ms, gbs: wBytes / ms / 1e6, probeGbs: PROBE_BYTES / probeMs / 1e6, err, wg, grid: s.grid };
}

const cpu = os.cpus()[0]?.model ?? "unknown cpu";
console.log(
  `# CPU GEMV bench: ${cpu} x${os.cpus().length}, node ${process.version}, median of ${RUNS} runs after >= 300 ms of warm-up, each run followed by a probe run`,
);
const teams = {};
for (const th of THREADS) teams[th] = await probeTeam(th);
const results = {};
const probeSeen = Object.fromEntries(THREADS.map((th) => [th, []]));
for (const dtype of DTYPES) {
  for (const [K, N] of SHAPES) {
    for (const th of THREADS) {
      const r = await gemv(dtype, K, N, th, teams[th]);
      results[`${dtype} ${K}x${N} ${th}`] = r;
      probeSeen[th].push(r.probeGbs);
      const ok = r.err < 1e-4 ? "ok" : "WRONG";
      console.log(
        `${dtype.padEnd(5)} ${`${K}x${N}`.padEnd(11)} threads=${th}  ${r.ms.toFixed(3).padStart(9)} ms  ${r.gbs.toFixed(2).padStart(6)} GB/s  probe ${r.probeGbs.toFixed(2).padStart(5)} GB/s  ${(r.gbs / r.probeGbs).toFixed(2)}x probe  wg ${r.wg} grid ${r.grid.join("x")}  check ${r.err.toExponential(1)} ${ok}`,
      );
    }
  }
}
for (const th of THREADS) await teams[th].close();
const probes = Object.fromEntries(THREADS.map((th) => [th, { gbs: median(probeSeen[th]) }]));
for (const th of THREADS)
  console.log(`probe  threads=${th}  read ${probes[th].gbs.toFixed(2)} GB/s (median over all cases)`);

// Decode GEMVs per token: 16 layers of q, k, v, o, gate, up, down, then the tied lm head.
const moreBits = (i) => i < 2 || i >= 14 || (i - 2) % 3 === 2;
const MIX = {
  F16: () => ({ q: "F16", k: "F16", v: "F16", o: "F16", gate: "F16", up: "F16", down: "F16", head: "F16" }),
  Q8_0: () => ({ q: "Q8_0", k: "Q8_0", v: "Q8_0", o: "Q8_0", gate: "Q8_0", up: "Q8_0", down: "Q8_0", head: "Q8_0" }),
  Q4_K_M: (i) => ({
    q: "Q4_K",
    k: "Q4_K",
    v: moreBits(i) ? "Q6_K" : "Q4_K",
    o: "Q4_K",
    gate: "Q4_K",
    up: "Q4_K",
    down: moreBits(i) ? "Q6_K" : "Q4_K",
    head: "Q6_K",
  }),
};
const SHAPE_OF = {
  q: "2048x2048",
  k: "2048x512",
  v: "2048x512",
  o: "2048x2048",
  gate: "2048x8192",
  up: "2048x8192",
  down: "8192x2048",
  head: "2048x128256",
};
const LLAMA_CPP = { F16: 11.2, Q8_0: 14.9, Q4_K_M: 27.2 };
for (const [type, mix] of Object.entries(MIX)) {
  for (const th of THREADS) {
    let ms = 0,
      bytes = 0,
      missing = false;
    for (let i = 0; i < 16; i++) {
      for (const role of ["q", "k", "v", "o", "gate", "up", "down"]) {
        const dt = mix(i)[role],
          r = results[`${dt} ${SHAPE_OF[role]} ${th}`];
        if (r === undefined) {
          missing = true;
          continue;
        }
        ms += r.ms;
        const [K, N] = SHAPE_OF[role].split("x").map(Number);
        bytes += weightBytes(dt, K, N);
      }
    }
    const hd = mix(0).head,
      r = results[`${hd} ${SHAPE_OF.head} ${th}`];
    if (r === undefined || missing) {
      console.log(`decode ${type} threads=${th}: not all GEMVs measured`);
      continue;
    }
    ms += r.ms;
    bytes += weightBytes(hd, 2048, 128256);
    const tps = 1000 / ms;
    const bound = (probes[th].gbs * 1e9) / bytes;
    console.log(
      `decode ${type.padEnd(6)} threads=${th}  GEMVs ${ms.toFixed(1)} ms/token = ${tps.toFixed(2)} tok/s (${(bytes / 2 ** 20).toFixed(0)} MiB/token; probe bound ${bound.toFixed(1)} tok/s)  llama.cpp ${LLAMA_CPP[type]} tok/s  ratio ${(tps / LLAMA_CPP[type]).toFixed(2)}x`,
    );
  }
}
