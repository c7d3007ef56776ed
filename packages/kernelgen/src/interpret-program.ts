// The reference execution of a compiled Program: every plan's kernel (synthesized from its request, or imported
// and launched from its metadata) runs in the kernel-dsl interpreter, one buffer per root value.

import {
  bf16BitsToF32,
  f16BitsToF32,
  f32ToBf16Bits,
  f32ToF16Bits,
  isPacked,
  numel,
  opContext,
  storageBytes,
} from "@poot/graph-ir";
import type { DType, EvalBindings, Graph, HostData, TensorData, Value } from "@poot/graph-ir";
import { PLAN_OPS } from "@poot/graph-plan";
import type { Program } from "@poot/graph-plan";
import { arrayClassFor, interpret } from "@poot/kernel-dsl";
import type { KernelBuffer } from "@poot/kernel-dsl";
import { planKernel } from "./adapter/plan-kernel.js";
import { synthCapsFrom } from "./adapter/request.js";
import type { SynthCaps } from "./caps.js";
import { KernelgenError, invariant } from "./errors.js";

/** Options of `interpretProgram`. */
export interface InterpretProgramOptions {
  /** Caps to synthesize for (default: the program target's DeviceCaps). */
  readonly caps?: SynthCaps;
  /** Called after each launched plan with its index and its output's root buffer (for debugging and tests). */
  readonly onPlan?: (plan: number, output: KernelBuffer) => void;
}

/** Result of `interpretProgram`: outputs and new states as storage arrays (bf16/f16 as bits, packed as u32 words). */
export interface ProgramRun {
  readonly outputs: Readonly<Record<string, KernelBuffer>>;
  readonly state: Readonly<Record<string, KernelBuffer>>;
  /** Kernels launched. */
  readonly dispatches: number;
  /** Launches per kernel kind (and `imported:<name>` per imported kernel). */
  readonly kinds: Readonly<Record<string, number>>;
}

/** Little-endian u32 words of `bytes`, zero-padded to a multiple of 4 (how packed data reaches kernels). */
export function bytesToWords(bytes: Uint8Array): Uint32Array {
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  return new Uint32Array(padded.buffer);
}

/** Host data to the storage array a kernel buffer of dtype `d` holds. */
function toStorage(d: DType, host: HostData): KernelBuffer {
  if (isPacked(d)) return bytesToWords(host as Uint8Array);
  switch (d) {
    case "f32":
      return Float32Array.from(host);
    case "bf16":
      return host instanceof Uint16Array ? host : Uint16Array.from(host, (x) => f32ToBf16Bits(x));
    case "f16":
      return host instanceof Uint16Array ? host : Uint16Array.from(host, (x) => f32ToF16Bits(x));
    case "i32":
      return Int32Array.from(host);
    case "u32":
      return Uint32Array.from(host);
    case "u8":
      return Uint8Array.from(host);
    case "bool":
      return Uint8Array.from(host, (x) => (x !== 0 ? 1 : 0));
    default:
      return d satisfies never;
  }
}

/** A device buffer poisoned so that an element no kernel wrote is visible (NaN, 0xDEADBEEF, ...). */
function poisonedFor(v: Value): KernelBuffer {
  if (isPacked(v.dtype)) return new Uint32Array(Math.ceil(storageBytes(v.dtype, numel(v.shape)) / 4)).fill(0xdeadbeef);
  const a = arrayClassFor(v.dtype === "bool" ? "u8" : v.dtype).make(numel(v.shape));
  if (a instanceof Float32Array) a.fill(NaN);
  else if (a instanceof Uint16Array) a.fill(0x7fc1);
  else if (a instanceof Int32Array) a.fill(-559038737);
  else (a as Uint8Array).fill(0xa5);
  return a;
}

/**
 * Runs every plan of `prog` in order in the interpreter: synthesized plans through `synthesizeRequest`, imported ones
 * through `importedLaunch`. Bindings are as for graph-ir's `evaluate` (consts, slots, state by key). Device buffers
 * start poisoned. Slow (an interpreter), exact in its semantics: the reference every executor is checked against.
 */
