// PTX register machinery shared by instruction selection: typed virtual registers, vector operands as
// brace lists, variables as registers, and structured control flow lowered to labels and branches.

import { elemOf, lanesOf, type ValueType } from "@poot/kernel-dsl";
import { CodegenError } from "../errors.js";

/** Register classes: predicates, 32-bit ints, f32, 64-bit addresses, 16-bit halves. */
export type Cls = "p" | "r" | "f" | "rd" | "h";

/** Splits a vector operand `{%f1, %f2}` into its registers (a scalar stays one). */
export const split = (v: string): string[] =>
  v.startsWith("{")
    ? v
        .slice(1, -1)
        .split(",")
        .map((s) => s.trim())
    : [v];
/** Joins registers into a vector operand. */
export const join = (regs: readonly string[]): string => (regs.length === 1 ? regs[0]! : `{${regs.join(", ")}}`);

/** Register allocation, emission and control flow of one PTX kernel. */
export abstract class PtxBase {
  readonly lines: string[] = [];
  readonly counts: Record<Cls, number> = { p: 0, r: 0, f: 0, rd: 0, h: 0 };
  protected label = 0;
  protected readonly loops: { cont: string; exit: string }[] = [];
  protected readonly vars = new Map<string, string>();
  /** Registers holding the generic-to-global converted buffer base addresses. */
  readonly bufferBase = new Map<string, string>();
  readonly paramReg = new Map<string, string>();
  readonly locals: { name: string; bytes: number }[] = [];

  constructor(
    protected readonly kernel: string,
    protected readonly subgroupSize: number,
    protected readonly wg: readonly [number, number, number],
    /** Whether `cvt.rn.bf16*.f32` exists (sm_80+; `caps.bf16`); otherwise bf16 rounding uses integer ops. */
    protected readonly nativeBf16: boolean,
  ) {}

  reg(c: Cls): string {
    return `%${c}${++this.counts[c]}`;
  }
  emit(line: string): void {
    this.lines.push(`  ${line}`);
  }
  protected cls(t: ValueType): Cls {
    const e = elemOf(t);
    return e === "bool" ? "p" : e === "f32" ? "f" : "r";
  }
  protected fresh(t: ValueType): string {
    return join(Array.from({ length: lanesOf(t) }, () => this.reg(this.cls(t))));
  }
  protected sfx(t: ValueType): string {
    const e = elemOf(t);
    return e === "f32" ? "f32" : e === "i32" ? "s32" : e === "u32" ? "u32" : "pred";
  }
  /** Applies a scalar instruction lane by lane. */
  protected lanes(t: ValueType, ops: readonly string[], f: (d: string, ...xs: string[]) => string): string {
    const d = this.fresh(t);
    const ds = split(d);
    const parts = ops.map(split);
    ds.forEach((r, i) => this.emit(f(r, ...parts.map((p) => p[i] ?? p[0]!))));
    return d;
  }
  protected unsupported(what: string): never {
    throw new CodegenError("unsupported", `PTX cannot express ${what}`, {
      kernel: this.kernel,
      target: "ptx",
      construct: what,
    });
  }

  newVar(name: string, type: ValueType, init: string): void {
    const r = this.fresh(type);
    this.vars.set(name, r);
    split(r).forEach((reg, i) => this.emit(`mov.${type === "bool" ? "pred" : "b32"} ${reg}, ${split(init)[i]};`));
  }
  readVar(name: string, type: ValueType): string {
    // Copy: a later assignment to the var must not change values read before it.
    const r = this.vars.get(name)!;
    return this.lanes(type, [r], (d, x) => `mov.${type === "bool" ? "pred" : "b32"} ${d}, ${x};`);
  }
  writeVar(name: string, type: ValueType, v: string): void {
    const r = this.vars.get(name)!;
    split(r).forEach((reg, i) => this.emit(`mov.${type === "bool" ? "pred" : "b32"} ${reg}, ${split(v)[i]};`));
  }
  privateArray(name: string, elem: ValueType, length: number): void {
    const bytes = 4 * lanesOf(elem) * length;
    this.locals.push({ name, bytes });
    const base = this.reg("rd");
    this.emit(`mov.u64 ${base}, ${name};`);
    // Private arrays start as zero (IR semantics).
    for (let o = 0; o < bytes; o += 4) this.emit(`st.local.b32 [${base}+${o}], 0;`);
  }

  protected newLabel(): string {
    return `$L${++this.label}`;
  }
  ifElse(cond: string, then: () => void, otherwise: (() => void) | undefined): void {
    const elseL = this.newLabel();
    const end = otherwise ? this.newLabel() : elseL;
    this.emit(`@!${cond} bra ${elseL};`);
    then();
    if (otherwise) {
      this.emit(`bra ${end};`);
      this.lines.push(`${elseL}:`);
      otherwise();
    }
    this.lines.push(`${end}:`);
  }
  loop(cond: () => string, body: () => void, step: () => void): void {
    const head = this.newLabel();
    const cont = this.newLabel();
    const exit = this.newLabel();
    this.lines.push(`${head}:`);
    const c = cond();
    this.emit(`@!${c} bra ${exit};`);
    this.loops.push({ cont, exit });
    body();
    this.loops.pop();
    this.lines.push(`${cont}:`);
    step();
    this.emit(`bra ${head};`);
    this.lines.push(`${exit}:`);
  }
  breakLoop(): void {
    this.emit(`bra ${this.loops[this.loops.length - 1]!.exit};`);
  }
  continueLoop(): void {
    this.emit(`bra ${this.loops[this.loops.length - 1]!.cont};`);
  }
  ret(): void {
    this.emit("ret;");
  }
}
