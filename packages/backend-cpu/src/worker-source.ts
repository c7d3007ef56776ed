// The phase loop every thread of the pool runs (the host thread too), and the worker's main, as JavaScript source:
// node workers start from this text (`eval: true`), browser workers from a Blob of it; no separate file ships.

import { NATIVE_THREAD_SOURCE } from "./native/thread-source.js";

/** Words of the control block (an Int32Array window of the shared memory, at `ctl`). */
export const CTL = {
  /** The published phase sequence number: phase `SEQ - BASE` of the current region runs. */
  SEQ: 0,
  /** Sequence number of the region's first phase. */
  BASE: 1,
  /** Phases in the region; `SEQ === BASE + NPH` means the region is complete. */
  NPH: 2,
  /** Word index of the region's first schedule row. */
  ROWS: 3,
  /** What the region is: 0 phases to run, 1 load kernels from the port, 2 exit. */
  KIND: 4,
  /** Workers that finished a load (or started). */
  ACK: 5,
  /** Phase-order check on (1): a chunk of row r > 0 checks that every chunk of row r - 1 completed. */
  CHECK: 6,
  /** 1 + the first row whose chunk started before its predecessor completed; 0 when none. */
  VIOLATION: 7,
  /** Planted fault for tests (1): the claimer of a row's first chunk publishes the next row at once. */
  PLANT_EARLY: 8,
  /** 1 + the row whose kernel threw; 0 when none (the message is posted on the thread's port). */
  ERROR: 9,
  /** Bumped when the memory grows, so threads refresh their views. */
  GROWN: 10,
  /** Step profile on: the f64 index of the profile area (see {@link PROFILE_ROWS}); 0 when off. */
  PROF: 11,
  /** Words in the block. */
  WORDS: 16,
} as const;

/** Words of one schedule row (one phase: a kernel dispatch or a copy). */
export const ROW = {
  /** Kernel id in the pool's table, or -1 for a copy. */
  KERNEL: 0,
  /** Byte address of thread 0's argument block (copy: source address). */
  ARGS: 1,
  /** Bytes between consecutive threads' argument blocks (copy: destination address). */
  STRIDE: 2,
  /** Workgroups along x (copy: bytes). */
  GX: 3,
  /** Workgroups along y. */
  GY: 4,
  /** Workgroups in total. */
  GROUPS: 5,
  /** Workgroups per chunk. */
  CHUNK: 6,
  /** Chunks (claims) in the phase. */
  CHUNKS: 7,
  /** Threads of one workgroup (the kernel runs `[0, THREADS)` of each workgroup it is called for). */
  THREADS: 8,
  /** Claimed chunks (reset to 0 just before the row is published; starts exhausted). */
  CLAIM: 9,
  /** Completed chunks (reset with CLAIM). */
  DONE: 10,
  /** 1 when the row before this one is its predecessor (the phase-order check applies), else 0. */
  CHAINED: 11,
  /** Words per row. */
  WORDS: 12,
} as const;

/**
 * Rows of a region the step profile records (later rows are not timed). The profile area holds f64 columns of this
 * many entries: wall time per row (summed by the thread that publishes the next row), the row's last publish time,
 * then per thread its busy time (running chunks) and its wait time (spinning or sleeping on the row), in ms.
 */
export const PROFILE_ROWS = 1024;

/** A claim counter value that no row can hand out: rows start exhausted until they are published. */
export const EXHAUSTED = 0x3fffffff;