export function interpretProgram(
  prog: Program,
  bindings: EvalBindings,
  options: InterpretProgramOptions = {},
): ProgramRun {
  const g = prog.graph;
  const tc = prog.target.caps;
  const caps = options.caps ?? ("maxWorkgroupSize" in tc && "maxWorkgroupDims" in tc ? synthCapsFrom(tc) : undefined);
  if (caps === undefined)
    throw new KernelgenError("bad_param", "the target has no workgroup caps; pass options.caps", {
      synth: "interpretProgram",
      param: "caps",
    });
  const aliases = prog.buffers().aliases;
  const rootOf = (id: number): number => aliases.get(id) ?? id;
  const bufs = new Map<number, KernelBuffer>();
  const host = (kind: string, key: string, v: Value): HostData => {
    const src = kind === "const" ? bindings.consts : kind === "slot" ? bindings.slots : bindings.state;
    const h = typeof src === "function" ? src(key, v) : src?.[key];
    if (h === undefined)
      throw new KernelgenError("bad_param", `no data bound for ${kind} ${key}`, {
        synth: "interpretProgram",
        param: key,
      });
    return h;
  };
  const buffer = (id: number): KernelBuffer => {
    const root = rootOf(id);
    let b = bufs.get(root);
    if (b !== undefined) return b;
    const v = g.values[root] as Value;
    const s = v.storage;
    switch (s.kind) {
      case "const":
      case "slot":
      case "state":
        b = toStorage(v.dtype, host(s.kind, s.key, v));
        break;
      case "computed":
        b = toStorage(v.dtype, s.data as HostData);
        break;
      case "device":
        b = poisonedFor(v);
        break;
      default:
        return s satisfies never;
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
    // The shared plan -> kernel mapping (imported where it launches, else synthesized after exact rewrites).
    const rk = planKernel(src, caps, `p${i}_${plan.op.toLowerCase()}`);
    // A split kernel (flash-decode) writes a poisoned transient that its `then` dispatch reads and that binds the output.
    const transient =
      rk.transient === undefined
        ? {}
        : { [rk.transient.buffer]: Float32Array.from({ length: rk.transient.elements }, () => NaN) };
    for (const k of rk.then === undefined ? [rk] : [rk, rk.then]) {
      const buffers: Record<string, KernelBuffer> = { ...transient };
      const roots = k.bindings.map(({ source }) =>
        source.kind === "output" ? req.output.root : (req.inputs[source.index] as { root: number }).root,
      );
      // A written buffer is bound once (WebGPU rejects a writable binding that aliases another one).
      invariant(
        roots.filter((r) => r === req.output.root).length === (k === rk && rk.then !== undefined ? 0 : 1),
        `plan ${i} (${plan.op}) binds its output buffer ${k === rk && rk.then !== undefined ? "before its last dispatch" : "twice"}`,
      );
      k.bindings.forEach(
        ({ buffer: name }, j) =>
          (buffers[name] = wordView(buffer(roots[j] as number), k.kernel.buffers.find((p) => p.name === name)?.elem)),
      );
      const uniforms = Object.keys(k.uniforms).length > 0 ? { uniforms: k.uniforms } : {};
      interpret(k.kernel, {
        grid: [...k.grid],
        buffers,
        ...uniforms,
        ...(k.subgroupSize === undefined ? {} : { subgroupSize: k.subgroupSize }),
      });
      dispatches++;
    }
    options.onPlan?.(i, buffer(req.output.root));
    const tag = src.provenance === "imported" && rk.fallback === undefined ? `imported:${src.name}` : req.kind;
    kinds[tag] = (kinds[tag] ?? 0) + 1;
  });
  // An output or state that is a view (no dispatch) is gathered from its root buffer on the host.
  const outputs: Record<string, KernelBuffer> = {};
  for (const o of g.outputs) outputs[o.name] = materialize(g, o.value, rootOf, buffer);
  const state: Record<string, KernelBuffer> = {};
  for (const s of g.states) state[s.key] = materialize(g, s.output, rootOf, buffer);
  return { outputs, state, dispatches, kinds };
}

const VIEWS = new Set(["Reshape", "Slice", "Broadcast", "Transpose"]);

/** Storage array -> evaluator data (16-bit floats widened from their bits). */
function toTensorData(d: DType, a: KernelBuffer): TensorData {
  if (d === "bf16" || d === "f16")
    return Float64Array.from(a as Uint16Array, d === "bf16" ? bf16BitsToF32 : f16BitsToF32);
  if (d === "f32") return Float64Array.from(a as Float32Array);
  return a as TensorData;
}

/** The storage array of value `id`: its root buffer, or for a view the root gathered through the view ops. */
function materialize(
  g: Graph,
  id: number,
  rootOf: (id: number) => number,
  buffer: (id: number) => KernelBuffer,
): KernelBuffer {
  if (rootOf(id) === id) return buffer(id);
  const k = g.eqns.findIndex((e) => e.out === id);
  const e = g.eqns[k];
  // Not a view (an in-place write into its root): the root holds the whole value.
  if (e === undefined || !VIEWS.has(e.op)) return buffer(id);
  const src = e.inputs[0] as number;
  const v = g.values[id] as Value;
  const sv = g.values[src] as Value;
  if (isPacked(v.dtype))
    throw new KernelgenError("bad_param", `cannot gather a packed view (value ${id})`, {
      synth: "interpretProgram",
      value: id,
    });
  const data = toTensorData(sv.dtype, materialize(g, src, rootOf, buffer));
  const out = (PLAN_OPS[e.op] as NonNullable<(typeof PLAN_OPS)[string]>).evaluate(
    [{ dtype: sv.dtype, shape: sv.shape, data }],
    e.params,
    v,
    opContext(e.op, [src, id], k),
  );
  return toStorage(v.dtype, out as HostData);
}

/** A 16-bit storage array bound as 32-bit words (16-byte vector loads of bf16/f16 weights read u32 words), or packed words as bytes: a view, not a copy. */
function wordView(b: KernelBuffer, elem: string | undefined): KernelBuffer {
  // Packed data (u32 words) bound as bytes (the CPU kernels' u8 view of packed weights): a view, not a copy.
  if (elem === "u8" && b instanceof Uint32Array) return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  if (elem?.endsWith("<u32>") !== true || !(b instanceof Uint16Array) || b.byteOffset % 4 !== 0 || b.length % 2 !== 0)
    return b;
  return new Uint32Array(b.buffer, b.byteOffset, b.length / 2);
}
