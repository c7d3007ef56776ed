// The DSL's math functions in LLVM IR, shared by the LLVM targets (AMDGPU, x86-64): LLVM intrinsics where one exists
// (exp, log, sqrt, min/max, abs, …), arithmetic where none does (rsqrt; tanh and erf, which AMDGPU has no instruction
// for: erf by Abramowitz-Stegun 7.1.26).

import { elemOf, lanesOf, type ValueType } from "@poot/kernel-dsl";
import { llFloat, llType } from "./llvm-types.js";

/** What the math lowering needs of the function being emitted. */
export interface LlvmMathSink {
  /** Emits `%vN = rhs` and returns `%vN`. */
  def(rhs: string): string;
  /** Adds a module-level `declare` line (once). */
  declare(line: string): void;
  /** Throws the target's one-line unsupported-operation error. */
  unsupported(what: string): never;
}

/** A call of the LLVM intrinsic `llvm.NAME` on `type` (declared once). */
function intrinsic(s: LlvmMathSink, name: string, type: ValueType, args: readonly string[]): string {
  const t = llType(type);
  const suffix =
    lanesOf(type) > 1
      ? `v${lanesOf(type)}${elemOf(type) === "f32" ? "f32" : "i32"}`
      : elemOf(type) === "f32"
        ? "f32"
        : "i32";
  s.declare(`declare ${t} @llvm.${name}.${suffix}(${args.map(() => t).join(", ")}${name === "abs" ? ", i1" : ""})`);
  return s.def(
    `call ${t} @llvm.${name}.${suffix}(${args.map((x) => `${t} ${x}`).join(", ")}${name === "abs" ? ", i1 false" : ""})`,
  );
}

/** A DSL math function on `type`: an LLVM intrinsic where one exists, else arithmetic (rsqrt, tanh, erf). */
export function llvmMathCall(s: LlvmMathSink, fn: string, type: ValueType, args: readonly string[]): string {
  const t = llType(type);
  const e = elemOf(type);
  const one = lanesOf(type) > 1 ? `splat (float 1.0)` : "1.0";
  switch (fn) {
    case "exp":
    case "log":
    case "sqrt":
    case "sin":
    case "cos":
    case "floor":
    case "fma":
      return intrinsic(s, fn, type, args);
    case "rsqrt":
      return s.def(`fdiv ${t} ${one}, ${intrinsic(s, "sqrt", type, args)}`);
    case "tanh": {
      // tanh(x) = 1 - 2 / (exp(2x) + 1): no tanh instruction on AMDGPU.
      const two = lanesOf(type) > 1 ? `splat (float 2.0)` : "2.0";
      const e2 = intrinsic(s, "exp", type, [s.def(`fmul ${t} ${args[0]}, ${two}`)]);
      return s.def(`fsub ${t} ${one}, ${s.def(`fdiv ${t} ${two}, ${s.def(`fadd ${t} ${e2}, ${one}`)}`)}`);
    }
    case "erf": {
      if (lanesOf(type) > 1) return s.unsupported("vector erf");
      const ax = intrinsic(s, "fabs", "f32", args);
      const tt = s.def(
        `fdiv float 1.0, ${s.def(`fadd float 1.0, ${s.def(`fmul float ${ax}, ${llFloat(0.3275911)}`)}`)}`,
      );
      let p = llFloat(1.061405429);
      for (const c of [-1.453152027, 1.421413741, -0.284496736, 0.254829592])
        p = s.def(`fadd float ${s.def(`fmul float ${p}, ${tt}`)}, ${llFloat(c)}`);
      p = s.def(`fmul float ${p}, ${tt}`);
      const ex = intrinsic(s, "exp", "f32", [s.def(`fneg float ${s.def(`fmul float ${ax}, ${ax}`)}`)]);
      const r = s.def(`fsub float 1.0, ${s.def(`fmul float ${p}, ${ex}`)}`);
      return intrinsic(s, "copysign", "f32", [r, args[0]!]);
    }
    case "abs":
      return e === "f32" ? intrinsic(s, "fabs", type, args) : e === "u32" ? args[0]! : intrinsic(s, "abs", type, args);
    case "min":
      return intrinsic(s, e === "f32" ? "minnum" : e === "i32" ? "smin" : "umin", type, args);
    case "max":
      return intrinsic(s, e === "f32" ? "maxnum" : e === "i32" ? "smax" : "umax", type, args);
    default:
      return s.unsupported(`math ${fn}`);
  }
}
