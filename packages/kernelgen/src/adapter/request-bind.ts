// How a synthesized kernel's buffers bind a graph-plan request's accesses (`in<i>`, `out`, named roles), and the
// small parameter checks every request adapter shares.

import type { Access } from "@poot/graph-plan";
import type { SynthKernel } from "../caps.js";
import { KernelgenError } from "../errors.js";
import type { StorageDType } from "../synth/storage.js";

/** What a kernel buffer binds: request input `index`, or the request's output. */
export type BindingSource = { readonly kind: "input"; readonly index: number } | { readonly kind: "output" };

/** A synthesized kernel for a graph-plan request, with its buffer bindings in kernel binding order. */
export interface RequestKernel extends SynthKernel {
  readonly bindings: readonly { readonly buffer: string; readonly source: BindingSource }[];
  /**
   * A scratch f32 buffer of `elements` that is no request access: the backend allocates it (contents undefined),
   * binds it as kernel buffer `buffer` here and in `then`. Only with caps.splitAttention or caps.splitBlockGemv.
   */
  readonly transient?: { readonly buffer: string; readonly elements: number };
  /** A second dispatch launched right after this one (flash-decode's combine); it also binds `transient`. */
  readonly then?: RequestKernel;
}

/** The synthesizer name request errors carry. */
export const SYNTH = "request";
/** Request input `index`. */
export const input = (index: number): BindingSource => ({ kind: "input", index });
/** The request's output. */
export const OUTPUT: BindingSource = { kind: "output" };

/** Bindings by buffer name: `in<i>` -> input i, `out` -> output, and named roles; `transient` is left unbound. */
export function bind(
  k: SynthKernel,
  named: Readonly<Record<string, BindingSource>> = {},
  transient?: string,
): RequestKernel {
  const bindings = k.kernel.buffers
    .filter((p) => p.name !== transient)
    .map((p) => {
      const m = /^in(\d+)$/.exec(p.name);
      const source = named[p.name] ?? (m !== null ? input(Number(m[1])) : p.name === "out" ? OUTPUT : undefined);
      if (source === undefined)
        throw new KernelgenError("bad_param", `kernel buffer ${p.name} has no binding`, {
          synth: SYNTH,
          value: p.name,
        });
      return { buffer: p.name, source };
    });
  return { ...k, bindings };
}

/** A storage dtype parameter, or a one-line bad_dtype error naming `what`. */
export function scalar(d: unknown, what: string): StorageDType {
  if (typeof d !== "string" || !["f32", "bf16", "f16", "i32", "u32", "u8", "bool"].includes(d))
    throw new KernelgenError("bad_dtype", `${what} has dtype ${JSON.stringify(d)}`, { synth: SYNTH, param: what });
  return d as StorageDType;
}

/** Named bindings of the epilogue extras (`e<i>` -> request input `first + i - 1`). */
export function extraBindings(count: number, first: number): Record<string, BindingSource> {
  return Object.fromEntries(Array.from({ length: count }, (_, i) => [`e${i + 1}`, input(first + i)]));
}

/** Strides of `a` broadcast (right-aligned) onto `shape`: size-1 or missing axes get 0. */
export function stridesOnto(a: Access, shape: readonly number[]): number[] {
  const r = shape.length;
  return shape.map((_, d) => {
    const j = d - (r - a.shape.length);
    return j < 0 || a.shape[j] === 1 ? 0 : (a.strides[j] as number);
  });
}
