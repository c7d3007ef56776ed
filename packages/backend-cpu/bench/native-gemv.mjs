// Native GEMV bench (decisions 0952, 2300, 2310): the prebuilt kernels of each weight format on the Llama-3.2-1B decode
// shapes, one thread, against a copy of the same bytes inside the same shared memory measured in the same run (the
// memory-bound floor a GEMV's reads approach).
//
// usage: pnpm --filter @poot/backend-cpu bench [-- --runs N] [--formats Q8_0,Q4_K] [--libraries kernel-ir,PATH.so] [--m M]
//        [--numerics fast] [--isa avx2|avx512] [--cold] [--groups G]
// With `--numerics fast` (Q8_0, Q4_K and Q6_K, decisions 2320, 2330, 2335) each shape's x is quantized once, outside the
// timing (as the executor does once per x for every GEMV reading it), and the `fast` GEMVs are timed. `--isa` forces
// a kernel set (`poot_native_force`; with fast numerics, avx2 runs the widened AVX2 fallback, decision 2335).
// The fast GEMVs take a slab scratch after y (Q8_0: decision 2390, Q4_K and Q6_K: 2430); a library built before
// either (its path containing `pre2390` or `pre2430`) gets the argument block without one for those formats.
// Loads the committed object (generated from the kernel IR) or other builds by path through koffi and calls
// each format's kernel as the executor's threads do (argument block in a shared WebAssembly.Memory); with several
// libraries their runs alternate, shape by shape, so both see the same machine. Writes
// bench-results/<date>-<name>.json (each GEMV's weight-read GB/s against the copy of the same bytes); `--name NAME`
// (default cpu-native-gemv) keeps a second run of the day, with other settings, from replacing the first.
import { randomFillSync } from "node:crypto";
import { createRequire } from "node:module";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { figure, gitCommit, loadSampler, ratiosOf, writeBenchResult } from "@poot/testkit";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : dflt;
};
/** The result's name: the file name's part after the date (as cpu-vs-llama-cpp.mjs takes it). */
const NAME = arg("name", "cpu-native-gemv");
if (!/^[a-z0-9][a-z0-9-]*$/.test(NAME)) {
  console.error(`bench native-gemv: --name: lowercase letters, digits and dashes only, not "${NAME}"`);
  process.exit(1);
}
const RUNS = Number(arg("runs", "7"));
/** Rows of x (M > 1: the prefill path, several rows per pass over the weights; the LM head shape is then skipped). */
const M = Number(arg("m", "1"));
/** Weight formats: the kernel's format name and bytes per 256 elements. */
const FORMATS = {
  F32: ["f32", 1024],
  F16: ["f16", 512],
  BF16: ["bf16", 512],
  Q8_0: ["q8_0", 272],
  Q4_K: ["q4_k", 144],
  Q6_K: ["q6_k", 210],
};
const FAST = arg("numerics", "exact") === "fast";
/** The activation quantizer of each format's fast GEMV (decision 2320). */
const FAST_QUANT = { Q8_0: "q8_0", Q4_K: "q8_k", Q6_K: "q8_k" };
const WANT = arg("formats", FAST ? Object.keys(FAST_QUANT).join(",") : Object.keys(FORMATS).join(",")).split(",");
for (const name of WANT)
  if (FAST && FAST_QUANT[name] === undefined) throw new Error(`--numerics fast: no fast GEMV for ${name}`);
/** [K, N] of the decode GEMVs (q/o, k/v, gate/up, down, the LM head). */
const SHAPES = [
  [2048, 2048],
  [2048, 512],
  [2048, 8192],
  [8192, 2048],
  [2048, 128256],
].filter(([, N]) => M === 1 || N < 128256);
/**
 * `--cold`: before each timed call a 64 MB write evicts the weights from every cache (32 MB of L3 here), so each
 * shape streams its weights from memory as decode does (every weight read once a token), not from the L3 the copy
 * just filled.
 */
const COLD = process.argv.includes("--cold");
const EVICT = 64 << 20;
/**
 * `--groups G`: each GEMV as G workgroups of ceil(N / G) weight rows called in turn (the executor's split: 16 per
 * thread), instead of one workgroup of all N rows.
 */
