// Worker side of the CPU GEMV bench: instantiates one Wasm module over the shared memory and, each time the
// main thread bumps the generation word, runs its workgroups (or the bandwidth probe) and counts itself done.
import { workerData } from "node:worker_threads";
import { f16BitsToF32, f32ToF16Bits } from "../../kernel-dsl/dist/index.js";

const { binary, memory, entry, argsAddr, groups, threads, ctlAddr, probe } = workerData;
const erf = (x) => {
  throw new Error(`erf(${x}) is not used by GEMV kernels`);
};
const math = {
  exp: Math.exp,
  log: Math.log,
  tanh: Math.tanh,
  erf,
  sin: Math.sin,
  cos: Math.cos,
  f16_to_f32: f16BitsToF32,
  f32_to_f16: f32ToF16Bits,
};
const inst = new WebAssembly.Instance(new WebAssembly.Module(binary), { env: { memory }, math });
const fn = inst.exports[entry];
// ctl words: [0] generation, [1] workers done, [2] stop.
const ctl = new Int32Array(memory.buffer, ctlAddr, 4);
let seen = 0;
for (;;) {
  Atomics.wait(ctl, 0, seen);
  seen = Atomics.load(ctl, 0);
  if (Atomics.load(ctl, 2) !== 0) break;
  if (probe) fn(probe.addr, probe.bytes, probe.out);
  else for (let i = 0; i < groups.length; i += 3) fn(argsAddr, groups[i], groups[i + 1], groups[i + 2], 0, threads);
  Atomics.add(ctl, 1, 1);
  Atomics.notify(ctl, 1);
}
