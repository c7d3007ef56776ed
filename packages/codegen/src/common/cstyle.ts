// The shared C-like printer: statements, control flow and expression structure for text targets with C syntax.
// A dialect supplies only type names, op spellings, memory access and intrinsics (CONVENTIONS 3).

import type { AtomicOp, Expr, MathFn, PackFormat, Stmt, SubgroupOp, ValueType } from "@poot/kernel-dsl";
import { CodegenError, invariant } from "../errors.js";

/** What a C-like target spells its own way. Every method returns source text. */
export interface CStyleDialect {
  /** The target's spelling of an IR name (renames reserved words and clashes with generated names). */
  ident(name: string): string;
  /** Type name of a value type. */
  type(t: ValueType): string;
  /** A literal of a scalar type. */
  literal(type: ValueType, value: number | boolean): string;
  /** A builtin value (all u32). */
  builtin(name: string, axis: 0 | 1 | 2 | undefined): string;
  /** A uniform parameter. */
  param(name: string): string;
  /** A specialization constant (already resolved). */
  spec(name: string): string;
  /** A load of `array[index]` in `space`, widened to `type`. */
  load(space: string, array: string, index: string, type: ValueType): string;
  /** A store statement (without trailing newline). */
  store(space: string, array: string, index: string, value: string): string;
  /** Shift-count operand for shl/shr. */
  shiftCount(b: string, type: ValueType): string;
  /** A math intrinsic call. */
  call(fn: MathFn, args: readonly string[], type: ValueType): string;
  /** A value conversion from `from` to `to`. */
  cast(a: string, from: ValueType, to: ValueType): string;
  /** A bit reinterpretation. */
  bitcast(a: string, to: ValueType): string;
  /** pack / unpack between f32 and 16-bit float bits. */
  pack(fmt: PackFormat, a: string): string;
  unpack(fmt: PackFormat, a: string): string;
  /** `cond ? a : b`. */
  select(cond: string, a: string, b: string, type: ValueType): string;
  /** Builds a vector. */
  vec(type: ValueType, elems: readonly string[]): string;
  /** A subgroup op producing a value. */
  subgroup(op: SubgroupOp, type: ValueType, value: string, lane: string | undefined): string;
  /** Lines performing an atomic op; `result` names the immutable to define, if any. */
  atomic(
    op: AtomicOp,
    type: ValueType,
    space: string,
    array: string,
    index: string,
    value: string | undefined,
    compare: string | undefined,
    result: string | undefined,
  ): string[];
  /** The workgroup barrier statement. */
  barrier(): string;
  /** Declares an immutable local. */
  declLet(name: string, type: ValueType, value: string): string;
  /** Declares a mutable local. */
  declVar(name: string, type: ValueType, value: string): string;
  /** Declares a zero-initialized private array. */
  declArray(name: string, elem: ValueType, length: number): string;
  /** Resolves an array length Size. */
  length(size: number | { readonly spec: string }): number;
}

const BIN: Record<string, string> = {
  add: "+",
  sub: "-",
  mul: "*",
  div: "/",
  rem: "%",
  and: "&",
  or: "|",
  xor: "^",
  shl: "<<",
  shr: ">>",
};
const CMP: Record<string, string> = { eq: "==", ne: "!=", lt: "<", le: "<=", gt: ">", ge: ">=" };

/** Prints expressions and statement blocks for one dialect. */
export class CStylePrinter {
  private readonly lines: string[] = [];
  private loopDepth = 0;

  constructor(private readonly d: CStyleDialect) {}