// The shared loop. `st` = { i32: Int32Array over the whole memory, ctl: word index of the control block,
// fns: kernel exports by id, u8: Uint8Array over the memory, thread: this thread's index, port: for errors }.
const CORE = String.raw`
const C = ${JSON.stringify(CTL)}, R = ${JSON.stringify(ROW)}, PR = ${PROFILE_ROWS};
const SPIN = 4000;
const F32 = new Float32Array(1), U32 = new Uint32Array(F32.buffer);
function f32_to_f16(x) {
  F32[0] = x;
  const b = U32[0], sign = (b >>> 16) & 0x8000, exp = (b >>> 23) & 0xff, man = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (man !== 0 ? 0x200 | (man >>> 13) : 0);
  const e = exp - 112;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const full = man | 0x800000, shift = 14 - e, half = 1 << (shift - 1), rest = full & ((1 << shift) - 1);
    let m = full >>> shift;
    if (rest > half || (rest === half && (m & 1) === 1)) m++;
    return sign | m;
  }
  let h = (e << 10) | (man >>> 13);
  const rest = man & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1) === 1)) h++;
  return sign | h;
}
function f16_to_f32(bits) {
  const h = bits & 0xffff, sign = h & 0x8000 ? -1 : 1, exp = (h >>> 10) & 0x1f, man = h & 0x3ff;
  if (exp === 0) return sign * man * 2 ** -24;
  if (exp === 0x1f) return man === 0 ? sign * Infinity : NaN;
  return sign * (1024 + man) * 2 ** (exp - 25);
}
function erf(x) {
  const z = Math.abs(x);
  if (z < 0.5) {
    let term = x, sum = x;
    for (let n = 1; n < 12; n++) { term *= (-x * x) / n; sum += term / (2 * n + 1); }
    return sum * 1.1283791670955126;
  }
  const t = 1 / (1 + 0.5 * z);
  const r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? 1 - r : r - 1;
}
const wasmMath = { exp: Math.exp, log: Math.log, tanh: Math.tanh, erf, sin: Math.sin, cos: Math.cos, f16_to_f32, f32_to_f16 };

function waitChange(i32, at, seen) {
  for (let s = 0; s < SPIN; s++) if (Atomics.load(i32, at) !== seen) return;
  Atomics.wait(i32, at, seen, 50);
}

// Profile clock: comparable across threads (each thread's performance.now() has its own origin).
function now() {
  return performance.timeOrigin + performance.now();
}

function profilePublish(pf, at, idx) {
  if (idx >= PR) return;
  const t = now();
  pf[at + idx] += t - pf[at + PR + idx];
  if (idx + 1 < PR) pf[at + PR + idx + 1] = t;
}

function publish(i32, ctl, rows, next, n, idx, pf, at) {
  if (pf !== null) profilePublish(pf, at, idx);
  if (idx + 1 < n) {
    const r = rows + (idx + 1) * R.WORDS;
    Atomics.store(i32, r + R.DONE, 0);
    Atomics.store(i32, r + R.CLAIM, 0);
  }
  Atomics.store(i32, ctl + C.SEQ, next);
  Atomics.notify(i32, ctl + C.SEQ);
}

function runChunk(st, row, k) {
  const i32 = st.i32, kernel = i32[row + R.KERNEL];
  if (kernel < 0) {
    const src = i32[row + R.ARGS], dst = i32[row + R.STRIDE];
    st.u8.copyWithin(dst, src, src + i32[row + R.GX]);
    return;
  }
  const fn = st.fns[kernel], args = i32[row + R.ARGS] + st.thread * i32[row + R.STRIDE];
  const gx = i32[row + R.GX], gy = i32[row + R.GY], threads = i32[row + R.THREADS], chunk = i32[row + R.CHUNK];
  const first = k * chunk, last = Math.min(first + chunk, i32[row + R.GROUPS]);
  for (let w = first; w < last; w++) {
    const x = w % gx, yz = (w - x) / gx, y = yz % gy;
    fn(args, x, y, (yz - y) / gy, 0, threads);
  }
}

// Runs claimed chunks of the current region until it is complete; returns the final sequence number.
function participate(st) {
  const ctl = st.ctl;
  // The profile switch is read once per region; its view is made on the first claim (the memory may have grown).
  const at = Atomics.load(st.i32, ctl + C.PROF);
  let pf = null;
  for (;;) {
    // The memory may have grown since this thread's views were made (staging between two regions).
    if (Atomics.load(st.i32, ctl + C.GROWN) !== st.grown) st.refresh();
    const i32 = st.i32;
    const seq = Atomics.load(i32, ctl + C.SEQ);
    const base = Atomics.load(i32, ctl + C.BASE), n = Atomics.load(i32, ctl + C.NPH), idx = seq - base;
    if (idx < 0 || idx >= n) return seq;
    if (at !== 0 && pf === null) pf = new Float64Array(i32.buffer);
    const mine = pf !== null && idx < PR ? at + (2 + 2 * st.thread) * PR + idx : -1;
    const row = Atomics.load(i32, ctl + C.ROWS) + idx * R.WORDS;
    const chunks = i32[row + R.CHUNKS];
    const k = Atomics.add(i32, row + R.CLAIM, 1);
    if (k >= chunks) {
      const t0 = mine >= 0 ? now() : 0;
      waitChange(i32, ctl + C.SEQ, seq);
      if (mine >= 0) pf[mine + PR] += now() - t0;
      continue;
    }
    const plant = Atomics.load(i32, ctl + C.PLANT_EARLY) === 1;
    if (plant && k === 0) publish(i32, ctl, Atomics.load(i32, ctl + C.ROWS), seq + 1, n, idx, pf, at);
    if (Atomics.load(i32, ctl + C.CHECK) === 1 && i32[row + R.CHAINED] === 1) {
      const prev = row - R.WORDS;
      if (Atomics.load(i32, prev + R.DONE) !== i32[prev + R.CHUNKS]) Atomics.compareExchange(i32, ctl + C.VIOLATION, 0, idx + 1);
    }
    const t0 = mine >= 0 ? now() : 0;
    try {
      runChunk(st, row, k);
    } catch (e) {
      if (Atomics.compareExchange(i32, ctl + C.ERROR, 0, idx + 1) === 0 && st.port) st.port.postMessage(String(e && e.stack || e));
    }
    if (mine >= 0) pf[mine] += now() - t0;
    const d = Atomics.add(i32, row + R.DONE, 1) + 1;
    if (d === chunks && !plant) publish(i32, ctl, Atomics.load(i32, ctl + C.ROWS), seq + 1, n, idx, pf, at);
  }
}
`;

