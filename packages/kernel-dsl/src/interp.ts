// The kernel IR interpreter: runs a kernel on the CPU over typed arrays, one workgroup at a time, its threads
// as interleaved generators between barriers and subgroup ops, with race, bounds and divergence checks.

import { KernelRuntimeError } from "./errors.js";
import { lanesOf } from "./ir-types.js";
import type { Kernel, Size } from "./ir.js";
import { compileKernelSource } from "./interp-compile.js";
import type { SyncPoint } from "./interp-compile.js";
import { RaceTracker, arrayClassFor, makeAccessors, poison } from "./interp-memory.js";
import type { Accessors, KernelBuffer } from "./interp-memory.js";
import {
  bf16BitsToF32,
  bitsToF32,
  erf,
  f16BitsToF32,
  f32ToBf16Bits,
  f32ToBits,
  f32ToF16Bits,
  f32ToI32,
  f32ToU32,
} from "./numeric.js";
import { assertValidKernel } from "./validate.js";
import { runWorkgroup, type Thread, type ThreadGen } from "./interp-schedule.js";

export type { KernelBuffer } from "./interp-memory.js";

/** How to run a kernel in the interpreter. */
export interface InterpretLaunch {
  /** Number of workgroups along x, y, z (missing axes are 1). */
  readonly grid: readonly number[];
  /** One typed array per buffer parameter (see `arrayClassFor`: bf16/f16 as Uint16Array bits, vectors flattened). */
  readonly buffers: Readonly<Record<string, KernelBuffer>>;
  /** Values of the uniform parameters. */
  readonly uniforms?: Readonly<Record<string, number>>;
  /** Values of specialization constants (defaults apply otherwise). */
  readonly specs?: Readonly<Record<string, number>>;
  /** Subgroup size, a power of two (default 32). */
  readonly subgroupSize?: number;
}

type ThreadFn = (E: unknown, T: Thread) => ThreadGen;

const compiled = new WeakMap<Kernel, Map<string, { fn: ThreadFn; syncs: readonly SyncPoint[] }>>();

function helpers(kernel: string): Record<string, unknown> {
  const zero = (): never => {
    throw new KernelRuntimeError("division_by_zero", kernel, "integer division or remainder by zero");
  };
  return {
    div: (a: number, b: number, signed: boolean) => (b === 0 ? zero() : signed ? (a / b) | 0 : Math.trunc(a / b) >>> 0),
    rem: (a: number, b: number, signed: boolean) => (b === 0 ? zero() : signed ? (a % b) | 0 : (a % b) >>> 0),
    sel: (c: boolean, a: unknown, b: unknown) => (c ? a : b),
    erf,
    // dot4U8I8 (decision 2320): a's bytes unsigned, b's signed, the sum wrapping in i32.
    dot4U8I8: (c: number, a: number, b: number) => {
      let s = c;
      for (let k = 0; k < 32; k += 8) s += ((a >>> k) & 255) * (((b >>> k) << 24) >> 24);
      return s | 0;
    },
    f2i: f32ToI32,
    f2u: f32ToU32,
    f2b: f32ToBits,
    b2f: bitsToF32,
    pack_bf16: f32ToBf16Bits,
    pack_f16: f32ToF16Bits,
    unpack_bf16: bf16BitsToF32,
    unpack_f16: f16BitsToF32,
    pack_bf16x2: (v: number[]) => (f32ToBf16Bits(v[0] as number) | (f32ToBf16Bits(v[1] as number) << 16)) >>> 0,
    pack_f16x2: (v: number[]) => (f32ToF16Bits(v[0] as number) | (f32ToF16Bits(v[1] as number) << 16)) >>> 0,
    unpack_bf16x2: (u: number) => [bf16BitsToF32(u & 0xffff), bf16BitsToF32(u >>> 16)],
    unpack_f16x2: (u: number) => [f16BitsToF32(u & 0xffff), f16BitsToF32(u >>> 16)],
  };
}

function compile(
  kernel: Kernel,
  spec: (s: Size) => number,
  key: string,
): { fn: ThreadFn; syncs: readonly SyncPoint[] } {
  let perKernel = compiled.get(kernel);
  if (perKernel === undefined) compiled.set(kernel, (perKernel = new Map()));
  const hit = perKernel.get(key);
  if (hit !== undefined) return hit;
  const elems = new Map(kernel.buffers.map((b) => [b.name, b.elem] as const));
  const { source, syncs } = compileKernelSource(kernel.body, spec, (array) => elems.get(array));
  const arrays = [...kernel.buffers.map((b) => b.name), ...kernel.shared.map((s) => s.name)];
  const hoist = arrays
    .map((n) => `const L_${n} = E.L.${n}.load, S_${n} = E.L.${n}.store, A_${n} = E.L.${n}.atomic;`)
    .join("\n");
  const factory = new Function(
    "H",
    "fr",
    `"use strict";\nreturn function* thread(E, T) {\n${hoist}\n${source}\n};`,
  ) as (h: unknown, fr: unknown) => ThreadFn;
  const entry = { fn: factory(helpers(kernel.name), Math.fround), syncs };
  perKernel.set(key, entry);
  return entry;
}

/**
 * Runs `kernel` over `launch.grid` workgroups, writing into `launch.buffers` in place. Throws
 * `KernelRuntimeError` on a bad launch, an out-of-bounds access, a workgroup-memory race, barrier or
 * subgroup divergence, or an integer division by zero. Workgroup memory starts as garbage (NaN / 0xDEADBEEF).
 */