  /** Prints an expression (fully parenthesized where precedence could matter). */
  expr(e: Expr): string {
    const d = this.d;
    switch (e.k) {
      case "const":
        return d.literal(e.type, e.value);
      case "local":
        return d.ident(e.name);
      case "param":
        return d.param(e.name);
      case "spec":
        return d.spec(e.name);
      case "builtin":
        return d.builtin(e.name, "axis" in e ? e.axis : undefined);
      case "load":
        return d.load(e.space, e.array, this.expr(e.index), e.type);
      case "unary":
        if (e.op === "neg") return `(-${this.expr(e.a)})`;
        return e.type === "bool" ? `(!${this.expr(e.a)})` : `(~${this.expr(e.a)})`;
      case "binary": {
        const a = this.expr(e.a);
        const b = this.expr(e.b);
        if (e.op === "shl" || e.op === "shr") return `(${a} ${BIN[e.op]} ${d.shiftCount(b, e.type)})`;
        // Logical and/or on bool use the non-short-circuit bitwise forms: both sides are pure.
        return `(${a} ${BIN[e.op]} ${b})`;
      }
      case "cmp":
        return `(${this.expr(e.a)} ${CMP[e.op]} ${this.expr(e.b)})`;
      case "select":
        return d.select(this.expr(e.cond), this.expr(e.a), this.expr(e.b), e.type);
      case "call":
        return d.call(
          e.fn,
          e.args.map((a) => this.expr(a)),
          e.type,
        );
      case "cast":
        return d.cast(this.expr(e.a), e.a.type, e.type);
      case "bitcast":
        return d.bitcast(this.expr(e.a), e.type);
      case "pack":
        return d.pack(e.fmt, this.expr(e.a));
      case "unpack":
        return d.unpack(e.fmt, this.expr(e.a));
      case "vec":
        return d.vec(
          e.type,
          e.elems.map((a) => this.expr(a)),
        );
      case "extract":
        return `${this.expr(e.a)}[${e.lane}]`;
      // prepare() refuses load4 for every C-style target; kept as a typed error should a caller skip it.
      case "load4":
        throw new CodegenError("missing-capability", "this target has no SIMD load4", { construct: "load4" });
      default:
        e satisfies never;
        throw new Error("unreachable");
    }
  }

  private emit(indent: number, line: string): void {
    this.lines.push(`${"  ".repeat(indent)}${line}`);
  }

  /** Prints a block of statements at `indent`. */
  block(body: readonly Stmt[], indent: number): void {
    const d = this.d;
    for (const s of body) {
      switch (s.s) {
        case "let":
          this.emit(indent, d.declLet(d.ident(s.name), s.type, this.expr(s.value)));
          break;
        case "var":
          this.emit(indent, d.declVar(d.ident(s.name), s.type, this.expr(s.init)));
          break;
        case "array":
          this.emit(indent, d.declArray(d.ident(s.name), s.elem, d.length(s.length)));
          break;
        case "assign":
          this.emit(indent, `${d.ident(s.name)} = ${this.expr(s.value)};`);
          break;
        case "store":
          this.emit(indent, d.store(s.space, s.array, this.expr(s.index), this.expr(s.value)));
          break;
        case "for": {
          // Bounds are evaluated once (IR semantics), so hoist end and step into immutables.
          const v = d.ident(s.var);
          const end = `${v}_end`;
          const step = `${v}_step`;
          this.emit(indent, d.declLet(end, s.type, this.expr(s.end)));
          this.emit(indent, d.declLet(step, s.type, this.expr(s.step)));
          this.emit(
            indent,
            `for (${d.declVar(v, s.type, this.expr(s.start)).replace(/;$/, "")}; ${v} < ${end}; ${v} = ${v} + ${step}) {`,
          );
          this.loop(s.body, indent);
          this.emit(indent, "}");
          break;
        }
        case "while":
          this.emit(indent, `while (${this.expr(s.cond)}) {`);
          this.loop(s.body, indent);
          this.emit(indent, "}");
          break;
        case "if":
          this.emit(indent, `if (${this.expr(s.cond)}) {`);
          this.block(s.then, indent + 1);
          if (s.else.length > 0) {
            this.emit(indent, "} else {");
            this.block(s.else, indent + 1);
          }
          this.emit(indent, "}");
          break;
        case "break":
        case "continue":
          invariant(this.loopDepth > 0, `${s.s} outside a loop`);
          this.emit(indent, `${s.s};`);
          break;
        case "barrier":
          this.emit(indent, d.barrier());
          break;
        case "subgroup":
          this.emit(
            indent,
            d.declLet(
              d.ident(s.name),
              s.type,
              d.subgroup(s.op, s.type, this.expr(s.value), s.lane ? this.expr(s.lane) : undefined),
            ),
          );
          break;
        case "atomic": {
          const lines = d.atomic(
            s.op,
            s.type,
            s.space,
            s.array,
            this.expr(s.index),
            s.value ? this.expr(s.value) : undefined,
            s.compare ? this.expr(s.compare) : undefined,
            s.name === undefined ? undefined : d.ident(s.name),
          );
          for (const l of lines) this.emit(indent, l);
          break;
        }
        case "mma":
          // prepare() refuses mma for every C-style target; reaching here is a codegen bug.
          throw new CodegenError("missing-capability", "this target has no matrix-unit instructions", {
            construct: `mma.${s.shape}.${s.input}`,
          });
        case "return":
          this.emit(indent, "return;");
          break;
        default:
          s satisfies never;
      }
    }
  }

  private loop(body: readonly Stmt[], indent: number): void {
    this.loopDepth++;
    this.block(body, indent + 1);
    this.loopDepth--;
  }

  /** The printed lines so far. */
  text(): string[] {
    return this.lines;
  }
}
