// Worker side of the Wasm threads test: instantiates the kernel over the shared memory it is given and
// runs the workgroups assigned to it, each with its own argument block (own shared memory and frames).
import { parentPort, workerData } from "node:worker_threads";

const { binary, memory, entry, argsAddr, groups, threads } = workerData;
const nope = () => {
  throw new Error("math import not provided in the threads test");
};
const math = {
  exp: Math.exp,
  log: Math.log,
  tanh: Math.tanh,
  erf: nope,
  sin: Math.sin,
  cos: Math.cos,
  f16_to_f32: nope,
  f32_to_f16: nope,
};
const inst = new WebAssembly.Instance(new WebAssembly.Module(binary), { env: { memory }, math });
const fn = inst.exports[entry];
for (const [x, y, z] of groups) fn(argsAddr, x, y, z, 0, threads);
parentPort.postMessage("done");