const GROUPS = Number(arg("groups", "1"));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const PREBUILT = { "kernel-ir": "libpoot_cpu.so" };
const require = createRequire(import.meta.url);
const LIBS = arg("libraries", "kernel-ir")
  .split(",")
  .map((name) => {
    const file = PREBUILT[name];
    const path =
      file === undefined
        ? name
        : fileURLToPath(new URL(`../native/prebuilt/${process.platform}-${process.arch}/${file}`, import.meta.url));
    if (!existsSync(path)) throw new Error(`no native kernels at ${path}`);
    const lib = require("koffi").load(path);
    const want = arg("isa", undefined);
    if (want !== undefined && lib.func("int poot_native_force(const char *isa)")(want) !== 1)
      throw new Error(`${path}: this CPU cannot run its ${want} kernels`);
    const isa = lib.func("const char *poot_native_isa(void)")();
    if (isa === "none") throw new Error(`${path}: this CPU cannot run its kernels`);
    return {
      name: `${
        name.length > 10
          ? name
              .split("/")
              .pop()
              .replace(/^libpoot_cpu_?|\.so$/g, "")
          : name
      } ${isa}`,
      lib,
      addr: lib.func("uint64_t poot_native_addr(const void *p)"),
      slabs: path.includes("pre2390") ? [] : path.includes("pre2430") ? ["q8_0"] : ["q8_0", "q4_k", "q6_k"],
    };
  });
const addr = LIBS[0].addr;

const maxBytes = 128256 * 2048 * 4 + (1 << 20);
const ARGS = 0,
  X = 4096,
  Y = X + M * 8192 * 4,
  W = Math.ceil((Y + M * Math.max(...SHAPES.map(([, N]) => N)) * 4) / (1 << 20)) * (1 << 20),
  COPY = W + maxBytes,
  // The quantized activations of the fast GEMVs: q (bytes), d (one f32 per 32 elements, at most), s (one i32 per 16).
  Q = COPY + maxBytes,
  D = Q + M * 8192,
  S = D + M * 1024,
  // One workgroup's slab of the fast GEMVs: 576 bytes per 32 of K (Q8_0, decision 2390), 5248 (Q4_K) or 5184 (Q6_K)
  // per 256 (decision 2430).
  T = S + M * 2048;
const memory = new WebAssembly.Memory({
  initial: Math.ceil((T + (8192 / 256) * 5248) / 65536),
  maximum: 65536,
  shared: true,
});
const u8 = new Uint8Array(memory.buffer),
  u32 = new Uint32Array(memory.buffer),
  f32 = new Float32Array(memory.buffer);
const base = Number(addr(u8));
for (let i = 0; i < M * 8192; i++) f32[X / 4 + i] = Math.sin(i);

/** Valid weights: finite halves and small block scales (random bytes elsewhere). */
function fill(name, bytes) {
  randomFillSync(u8.subarray(W, W + bytes));
  const u16 = new Uint16Array(memory.buffer, W, bytes >> 1);
  if (name === "F32") for (let i = 0; i < bytes >> 2; i++) u32[W / 4 + i] = (u32[W / 4 + i] & 0x807fffff) | (120 << 23);
  else if (name === "F16" || name === "BF16")
    for (let i = 0; i < u16.length; i++) u16[i] = name === "F16" ? u16[i] & 0xbbff : (u16[i] & 0x807f) | (120 << 7);
  else {
    const [, per256] = FORMATS[name];
    const block = name === "Q8_0" ? 34 : per256,
      halves = { Q8_0: [0], Q4_K: [0, 2], Q6_K: [208] }[name];
    for (let o = W; o < W + bytes; o += block) for (const h of halves) u8[o + h + 1] &= 0x3b;
  }
}

