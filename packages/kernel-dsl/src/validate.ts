// The kernel IR validator: names, scopes, types, access modes, atomics, control flow and sizes.
// Lists every issue with its code and node path; codegen and the interpreter may assume a valid kernel.

import { KernelValidationError } from "./errors.js";
import type { KernelValidationCode, KernelValidationIssue } from "./errors.js";
import { isVecType } from "./ir-types.js";
import type { Kernel, Size, Stmt } from "./ir.js";
import { MMA_LAYOUTS, mmaOperandTypes } from "./mma.js";
import { checkExpr, isValueType } from "./validate-expr.js";
import type { Binding, ExprContext } from "./validate-expr.js";

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ELEM_TYPES = new Set([
  "i32",
  "u32",
  "f32",
  "vec2<f32>",
  "vec4<f32>",
  "vec2<i32>",
  "vec4<i32>",
  "vec2<u32>",
  "vec4<u32>",
  "bf16",
  "f16",
  "u8",
  "i8",
]);

/** Returns every problem in `kernel` (empty when valid). */
export function validateKernel(kernel: Kernel): KernelValidationIssue[] {
  const issues: KernelValidationIssue[] = [];
  const report = (code: KernelValidationCode, path: string, message: string): void => {
    issues.push({ code, path, message });
  };
  const names = new Set<string>();
  const global = new Map<string, Binding>();
  const declare = (name: string, b: Binding, path: string): void => {
    if (typeof name !== "string" || !IDENT.test(name)) report("bad_name", path, `${String(name)} is not an identifier`);
    if (names.has(name)) report("duplicate_name", path, `${name} is already declared`);
    names.add(name);
    global.set(name, b);
  };
  if (!IDENT.test(kernel.name)) report("bad_name", "name", `${kernel.name} is not an identifier`);

  kernel.specs.forEach((s, i) => {
    declare(s.name, { kind: "spec" }, `specs[${i}]`);
    if (s.default !== undefined && !(Number.isInteger(s.default) && s.default > 0))
      report("bad_size", `specs[${i}].default`, "default must be a positive integer");
  });
  const checkSize = (size: Size, path: string): void => {
    if (typeof size === "number") {
      if (!Number.isInteger(size) || size < 1) report("bad_size", path, `${size} is not a positive integer`);
    } else if (global.get(size.spec)?.kind !== "spec") report("bad_size", path, `no spec constant named ${size.spec}`);
  };
  if (kernel.workgroupSize.length !== 3) report("bad_size", "workgroupSize", "workgroup size needs 3 dimensions");
  kernel.workgroupSize.forEach((s, i) => checkSize(s, `workgroupSize[${i}]`));

  const bindings = new Set<number>();
  kernel.buffers.forEach((b, i) => {
    const path = `buffers[${i}]`;
    const atomic = b.atomic === true;
    declare(
      b.name,
      {
        kind: "array",
        space: "global",
        elem: b.elem,
        atomic,
        readable: b.access !== "write",
        writable: b.access !== "read",
      },
      path,
    );
    if (!Number.isInteger(b.binding) || b.binding < 0 || bindings.has(b.binding))
      report("bad_binding", `${path}.binding`, `binding ${b.binding} is negative, fractional or reused`);
    bindings.add(b.binding);
    if (!ELEM_TYPES.has(b.elem))
      report("type_mismatch", `${path}.elem`, `${String(b.elem)} is not a storage element type`);
    if (atomic && !["u32", "i32", "f32"].includes(b.elem))
      report("atomic_misuse", `${path}.elem`, `atomic buffer of ${b.elem}`);
    if (!["read", "write", "read_write"].includes(b.access))
      report("access_violation", `${path}.access`, `unknown access ${String(b.access)}`);
    if (atomic && b.access !== "read_write")
      report("atomic_misuse", `${path}.access`, "atomic buffers must be read_write");
  });
  kernel.uniforms.forEach((u, i) => {
    declare(u.name, { kind: "param", type: u.type }, `uniforms[${i}]`);
    if (!["u32", "i32", "f32"].includes(u.type))
      report("type_mismatch", `uniforms[${i}].type`, `uniform of ${String(u.type)}`);
  });
  kernel.shared.forEach((s, i) => {
    const path = `shared[${i}]`;
    declare(
      s.name,
      { kind: "array", space: "workgroup", elem: s.elem, atomic: s.atomic === true, readable: true, writable: true },
      path,
    );
    if (!isValueType(s.elem) || (s.elem as string) === "bool")
      report("type_mismatch", `${path}.elem`, `shared array of ${String(s.elem)}`);
    if (s.atomic === true && !["u32", "i32", "f32"].includes(s.elem))
      report("atomic_misuse", `${path}.elem`, `atomic shared array of ${s.elem}`);
    checkSize(s.length, `${path}.length`);
  });

  const block = (stmts: readonly Stmt[], path: string, outer: Map<string, Binding>, loopDepth: number): void => {
    // Block scope: declarations are visible after their statement until the end of the block.
    const scope = new Map(outer);
    const cx: ExprContext = { lookup: (n) => scope.get(n), report };
    const local = (name: string, b: Binding, p: string): void => {
      if (typeof name !== "string" || !IDENT.test(name)) report("bad_name", p, `${String(name)} is not an identifier`);
      if (names.has(name)) report("duplicate_name", p, `${name} is already declared`);
      names.add(name);
      scope.set(name, b);
    };
    stmts.forEach((st, i) => {
      const p = `${path}[${i}]`;
      stmt(st, p, scope, cx, local, loopDepth);
    });
  };

  const stmt = (
    st: Stmt,
    p: string,
    scope: Map<string, Binding>,
    cx: ExprContext,
    local: (name: string, b: Binding, p: string) => void,
    loopDepth: number,
  ): void => {
    const expect = (e: Parameters<typeof checkExpr>[0], key: string, want: string): void => {
      const t = checkExpr(e, `${p}.${key}`, cx);
      if (t !== want) report("type_mismatch", `${p}.${key}`, `${st.s}: ${key} must be ${want}, got ${t}`);
    };
    switch (st.s) {
      case "let":
      case "var": {
        if (!isValueType(st.type)) report("type_mismatch", p, `unknown type ${String(st.type)}`);
        expect(st.s === "let" ? st.value : st.init, st.s === "let" ? "value" : "init", st.type);
        local(st.name, { kind: "local", type: st.type, mutable: st.s === "var" }, p);
        return;
      }
      case "array": {
        if (!isValueType(st.elem) || (st.elem as string) === "bool")
          report("type_mismatch", p, `private array of ${String(st.elem)}`);
        if (typeof st.length === "number") {
          if (!Number.isInteger(st.length) || st.length < 1)
            report("bad_size", `${p}.length`, `${st.length} is not a positive integer`);
        } else if (scope.get(st.length.spec)?.kind !== "spec")
          report("bad_size", `${p}.length`, `no spec constant named ${st.length.spec}`);
        local(
          st.name,
          { kind: "array", space: "private", elem: st.elem, atomic: false, readable: true, writable: true },
          p,
        );
        return;
      }
      case "assign": {
        const b = scope.get(st.name);
        if (b === undefined || b.kind !== "local") {
          report(b === undefined ? "unknown_name" : "assign_to_immutable", p, `cannot assign to ${st.name}`);
          checkExpr(st.value, `${p}.value`, cx);
        } else {
          if (!b.mutable) report("assign_to_immutable", p, `${st.name} is not a var`);
          expect(st.value, "value", b.type);
        }
        return;
      }
      case "store": {
        const it = checkExpr(st.index, `${p}.index`, cx);
        if (it !== "u32") report("type_mismatch", `${p}.index`, `store: index must be u32, got ${it}`);
        const b = scope.get(st.array);
        const vt = checkExpr(st.value, `${p}.value`, cx);
        if (b?.kind !== "array" || b.space !== st.space) {
          report("unknown_name", p, `no ${st.space} array named ${st.array}`);
          return;
        }
        if (b.atomic) report("atomic_misuse", p, `${st.array} is atomic; write it with an atomic store`);
        if (!b.writable) report("access_violation", p, `${st.array} is read-only`);
        const want =
          b.elem === "bf16" || b.elem === "f16" ? "f32" : b.elem === "u8" ? "u32" : b.elem === "i8" ? "i32" : b.elem;
        if (vt !== want)
          report("type_mismatch", `${p}.value`, `store to ${st.array}: value must be ${want}, got ${vt}`);
        return;
      }
      case "for": {
        if (st.type !== "i32" && st.type !== "u32")
          report("type_mismatch", p, `for variable must be i32 or u32, got ${String(st.type)}`);
        expect(st.start, "start", st.type);
        expect(st.end, "end", st.type);
        expect(st.step, "step", st.type);
        if (st.step.k === "const" && typeof st.step.value === "number" && st.step.value <= 0)
          report("bad_literal", `${p}.step`, "for step must be positive");
        const inner = new Map(scope);
        local(st.var, { kind: "local", type: st.type, mutable: false }, p);
        inner.set(st.var, { kind: "local", type: st.type, mutable: false });
        scope.delete(st.var);
        block(st.body, `${p}.body`, inner, loopDepth + 1);
        return;
      }
      case "while":
        expect(st.cond, "cond", "bool");
        block(st.body, `${p}.body`, scope, loopDepth + 1);
        return;
      case "if":
        expect(st.cond, "cond", "bool");
        block(st.then, `${p}.then`, scope, loopDepth);
        block(st.else, `${p}.else`, scope, loopDepth);
        return;
      case "break":
      case "continue":
        if (loopDepth === 0) report("bad_control_flow", p, `${st.s} outside a loop`);
        return;
      case "barrier":
      case "return":
        return;
      case "subgroup": {
        const vt = checkExpr(st.value, `${p}.value`, cx);
        if (vt !== st.type) report("type_mismatch", `${p}.value`, `subgroup: value must be ${st.type}, got ${vt}`);
        const reduce = st.op === "reduce_add" || st.op === "reduce_max" || st.op === "reduce_min";
        if (isVecType(st.type) || st.type === "bool") report("bad_subgroup", p, `subgroup ${st.op} on ${st.type}`);
        if (reduce && st.lane !== undefined) report("bad_subgroup", `${p}.lane`, `${st.op} takes no lane`);
        if (!reduce) {
          if (st.lane === undefined) report("bad_subgroup", p, `${st.op} needs a lane`);
          else expect(st.lane, "lane", "u32");
        }
        local(st.name, { kind: "local", type: st.type, mutable: false }, p);
        return;
      }
      case "mma": {
        if (!Object.hasOwn(MMA_LAYOUTS, st.shape))
          report(
            "bad_mma",
            `${p}.shape`,
            `mma shape ${String(st.shape)} is not one of ${Object.keys(MMA_LAYOUTS).join(", ")}`,
          );
        if (st.input !== "bf16" && st.input !== "f16")
          report("bad_mma", `${p}.input`, `mma input ${String(st.input)} is not bf16 or f16`);
        const ty = Object.hasOwn(MMA_LAYOUTS, st.shape) ? mmaOperandTypes(st.shape) : undefined;
        expect(st.a, "a", ty?.a ?? "vec4<u32>");
        expect(st.b, "b", ty?.b ?? "vec2<u32>");
        expect(st.c, "c", "vec4<f32>");
        local(st.name, { kind: "local", type: "vec4<f32>", mutable: false }, p);
        return;
      }
      case "atomic": {
        expect(st.index, "index", "u32");
        const b = scope.get(st.array);
        if (b?.kind !== "array" || b.space !== st.space)
          report("unknown_name", p, `no ${st.space} array named ${st.array}`);
        else if (!b.atomic) report("atomic_misuse", p, `${st.array} is not declared atomic`);
        else if (b.elem !== st.type)
          report("type_mismatch", p, `atomic on ${st.array} must have type ${b.elem}, got ${st.type}`);
        if (st.type === "f32" && st.op !== "add" && st.op !== "load" && st.op !== "store" && st.op !== "exchange")
          report("atomic_misuse", p, `atomic ${st.op} on f32`);
        if ((st.op === "load") !== (st.value === undefined))
          report(
            "atomic_misuse",
            `${p}.value`,
            st.op === "load" ? "atomic load takes no value" : `atomic ${st.op} needs a value`,
          );
        if (st.value !== undefined) expect(st.value, "value", st.type);
        if ((st.op === "cmpxchg") !== (st.compare !== undefined))
          report("atomic_misuse", `${p}.compare`, "compare is present exactly for cmpxchg");
        if (st.compare !== undefined) expect(st.compare, "compare", st.type);
        if (st.op === "store" && st.name !== undefined) report("atomic_misuse", p, "atomic store has no result");
        if (st.name !== undefined) local(st.name, { kind: "local", type: st.type, mutable: false }, p);
        return;
      }
      default:
        st satisfies never;
        report("type_mismatch", p, `unknown statement kind ${String((st as { s: unknown }).s)}`);
    }
  };

  block(kernel.body, "body", global, 0);
  return issues;
}

/** Throws `KernelValidationError` (with every issue) unless `kernel` is valid; returns it otherwise. */
export function assertValidKernel(kernel: Kernel): Kernel {
  const issues = validateKernel(kernel);
  if (issues.length > 0) throw new KernelValidationError(kernel.name, issues);
  return kernel;
}
