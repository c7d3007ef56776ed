// The kernel IR printer: readable, C-like text for logs, errors and golden tests (not parsed back;
// .kir.json is the interchange form).

import type { Expr, Kernel, Size, Stmt } from "./ir.js";

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
const AXES = ["x", "y", "z"] as const;

function size(s: Size): string {
  return typeof s === "number" ? String(s) : `$${s.spec}`;
}

/** Prints one expression (fully parenthesized binary operators, typed literals). */
export function printExpr(e: Expr): string {
  switch (e.k) {
    case "const":
      if (e.type === "bool") return String(e.value);
      if (e.type === "f32") return `${Object.is(e.value, -0) ? "-0" : String(e.value)}f`;
      return `${String(e.value)}${e.type === "u32" ? "u" : "i"}`;
    case "local":
    case "param":
      return e.name;
    case "spec":
      return `$${e.name}`;
    case "builtin":
      return "axis" in e ? `${e.name}.${AXES[e.axis]}` : e.name;
    case "load":
      return `${e.array}[${printExpr(e.index)}]`;
    case "load4":
      return e.packed === true
        ? `${e.array}[${printExpr(e.index)} +0..15 packed as ${e.type}]`
        : `${e.array}[${printExpr(e.index)} +0..3 as ${e.type}]`;
    case "unary":
      return `${e.op === "neg" ? "-" : e.type === "bool" ? "!" : "~"}${printExpr(e.a)}`;
    case "binary":
      return `(${printExpr(e.a)} ${BIN[e.op] ?? e.op} ${printExpr(e.b)})`;
    case "cmp":
      return `(${printExpr(e.a)} ${CMP[e.op] ?? e.op} ${printExpr(e.b)})`;
    case "select":
      return `select(${printExpr(e.cond)}, ${printExpr(e.a)}, ${printExpr(e.b)})`;
    case "call":
      return `${e.fn}(${e.args.map(printExpr).join(", ")})`;
    case "cast":
      return `${e.type}(${printExpr(e.a)})`;
    case "bitcast":
      return `bitcast<${e.type}>(${printExpr(e.a)})`;
    case "pack":
      return `pack_${e.fmt}(${printExpr(e.a)})`;
    case "unpack":
      return `unpack_${e.fmt}(${printExpr(e.a)})`;
    case "vec":
      return `${e.type}(${e.elems.map(printExpr).join(", ")})`;
    case "extract":
      return `${printExpr(e.a)}.${"xyzw"[e.lane] ?? e.lane}`;
    default:
      e satisfies never;
      return "?";
  }
}

function printBlock(stmts: readonly Stmt[], indent: string, out: string[]): void {
  for (const st of stmts) printStmt(st, indent, out);
}

function printStmt(st: Stmt, ind: string, out: string[]): void {
  const inner = ind + "  ";
  switch (st.s) {
    case "let":
      out.push(`${ind}let ${st.name}: ${st.type} = ${printExpr(st.value)};`);
      return;
    case "var":
      out.push(`${ind}var ${st.name}: ${st.type} = ${printExpr(st.init)};`);
      return;
    case "array":
      out.push(`${ind}private ${st.name}: array<${st.elem}, ${size(st.length)}>;`);
      return;
    case "assign":
      out.push(`${ind}${st.name} = ${printExpr(st.value)};`);
      return;
    case "store":
      out.push(`${ind}${st.array}[${printExpr(st.index)}] = ${printExpr(st.value)};`);
      return;
    case "for":
      out.push(
        `${ind}for (${st.var}: ${st.type} = ${printExpr(st.start)}; ${st.var} < ${printExpr(st.end)}; ${st.var} += ${printExpr(st.step)}) {`,
      );
      printBlock(st.body, inner, out);
      out.push(`${ind}}`);
      return;
    case "while":
      out.push(`${ind}while (${printExpr(st.cond)}) {`);
      printBlock(st.body, inner, out);
      out.push(`${ind}}`);
      return;
    case "if":
      out.push(`${ind}if (${printExpr(st.cond)}) {`);
      printBlock(st.then, inner, out);
      if (st.else.length > 0) {
        out.push(`${ind}} else {`);
        printBlock(st.else, inner, out);
      }
      out.push(`${ind}}`);
      return;
    case "break":
    case "continue":
    case "barrier":
    case "return":
      out.push(`${ind}${st.s};`);
      return;
    case "subgroup":
      out.push(
        `${ind}let ${st.name}: ${st.type} = subgroup_${st.op}(${printExpr(st.value)}${st.lane === undefined ? "" : `, ${printExpr(st.lane)}`});`,
      );
      return;
    case "mma":
      out.push(
        `${ind}let ${st.name}: vec4<f32> = mma_${st.shape}_${st.input}(${printExpr(st.a)}, ${printExpr(st.b)}, ${printExpr(st.c)});`,
      );
      return;
    case "atomic": {
      const args = [`&${st.array}[${printExpr(st.index)}]`];
      if (st.compare !== undefined) args.push(printExpr(st.compare));
      if (st.value !== undefined) args.push(printExpr(st.value));
      const call = `atomic_${st.op}(${args.join(", ")})`;
      out.push(st.name === undefined ? `${ind}${call};` : `${ind}let ${st.name}: ${st.type} = ${call};`);
      return;
    }
    default:
      st satisfies never;
  }
}

/** Prints a kernel as readable text: signature, declarations, then the body. */
export function printKernel(kernel: Kernel): string {
  const out: string[] = [];
  out.push(`kernel ${kernel.name} workgroup(${kernel.workgroupSize.map(size).join(", ")}) {`);
  for (const s of kernel.specs) out.push(`  spec $${s.name}: u32${s.default === undefined ? "" : ` = ${s.default}`};`);
  for (const b of kernel.buffers) {
    const elem = b.atomic === true ? `atomic<${b.elem}>` : b.elem;
    out.push(`  @binding(${b.binding}) buffer ${b.name}: array<${elem}>, ${b.access};`);
  }
  for (const u of kernel.uniforms) out.push(`  uniform ${u.name}: ${u.type};`);
  for (const s of kernel.shared)
    out.push(`  shared ${s.name}: array<${s.atomic === true ? `atomic<${s.elem}>` : s.elem}, ${size(s.length)}>;`);
  printBlock(kernel.body, "  ", out);
  out.push("}");
  return out.join("\n") + "\n";
}
