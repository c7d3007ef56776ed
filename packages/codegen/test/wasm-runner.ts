// A minimal host for the Wasm target's calling convention (what the CPU backend does on worker threads):
// lays out the argument block, buffers, shared memory and thread frames in one shared memory and runs
// every workgroup with its whole thread range.

import { erf, f16BitsToF32, f32ToF16Bits, type KernelBuffer } from "@poot/kernel-dsl";
import type { TargetCode } from "@poot/codegen";

type WasmGlobal = {
  Memory: new (d: {
    initial: number;
    maximum: number;
    shared: boolean;
  }) => { buffer: SharedArrayBuffer; grow(n: number): number };
  Module: new (b: Uint8Array) => object;
  Instance: new (m: object, i: object) => { exports: Record<string, (...a: number[]) => void> };
};
const WA = (globalThis as unknown as { WebAssembly: WasmGlobal }).WebAssembly;

/** Inputs of one launch, as for the kernel-dsl interpreter. */
export interface WasmLaunch {
  readonly grid: readonly [number, number, number];
  readonly buffers: Record<string, KernelBuffer>;
  readonly uniforms: Record<string, number>;
  readonly uniformTypes: Record<string, "u32" | "i32" | "f32">;
  /** A byte to fill the scratch frames with first (an executor reuses scratch across kernels); default 0. */
  readonly dirtyScratch?: number;
}

const align = (n: number): number => Math.ceil(n / 16) * 16;

/** Runs an emitted Wasm kernel; buffers are updated in place. */
export function runWasm(code: TargetCode, launch: WasmLaunch): void {
  const abi = code.abi!;
  const [wx, wy, wz] = code.workgroupSize;
  const threads = wx * wy * wz;
  const bufferSlots = code.bindings.filter((b) => b.kind === "buffer");
  const order = code.bindings.find((b) => b.kind === "uniforms")?.order ?? [];
  let at = align(abi["argWords"]! * 4);
  const offsets = bufferSlots.map((b) => {
    const o = at;
    at = align(at + launch.buffers[b.buffer]!.byteLength);
    return o;
  });
  const shared = at;
  at = align(at + abi["sharedBytes"]!);
  const scratch = at;
  at += abi["frameBytes"]! * threads;
  const pages = Math.ceil(at / 65536) + 1;
  const memory = new WA.Memory({ initial: pages, maximum: 65536, shared: true });
  const bytes = new Uint8Array(memory.buffer);
  if (launch.dirtyScratch !== undefined) bytes.fill(launch.dirtyScratch, scratch, at);
  bufferSlots.forEach((b, i) => {
    const src = launch.buffers[b.buffer]!;
    bytes.set(new Uint8Array(src.buffer, src.byteOffset, src.byteLength), offsets[i]!);
  });
  const words = new DataView(memory.buffer);
  offsets.forEach((o, i) => words.setUint32(4 * i, o, true));
  order.forEach((name, i) => {
    const at4 = 4 * (offsets.length + i);
    if (launch.uniformTypes[name] === "f32") words.setFloat32(at4, launch.uniforms[name]!, true);
    else words.setUint32(at4, launch.uniforms[name]! >>> 0, true);
  });
  const tail = offsets.length + order.length;
  launch.grid.forEach((n, a) => words.setUint32(4 * (tail + a), n, true));
  words.setUint32(4 * (tail + 3), shared, true);
  words.setUint32(4 * (tail + 4), scratch, true);
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
  const inst = new WA.Instance(new WA.Module(code.binary!), { env: { memory }, math });
  const fn = inst.exports[code.entryPoint]!;
  for (let z = 0; z < launch.grid[2]; z++)
    for (let y = 0; y < launch.grid[1]; y++) for (let x = 0; x < launch.grid[0]; x++) fn(0, x, y, z, 0, threads);
  bufferSlots.forEach((b, i) => {
    const dst = launch.buffers[b.buffer]!;
    new Uint8Array(dst.buffer, dst.byteOffset, dst.byteLength).set(
      bytes.subarray(offsets[i]!, offsets[i]! + dst.byteLength),
    );
  });
}