const commit = gitCommit();
const load = loadSampler();
const cases = [];
console.log(
  `native GEMVs${FAST ? " (fast numerics)" : ""}${COLD ? ", weights streamed (--cold)" : ""}, 1 thread, M = ${M}, median of ${RUNS}; ratio = GEMV weight-read GB/s / copy GB/s of the same bytes`,
);
for (const name of WANT) {
  const [fmt, per256] = FORMATS[name];
  const sig = (symbol) => `void ${symbol}(uint64_t base, uint32_t args, uint32_t group)`;
  const gemvs = LIBS.map((l) => l.lib.func(sig(`poot_gemv_${fmt}_${FAST ? "fast_" : ""}none`)));
  const quant = FAST ? LIBS[0].lib.func(sig(`poot_quant_${FAST_QUANT[name]}`)) : null;
  const cpuTotals = LIBS.map(() => 0);
  for (const [K, N] of SHAPES) {
    const bytes = ((K * N) / 256) * per256;
    fill(name, bytes);
    if (quant !== null) {
      u32.set([X, Q, D, S, M, K], ARGS / 4);
      for (let g = 0; g < M; g++) quant(base, ARGS, g);
    }
    const args = (slabs) =>
      quant === null
        ? [X, W, Y, M, N, K, Math.ceil(N / GROUPS)]
        : [Q, D, S, W, Y, ...(slabs.includes(fmt) ? [T, T] : []), M, N, K, Math.ceil(N / GROUPS)];
    const times = LIBS.map(() => []),
      cpus = LIBS.map(() => []),
      copies = [];
    // Run -1 warms up (the copy's first touch of its pages, the kernels' first calls); the libraries alternate.
    for (let r = -1; r < RUNS; r++) {
      const c0 = performance.now();
      u8.copyWithin(COPY, W, W + bytes);
      if (r >= 0) copies.push(performance.now() - c0);
      gemvs.forEach((gemv, i) => {
        u32.set(args(LIBS[i].slabs), ARGS / 4);
        if (COLD) u8.fill(r & 255, COPY, COPY + EVICT);
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        for (let g = 0; g < GROUPS; g++) gemv(base, ARGS, g);
        const t1 = performance.now();
        const c1 = process.cpuUsage(c0);
        if (r >= 0) times[i].push(t1 - t0);
        if (r >= 0) cpus[i].push((c1.user + c1.system) / 1000);
      });
    }
    const copy = (2 * bytes) / median(copies) / 1e6;
    const anchorMetrics = {
      GBps: figure(
        copies.map((ms) => (2 * bytes) / ms / 1e6),
        "GB/s",
      ),
    };
    LIBS.forEach((l, i) => {
      const metrics = {
        GBps: figure(
          times[i].map((ms) => bytes / ms / 1e6),
          "GB/s",
        ),
      };
      const id = `${name}-${l.name}-${K}x${N}`.replace(/[^A-Za-z0-9_.-]+/g, "-");
      const label = `${name} ${l.name} K=${K} N=${N}`;
      const ratios = ratiosOf(metrics, anchorMetrics);
      const model = `K=${K} N=${N}`;
      cases.push({
        id,
        label,
        backend: "cpu",
        format: name,
        numerics: FAST ? "fast" : null,
        model,
        metrics,
        anchor: "copy",
        anchorMetrics,
        ratios,
      });
      const gbps = bytes / median(times[i]) / 1e6;
      cpuTotals[i] += median(cpus[i]);
      console.log(
        `${name.padEnd(5)} ${l.name.padEnd(16)} K=${String(K).padEnd(5)} N=${String(N).padEnd(6)} ${median(times[i]).toFixed(2).padStart(8)} ms (cpu ${median(cpus[i]).toFixed(2).padStart(8)} ms)  ${gbps.toFixed(1).padStart(5)} GB/s  copy ${copy.toFixed(1).padStart(5)} GB/s (read+write)  ratio ${(gbps / copy).toFixed(2)}`,
      );
    });
  }
  // Per CPU-second: the sum over the shapes of each library's median CPU time, relative to the first library's.
  if (LIBS.length > 1)
    console.log(
      `${name.padEnd(5)} per CPU-second vs ${LIBS[0].name}: ${LIBS.slice(1)
        .map((l, i) => `${l.name} ${(cpuTotals[0] / cpuTotals[i + 1]).toFixed(2)}x`)
        .join(", ")}`,
    );
}
const file = writeBenchResult({
  name: NAME,
  commit,
  title: "native GEMVs of each weight format, one thread, Llama-3.2-1B decode shapes, against a copy of the same bytes",
  load: load.summary(),
  settings: {
    runs: RUNS,
    threads: 1,
    m: M,
    numerics: FAST ? "fast" : "exact",
    cold: COLD,
    groups: GROUPS,
    formats: WANT.join(","),
    libraries: LIBS.map((l) => l.name).join(","),
  },
  anchors: [{ id: "copy", name: "copyWithin of the same weight bytes in the same shared memory (read + write bytes)" }],
  cases,
  notes: ["GB/s of a GEMV counts its weight bytes read; the copy counts read + write bytes."],
});
console.log(`wrote ${file}`);
