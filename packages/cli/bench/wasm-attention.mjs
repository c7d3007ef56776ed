// Times the CPU (Wasm) decode attention kernel alone, in CPU time on this thread: the kernel a Llama-3.2-1B decode
// step runs per layer (32 query heads, 8 KV heads, 64 dims, paged KV of 16-row pages, one query), over `--keys`
// visible keys (decision 2480). Prints µs per call (all heads) and ns per (head, key).
// usage: flock /tmp/poot-bench.lock node bench/wasm-attention.mjs [--keys 160] [--reps 400] [--cold]
// (--cold: 64 MB streamed between calls, each call timed alone; SWEEP=0 times the same way warm; CHECK=1: float64 check)
import { parseArgs } from "node:util";
import { lowerWasm } from "@poot/codegen";
import { defaultLowering } from "@poot/executor/lowering";
import { synthesizeAttention } from "@poot/kernelgen";

const { values: o } = parseArgs({
  options: {
    keys: { type: "string", default: "160" },
    reps: { type: "string", default: "400" },
    cold: { type: "boolean", default: false },
  },
});
const keys = Number(o.keys),
  reps = Number(o.reps);
const H = 32,
  Hkv = 8,
  D = 64,
  PS = 16;
const S = Math.ceil(keys / PS) * PS;
const low = defaultLowering("wasm");
const s = synthesizeAttention(
  {
    name: "attn",
    queries: 1,
    heads: H,
    kvHeads: Hkv,
    headDim: D,
    keys: S,
    scale: 1 / 8,
    mask: "causal",
    paged: { pageSize: PS },
    strides: {
      q: [0, D, H * D, 1],
      k: [0, D, Hkv * D, 1],
      v: [0, D, Hkv * D, 1],
      out: [0, D, H * D, 1],
      limit: [0, 0, 1],
    },
  },
  { ...low.synth, serialThreads: true, simdLoads: true }, // as backend-cpu's lowering
);
const code = lowerWasm(s.kernel, low.codegen);
const WA = globalThis.WebAssembly;
const memory = new WA.Memory({ initial: 256, maximum: 65536, shared: true });
const f32 = new Float32Array(memory.buffer),
  i32 = new Int32Array(memory.buffer);
let top = 1024;
const alloc = (bytes) => {
  const at = top;
  top += Math.ceil(bytes / 64) * 64;
  return at;
};
const q = alloc(H * D * 4),
  k = alloc(S * Hkv * D * 4),
  v = alloc(S * Hkv * D * 4),
  lim = alloc(4),
  pages = alloc((S / PS) * 4);
const out = alloc(H * D * 4),
  shared = alloc(Math.max(16, code.abi.sharedBytes)),
  frames = alloc(Math.max(16, code.abi.frameBytes) * 256);
const args = alloc(code.abi.argWords * 4);
let x = 1;
const rnd = () => ((x = (x * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
for (let i = 0; i < H * D; i++) f32[q / 4 + i] = rnd();
for (let i = 0; i < S * Hkv * D; i++) {
  f32[k / 4 + i] = rnd();
  f32[v / 4 + i] = rnd();
}
for (let p = 0; p < S / PS; p++) i32[pages / 4 + p] = S / PS - 1 - p; // pages in reverse pool order
i32[lim / 4] = keys - 1;
const words = [q, k, v, lim, pages, out, H, 1, 1, shared, frames];
if (words.length !== code.abi.argWords)
  throw new Error(`argWords ${code.abi.argWords}, bindings ${JSON.stringify(code.bindings)}`);
words.forEach((w, i) => (i32[args / 4 + i] = w));
const math = {
  exp: Math.exp,
  log: Math.log,
  tanh: Math.tanh,
  erf: (t) => t,
  sin: Math.sin,
  cos: Math.cos,
  f16_to_f32: (t) => t,
  f32_to_f16: (t) => t,
};
const fn = new WA.Instance(new WA.Module(code.binary), { env: { memory }, math }).exports[code.entryPoint];
const call = () => {
  for (let h = 0; h < H; h++) fn(args, h, 0, 0, 0, 1);
};
for (let i = 0; i < 200; i++) call(); // tier up
const best = [];
// --cold: 64 MB streamed between calls (a decode step's GEMV weights pass between two attentions of a layer), each
// call timed alone (wall clock, median).
const sweep = o.cold ? new Float32Array(16 << 20).fill(1) : null;
let sink = 0;
for (let r = 0; r < 5; r++) {
  if (sweep !== null) {
    const t = [];
    for (let i = 0; i < Math.min(reps, 40); i++) {
      if (process.env.SWEEP !== "0") for (let e = 0; e < sweep.length; e += 16) sink += sweep[e];
      const t0 = performance.now();
      call();
      t.push((performance.now() - t0) * 1000);
    }
    best.push(t.sort((a, b) => a - b)[t.length >> 1]);
    continue;
  }
  const c0 = process.cpuUsage();
  for (let i = 0; i < reps; i++) call();
  const c = process.cpuUsage(c0);
  best.push((c.user + c.system) / reps);
}
if (sink < 0) console.log(sink);
const us = Math.min(...best);
console.log(
  `attention ${H}x${Hkv} heads D=${D} keys=${keys}: ${us.toFixed(1)} us/call (min of 5 ${o.cold ? "median wall times, cold caches" : "CPU-time reps"}), ${((us * 1000) / (H * keys)).toFixed(1)} ns per (head, key); out[0..3] ${Array.from(f32.subarray(out / 4, out / 4 + 4), (t) => t.toFixed(6)).join(" ")}`,
);
if (process.env.CHECK) {
  console.log(JSON.stringify(code.bindings), code.abi);
  let err = 0;
  for (let h = 0; h < H; h++) {
    const kvh = Math.floor(h / (H / Hkv));
    const sc = [];
    for (let j = 0; j < keys; j++) {
      const row = i32[pages / 4 + Math.floor(j / PS)] * PS + (j % PS);
      let d = 0;
      for (let e = 0; e < D; e++) d += f32[q / 4 + h * D + e] * f32[k / 4 + (row * Hkv + kvh) * D + e];
      sc.push([d / 8, row]);
    }
    const m = Math.max(...sc.map((t) => t[0]));
    const w = sc.map(([t, row]) => [Math.exp(t - m), row]);
    const den = w.reduce((a, t) => a + t[0], 0);
    for (let e = 0; e < D; e++) {
      let acc = 0;
      for (const [p, row] of w) acc += p * f32[v / 4 + (row * Hkv + kvh) * D + e];
      err = Math.max(err, Math.abs(acc / den - f32[out / 4 + h * D + e]));
    }
  }
  console.log("max abs err vs float64", err);
}