export function interpret(kernel: Kernel, launch: InterpretLaunch): void {
  assertValidKernel(kernel);
  const name = kernel.name;
  const bad = (msg: string): never => {
    throw new KernelRuntimeError("bad_launch", name, msg);
  };
  const specValues = new Map<string, number>();
  for (const s of kernel.specs) {
    const v = launch.specs?.[s.name] ?? s.default;
    if (v === undefined || !Number.isInteger(v) || v < 1) bad(`spec constant ${s.name} needs a positive integer value`);
    specValues.set(s.name, v as number);
  }
  const spec = (s: Size): number => (typeof s === "number" ? s : (specValues.get(s.spec) as number));
  const [wx, wy, wz] = kernel.workgroupSize.map(spec) as [number, number, number];
  const [gx = 1, gy = 1, gz = 1] = launch.grid;
  if (![gx, gy, gz].every((g) => Number.isInteger(g) && g >= 1))
    bad(`grid ${launch.grid.join("x")} must be positive integers`);
  const sgs = launch.subgroupSize ?? 32;
  if (!Number.isInteger(sgs) || sgs < 1 || sgs > 128 || (sgs & (sgs - 1)) !== 0)
    bad(`subgroup size ${sgs} is not a power of two in [1, 128]`);
  const uniforms: Record<string, number> = {};
  for (const u of kernel.uniforms) {
    const v = launch.uniforms?.[u.name];
    if (typeof v !== "number") bad(`missing uniform ${u.name}`);
    const ok =
      u.type === "f32" ||
      (Number.isInteger(v) &&
        (u.type === "u32"
          ? (v as number) >= 0 && (v as number) <= 0xffffffff
          : (v as number) >= -0x80000000 && (v as number) <= 0x7fffffff));
    if (!ok) bad(`uniform ${u.name} = ${v} is not a valid ${u.type}`);
    uniforms[u.name] = u.type === "f32" ? Math.fround(v as number) : (v as number);
  }

  let wg: [number, number, number] = [0, 0, 0];
  const where = (): { workgroup: readonly [number, number, number] } => ({
    workgroup: [...wg] as [number, number, number],
  });
  const L: Record<string, Accessors> = {};
  for (const b of kernel.buffers) {
    const data = launch.buffers[b.name];
    const cls = arrayClassFor(b.elem);
    if (data === undefined) bad(`missing buffer ${b.name}`);
    if ((data as KernelBuffer).constructor.name !== cls.name)
      bad(`buffer ${b.name} (${b.elem}) must be a ${cls.name}, got ${(data as KernelBuffer).constructor.name}`);
    L[b.name] = makeAccessors(name, b.name, b.elem, data as KernelBuffer, undefined, where);
  }
  const trackers: RaceTracker[] = [];
  const sharedData: KernelBuffer[] = [];
  for (const s of kernel.shared) {
    const len = spec(s.length);
    const lanes = lanesOf(s.elem);
    const data = arrayClassFor(s.elem).make(len * lanes);
    sharedData.push(data);
    let race: RaceTracker | undefined;
    if (s.atomic !== true) {
      race = new RaceTracker(len, (index, a, b, what) => {
        throw new KernelRuntimeError(
          "race",
          name,
          `data race on workgroup array ${s.name}[${index}] in workgroup (${wg.join(", ")}): ${what.replace("%a", String(a)).replace("%b", String(b))} with no barrier between`,
          { array: s.name, index, length: len, ...where(), threads: a === -2 ? [b] : [a, b] },
        );
      });
      trackers.push(race);
    }
    L[s.name] = makeAccessors(name, s.name, s.elem, data, race, where);
  }
  const priv = (
    arr: string,
    elem: Parameters<typeof arrayClassFor>[0],
    len: number,
  ): Accessors["load"] & { store: Accessors["store"] } => {
    const lanes = lanesOf(elem);
    const acc = makeAccessors(name, arr, elem, arrayClassFor(elem).make(len * lanes), undefined, where);
    return Object.assign((i: number, t: { li: number }) => acc.load(i, t), { store: acc.store });
  };
  const env = { u: uniforms, L, priv };
  const specKey = [...specValues].map(([k, v]) => `${k}=${v}`).join(",");
  const { fn, syncs } = compile(kernel, spec, specKey);

  const n = wx * wy * wz;
  for (let z = 0; z < gz; z++) {
    for (let y = 0; y < gy; y++) {
      for (let x = 0; x < gx; x++) {
        wg = [x, y, z];
        for (const d of sharedData) poison(d);
        for (const t of trackers) t.epoch++;
        const threads: Thread[] = [];
        const gens: ThreadGen[] = [];
        for (let li = 0; li < n; li++) {
          const l0 = li % wx,
            l1 = Math.floor(li / wx) % wy,
            l2 = Math.floor(li / (wx * wy));
          const T: Thread = {
            li,
            l0,
            l1,
            l2,
            g0: x * wx + l0,
            g1: y * wy + l1,
            g2: z * wz + l2,
            w0: x,
            w1: y,
            w2: z,
            n0: gx,
            n1: gy,
            n2: gz,
            s0: wx,
            s1: wy,
            s2: wz,
            sg: Math.floor(li / sgs),
            lane: li % sgs,
            sgs,
            sv: 0,
            sl: 0,
          };
          threads.push(T);
          gens.push(fn(env, T));
        }
        runWorkgroup(name, threads, gens, syncs, sgs, trackers, wg);
      }
    }
  }
}