/** The host's copy of the loop: `participate(st)` and the Wasm math imports, built from the same source as the workers'. */
export const HOST_CORE_SOURCE = `${CORE}\nreturn { participate, wasmMath, now };`;

// A worker thread's main over the core, the same on every platform. `recv()` returns the next load message, or
// undefined when none has arrived yet (a browser worker reads messages only between turns of its event loop): the
// returned `loop` then returns false and is called again once the message is in. `loop` returns true on exit.
const THREAD_MAIN = String.raw`
function threadMain(memory, ctl, thread, recv, report) {
  const st = { i32: new Int32Array(memory.buffer), u8: new Uint8Array(memory.buffer), ctl, fns: [], thread, port: { postMessage: report }, grown: 0, refresh: null };
  st.refresh = () => {
    st.grown = Atomics.load(st.i32, ctl + C.GROWN);
    st.i32 = new Int32Array(memory.buffer);
    st.u8 = new Uint8Array(memory.buffer);
  };
  let seen = Atomics.load(st.i32, ctl + C.SEQ);
  Atomics.add(st.i32, ctl + C.ACK, 1);
  Atomics.notify(st.i32, ctl + C.ACK);
  return function loop() {
    for (;;) {
      while (Atomics.load(st.i32, ctl + C.SEQ) === seen) Atomics.wait(st.i32, ctl + C.SEQ, seen);
      if (Atomics.load(st.i32, ctl + C.GROWN) !== st.grown) st.refresh();
      const kind = Atomics.load(st.i32, ctl + C.KIND);
      if (kind === 2) return true;
      if (kind === 1) {
        const m = recv();
        if (m === undefined) return false;
        for (const [id, mod, entry] of m) st.fns[id] = mod instanceof WebAssembly.Module ? new WebAssembly.Instance(mod, { env: { memory }, math: wasmMath }).exports[entry] : nativeKernel(mod);
        seen = Atomics.load(st.i32, ctl + C.SEQ);
        Atomics.add(st.i32, ctl + C.ACK, 1);
        Atomics.notify(st.i32, ctl + C.ACK);
        continue;
      }
      seen = participate(st);
    }
  };
}
`;

/** A node worker_threads worker's source (`eval: true`): `workerData` = { memory, ctl, thread, port }. */
export const NODE_WORKER_SOURCE = `"use strict";
const { workerData, receiveMessageOnPort } = require("node:worker_threads");
${CORE}
${NATIVE_THREAD_SOURCE}
${THREAD_MAIN}
const { memory, ctl, thread, port } = workerData;
threadMain(memory, ctl, thread, () => receiveMessageOnPort(port)?.message ?? [], (text) => port.postMessage(text))();
port.close();
`;

/** A browser Web Worker's source (a classic worker from a Blob URL): the first message is { memory, ctl, thread }, later ones are loads. */
export const BROWSER_WORKER_SOURCE = `"use strict";
${CORE}
function nativeKernel() { throw new Error("native kernels do not run in a browser"); }
${THREAD_MAIN}
const inbox = [];
let loop = null;
self.onmessage = (e) => {
  if (loop === null) loop = threadMain(e.data.memory, e.data.ctl, e.data.thread, () => inbox.shift(), (text) => self.postMessage(text));
  else inbox.push(e.data);
  if (loop()) self.close();
};
`;
