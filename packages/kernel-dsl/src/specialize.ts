// Specialization: substitutes values for a kernel's spec constants (in sizes and expressions), so a target
// without specialization constants (PTX, AMDGPU, Wasm) sees only literals.

import { KernelValidationError } from "./errors.js";
import type { Expr, Kernel, Size, Stmt } from "./ir.js";
import { assertValidKernel } from "./validate.js";

/**
 * Returns `kernel` with every spec constant replaced by `values[name]` (or its default) and `specs` empty.
 * Throws `KernelValidationError` (code `bad_size`) when a value is missing or not a positive integer.
 */
export function specialize(kernel: Kernel, values: Readonly<Record<string, number>> = {}): Kernel {
  const resolved = new Map<string, number>();
  for (const [i, s] of kernel.specs.entries()) {
    const v = values[s.name] ?? s.default;
    if (v === undefined || !Number.isInteger(v) || v < 1 || v > 0xffffffff) {
      throw new KernelValidationError(kernel.name, [
        {
          code: "bad_size",
          path: `specs[${i}]`,
          message: `spec constant ${s.name} needs a positive integer value, got ${String(v)}`,
        },
      ]);
    }
    resolved.set(s.name, v);
  }
  const size = (s: Size): number => (typeof s === "number" ? s : (resolved.get(s.spec) as number));
  const ex = (e: Expr): Expr => {
    switch (e.k) {
      case "spec":
        return { k: "const", type: "u32", value: resolved.get(e.name) as number };
      case "const":
      case "local":
      case "param":
      case "builtin":
        return e;
      case "load":
      case "load4":
        return { ...e, index: ex(e.index) };
      case "unary":
      case "cast":
      case "bitcast":
      case "pack":
      case "unpack":
      case "extract":
        return { ...e, a: ex(e.a) } as Expr;
      case "binary":
      case "cmp":
        return { ...e, a: ex(e.a), b: ex(e.b) } as Expr;
      case "select":
        return { ...e, cond: ex(e.cond), a: ex(e.a), b: ex(e.b) };
      case "call":
        return { ...e, args: e.args.map(ex) };
      case "vec":
        return { ...e, elems: e.elems.map(ex) };
      default:
        e satisfies never;
        return e;
    }
  };
  const st = (s: Stmt): Stmt => {
    switch (s.s) {
      case "let":
        return { ...s, value: ex(s.value) };
      case "var":
        return { ...s, init: ex(s.init) };
      case "array":
        return { ...s, length: size(s.length) };
      case "assign":
        return { ...s, value: ex(s.value) };
      case "store":
        return { ...s, index: ex(s.index), value: ex(s.value) };
      case "for":
        return { ...s, start: ex(s.start), end: ex(s.end), step: ex(s.step), body: s.body.map(st) };
      case "while":
        return { ...s, cond: ex(s.cond), body: s.body.map(st) };
      case "if":
        return { ...s, cond: ex(s.cond), then: s.then.map(st), else: s.else.map(st) };
      case "break":
      case "continue":
      case "barrier":
      case "return":
        return s;
      case "subgroup":
        return { ...s, value: ex(s.value), ...(s.lane === undefined ? {} : { lane: ex(s.lane) }) };
      case "mma":
        return { ...s, a: ex(s.a), b: ex(s.b), c: ex(s.c) };
      case "atomic":
        return {
          ...s,
          index: ex(s.index),
          ...(s.value === undefined ? {} : { value: ex(s.value) }),
          ...(s.compare === undefined ? {} : { compare: ex(s.compare) }),
        };
      default:
        s satisfies never;
        return s;
    }
  };
  return assertValidKernel({
    ...kernel,
    workgroupSize: kernel.workgroupSize.map(size) as [number, number, number],
    specs: [],
    shared: kernel.shared.map((a) => ({ ...a, length: size(a.length) })),
    body: kernel.body.map(st),
  });
}
