// A minimal interpreter "executor" for tests: compiles nothing itself, but runs every plan of a graph-plan Program
// through synthesizeRequest + the kernel-dsl interpreter, with one buffer per root value (poisoned until written).

import { f32ToBf16Bits, f32ToF16Bits, isPacked, numel, storageBytes } from "@poot/graph-ir";
import type { DType, Graph, Value } from "@poot/graph-ir";
import type { Program } from "@poot/graph-plan";
import { arrayClassFor, interpret } from "@poot/kernel-dsl";
import type { KernelBuffer } from "@poot/kernel-dsl";
import { importedLaunch, synthesizeRequest } from "@poot/kernelgen";
import type { SynthCaps } from "@poot/kernelgen";
import { toWords } from "./formats.js";

type Host = ArrayLike<number>;

/** Host data (numbers, or bytes for packed) to the storage array a kernel buffer of that dtype holds. */
function toStorage(d: DType, n: number, host: Host): KernelBuffer {
  if (isPacked(d)) return toWords(host as Uint8Array);
  switch (d) {
    case "f32": return Float32Array.from(host);
    case "bf16": return host instanceof Uint16Array ? host : Uint16Array.from(host, (x) => f32ToBf16Bits(x));
    case "f16": return host instanceof Uint16Array ? host : Uint16Array.from(host, (x) => f32ToF16Bits(x));
    case "i32": return Int32Array.from(host);
    case "u32": return Uint32Array.from(host);
    case "u8": case "bool": return Uint8Array.from(host, (x) => (d === "bool" ? (x !== 0 ? 1 : 0) : x));
    default: void n; return d satisfies never;
  }
}

function poisonedFor(v: Value): KernelBuffer {
  if (isPacked(v.dtype)) return new Uint32Array(Math.ceil(storageBytes(v.dtype, numel(v.shape)) / 4)).fill(0xdeadbeef);
  const a = arrayClassFor(v.dtype === "bool" ? "u8" : v.dtype).make(numel(v.shape));
  if (a instanceof Float32Array) a.fill(NaN);
  else if (a instanceof Uint16Array) a.fill(0x7fc1);
  else if (a instanceof Int32Array) a.fill(-559038737);
  else (a as Uint8Array).fill(0xa5);
  return a;
}

/** Result of running a program: outputs and new states as storage arrays, and how many kernels ran. */
export interface ProgramRun {
  readonly outputs: Record<string, KernelBuffer>;
  readonly state: Record<string, KernelBuffer>;
  readonly dispatches: number;
  readonly kinds: Record<string, number>;
}

/** Runs every plan of `prog` in order: synthesized plans through synthesizeRequest, imported ones through importedLaunch. */
export function runProgram(prog: Program, bind: { consts?: Record<string, Host>; slots?: Record<string, Host>; state?: Record<string, Host> }, caps: SynthCaps, after?: (plan: number, out: KernelBuffer) => void): ProgramRun {
  const g: Graph = prog.graph;
  const aliases = prog.buffers().aliases;
  const rootOf = (id: number): number => aliases.get(id) ?? id;
  const bufs = new Map<number, KernelBuffer>();
  const buffer = (id: number): KernelBuffer => {
    const root = rootOf(id);
    let b = bufs.get(root);
    if (b !== undefined) return b;
    const v = g.values[root] as Value;
    const s = v.storage;
    const n = numel(v.shape);
    switch (s.kind) {
      case "const": b = toStorage(v.dtype, n, bind.consts?.[s.key] as Host); break;
      case "slot": b = toStorage(v.dtype, n, bind.slots?.[s.key] as Host); break;
      case "state": b = toStorage(v.dtype, n, bind.state?.[s.key] as Host); break;
      case "computed": b = isPacked(v.dtype) ? toWords(Uint8Array.from(s.data)) : toStorage(v.dtype, n, s.data); break;
      case "device": b = poisonedFor(v); break;
      default: return s satisfies never;
    }
    bufs.set(root, b);
    return b;
  };
  let dispatches = 0;
  const kinds: Record<string, number> = {};
  prog.plans().forEach((plan, i) => {
    const src = plan.kernel;
    if (src.provenance === "none") return;
    const req = src.request;
    // Imported plans launch library kernels from their metadata; synthesized ones are generated from the request.
    const rk = src.provenance === "imported" ? importedLaunch(src.name, src.metadata) : synthesizeRequest(req, caps, `p${i}_${plan.op.toLowerCase()}`);
    if (rk.bindings === undefined) throw new Error(`imported ${plan.op} has no bindings`);
    const buffers: Record<string, KernelBuffer> = {};
    for (const { buffer: name, source } of rk.bindings) buffers[name] = buffer(source.kind === "output" ? req.output.root : (req.inputs[source.index] as { root: number }).root);
    const sg = "subgroupSize" in rk ? rk.subgroupSize : undefined;
    interpret(rk.kernel, { grid: [...rk.grid], buffers, ...("uniforms" in rk ? { uniforms: rk.uniforms } : {}), ...(sg === undefined ? {} : { subgroupSize: sg }) });
    if (src.provenance === "imported") kinds[`imported:${src.name}`] = (kinds[`imported:${src.name}`] ?? 0) + 1;
    after?.(i, buffer(req.output.root));
    dispatches++;
    kinds[req.kind] = (kinds[req.kind] ?? 0) + 1;
  });
  const outputs: Record<string, KernelBuffer> = {};
  for (const o of g.outputs) outputs[o.name] = buffer(o.value);
  const state: Record<string, KernelBuffer> = {};
  for (const s of g.states) state[s.key] = buffer(s.output);
  return { outputs, state, dispatches, kinds };
}
