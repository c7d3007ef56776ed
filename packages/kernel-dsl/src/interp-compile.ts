// Compiles a (specialized, valid) kernel to the JS source of one generator per thread, built once with `new Function`.
// Threads yield at barriers and subgroup ops so the scheduler in interp.ts can interleave a workgroup faithfully.

import { invariant } from "./errors.js";
import { elemOf, isVecType, lanesOf } from "./ir-types.js";
import type { ElemType, Expr, MmaInput, MmaShape, ScalarType, Size, Stmt, SubgroupOp, ValueType } from "./ir.js";

/** A synchronization point a thread yields at: its index in `CompiledKernel.syncs` is the yielded value. */
export type SyncPoint =
  | { readonly kind: "barrier"; readonly path: string }
  | { readonly kind: "subgroup"; readonly path: string; readonly op: SubgroupOp; readonly type: ValueType }
  /** A warp-scope `mma`: T.sv holds [a, b, c] of the lane. */
  | {
      readonly kind: "subgroup";
      readonly path: string;
      readonly op: "mma";
      readonly type: "vec4<f32>";
      readonly input: MmaInput;
      readonly shape: MmaShape;
    };

/** The generated source and its sync table. */
export interface CompiledSource {
  readonly source: string;
  readonly syncs: readonly SyncPoint[];
}

const AXIS_FIELD: Record<string, string> = {
  global_id: "g",
  local_id: "l",
  workgroup_id: "w",
  num_workgroups: "n",
  workgroup_size: "s",
};
const SCALAR_FIELD: Record<string, string> = {
  local_index: "li",
  subgroup_id: "sg",
  subgroup_lane: "lane",
  subgroup_size: "sgs",
};

function num(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  return Object.is(v, -0) ? "-0" : String(v);
}

function scalarBinary(op: string, t: ScalarType, a: string, b: string): string {
  if (t === "f32") {
    const sym: Record<string, string> = { add: "+", sub: "-", mul: "*", div: "/", rem: "%" };
    return `fr(${a} ${sym[op] ?? "?"} ${b})`;
  }
  if (t === "bool") return op === "and" ? `!!(${a} & ${b})` : op === "or" ? `!!(${a} | ${b})` : `(${a} !== ${b})`;
  const wrap = t === "i32" ? "| 0" : ">>> 0";
  switch (op) {
    case "add":
      return `((${a} + ${b}) ${wrap})`;
    case "sub":
      return `((${a} - ${b}) ${wrap})`;
    case "mul":
      return `(Math.imul(${a}, ${b}) ${wrap})`;
    case "div":
      return `H.div(${a}, ${b}, ${t === "i32"})`;
    case "rem":
      return `H.rem(${a}, ${b}, ${t === "i32"})`;
    case "and":
      return `((${a} & ${b}) ${wrap})`;
    case "or":
      return `((${a} | ${b}) ${wrap})`;
    case "xor":
      return `((${a} ^ ${b}) ${wrap})`;
    case "shl":
      return `((${a} << (${b} & 31)) ${wrap})`;
    case "shr":
      return t === "i32" ? `(${a} >> (${b} & 31))` : `(${a} >>> (${b} & 31))`;
    default:
      throw new Error(`invariant: binary op ${op}`);
  }
}

function scalarCall(fn: string, t: ScalarType, args: string[]): string {
  const [a = "", b = "", c = ""] = args;
  if (t !== "f32") {
    const wrap = t === "i32" ? "| 0" : ">>> 0";
    if (fn === "abs") return `(Math.abs(${a}) ${wrap})`;
    return `Math.${fn}(${a}, ${b})`;
  }
  switch (fn) {
    case "rsqrt":
      return `fr(1 / Math.sqrt(${a}))`;
    case "erf":
      return `fr(H.erf(${a}))`;
    // a*b is exact in float64 for f32 inputs, so only the final add rounds (twice: f64 then f32).
    case "fma":
      return `fr(${a} * ${b} + ${c})`;
    case "abs":
    case "floor":
      return `Math.${fn}(${a})`;
    case "min":
    case "max":
      return `Math.${fn}(${a}, ${b})`;
    default:
      return `fr(Math.${fn}(${a}))`;
  }
}

function scalarCast(from: ScalarType, to: ScalarType, a: string): string {
  if (from === to) return a;
  if (from === "bool") return to === "f32" || to === "i32" || to === "u32" ? `(${a} ? 1 : 0)` : a;
  if (to === "bool") return `(${a} !== 0)`;
  if (to === "f32") return `fr(${a})`;
  if (from === "f32") return to === "i32" ? `H.f2i(${a})` : `H.f2u(${a})`;
  return to === "i32" ? `(${a} | 0)` : `(${a} >>> 0)`;
}

function scalarBitcast(from: ScalarType, to: ScalarType, a: string): string {
  if (from === to) return a;
  if (from === "f32") return to === "u32" ? `H.f2b(${a})` : `(H.f2b(${a}) | 0)`;
  if (to === "f32") return `H.b2f(${a})`;
  return to === "i32" ? `(${a} | 0)` : `(${a} >>> 0)`;
}

/** Maps each lane of vectors through a scalar template. */
function lanewise(t: ValueType, operands: string[], f: (xs: string[]) => string): string {
  if (!isVecType(t)) return f(operands);
  const params = operands.map((_, i) => `o${i}`);
  const lanes = Array.from({ length: lanesOf(t) }, (_, l) => f(params.map((p) => `${p}[${l}]`)));
  return `((${params.join(", ")}) => [${lanes.join(", ")}])(${operands.join(", ")})`;
}

/** Generates the thread generator's source for `body` with spec constants resolved by `spec`. */
export function compileKernelSource(
  body: readonly Stmt[],
  spec: (s: Size) => number,
  bufferElem: (array: string) => ElemType | undefined = () => undefined,
): CompiledSource {
  const syncs: SyncPoint[] = [];

  const ex = (e: Expr): string => {
    switch (e.k) {
      case "const":
        return typeof e.value === "boolean" ? String(e.value) : num(e.value);
      case "local":
        return `v_${e.name}`;
      case "param":
        return `E.u.${e.name}`;
      case "spec":
        return String(spec({ spec: e.name }));
      case "builtin":
        return "axis" in e ? `T.${AXIS_FIELD[e.name] ?? "?"}${e.axis}` : `T.${SCALAR_FIELD[e.name] ?? "?"}`;
      case "load":
        return `L_${e.array}(${ex(e.index)}, T)`;
      case "load4": {
        // Packed: lane j holds bytes 4j … 4j + 3, little-endian (decision 2320).
        if (e.packed === true)
          return `((i) => ${JSON.stringify(Array.from({ length: lanesOf(e.type) }, (_, j) => 4 * j))}.map((j) => ((L_${e.array}(i + j, T) & 255) | ((L_${e.array}(i + j + 1, T) & 255) << 8) | ((L_${e.array}(i + j + 2, T) & 255) << 16) | ((L_${e.array}(i + j + 3, T) & 255) << 24)) >>> 0))(${ex(e.index)})`;
        // 8-bit storage takes the extension `type` names; other elements load as `load` widens them.
        const byte = bufferElem(e.array) === "u8" || bufferElem(e.array) === "i8";
        const ext = !byte ? "" : elemOf(e.type) === "i32" ? " << 24 >> 24" : " & 255";
        const js = JSON.stringify(Array.from({ length: lanesOf(e.type) }, (_, j) => j));
        return `((i) => ${js}.map((j) => L_${e.array}(i + j, T)${ext}))(${ex(e.index)})`;
      }
      case "unary": {
        const el = elemOf(e.type);
        return lanewise(e.type, [ex(e.a)], ([a]) =>
          e.op === "neg"
            ? el === "i32"
              ? `((-${a}) | 0)`
              : `(-${a})`
            : el === "bool"
              ? `(!${a})`
              : el === "u32"
                ? `((~${a}) >>> 0)`
                : `(~${a})`,
        );
      }
      case "binary":
        return lanewise(e.type, [ex(e.a), ex(e.b)], ([a, b]) =>
          scalarBinary(e.op, elemOf(e.type), a as string, b as string),
        );
      case "cmp": {
        const sym: Record<string, string> = { eq: "===", ne: "!==", lt: "<", le: "<=", gt: ">", ge: ">=" };
        return `(${ex(e.a)} ${sym[e.op] ?? "?"} ${ex(e.b)})`;
      }
      case "select":
        return `H.sel(${ex(e.cond)}, ${ex(e.a)}, ${ex(e.b)})`;
      case "call":
        if (e.fn === "dot4U8I8") return lanewise(e.type, e.args.map(ex), ([c, a, b]) => `H.dot4U8I8(${c}, ${a}, ${b})`);
        return lanewise(e.type, e.args.map(ex), (xs) => scalarCall(e.fn, elemOf(e.type), xs));
      case "cast":
      case "bitcast": {
        const from = exprType(e.a);
        const conv = e.k === "cast" ? scalarCast : scalarBitcast;
        return lanewise(e.type, [ex(e.a)], ([a]) => conv(elemOf(from), elemOf(e.type), a as string));
      }
      case "pack":
        return `H.pack_${e.fmt}(${ex(e.a)})`;
      case "unpack":
        return `H.unpack_${e.fmt}(${ex(e.a)})`;
      case "vec":
        return `[${e.elems.map(ex).join(", ")}]`;
      case "extract":
        return `${ex(e.a)}[${e.lane}]`;
      default:
        e satisfies never;
        throw new Error("invariant: unknown expression");
    }
  };

  const out: string[] = [];
  const st = (s: Stmt, path: string, ind: string): void => {
    switch (s.s) {
      case "let":
        out.push(`${ind}const v_${s.name} = ${ex(s.value)};`);
        return;
      case "var":
        out.push(`${ind}let v_${s.name} = ${ex(s.init)};`);
        return;
      case "array":
        out.push(
          `${ind}const L_${s.name} = E.priv(${JSON.stringify(s.name)}, ${JSON.stringify(s.elem)}, ${spec(s.length)}); const S_${s.name} = L_${s.name}.store;`,
        );
        return;
      case "assign":
        out.push(`${ind}v_${s.name} = ${ex(s.value)};`);
        return;
      case "store":
        out.push(`${ind}S_${s.array}(${ex(s.index)}, ${ex(s.value)}, T);`);
        return;
      case "for": {
        const v = `v_${s.var}`;
        // Bounds and step are evaluated once; the induction variable does not wrap (mathematical `<`).
        out.push(`${ind}{ const e_${s.var} = ${ex(s.end)}, d_${s.var} = ${ex(s.step)};`);
        out.push(`${ind}for (let ${v} = ${ex(s.start)}; ${v} < e_${s.var}; ${v} += d_${s.var}) {`);
        s.body.forEach((b, i) => st(b, `${path}.body[${i}]`, ind + "  "));
        out.push(`${ind}} }`);
        return;
      }
      case "while":
        out.push(`${ind}while (${ex(s.cond)}) {`);
        s.body.forEach((b, i) => st(b, `${path}.body[${i}]`, ind + "  "));
        out.push(`${ind}}`);
        return;
      case "if":
        out.push(`${ind}if (${ex(s.cond)}) {`);
        s.then.forEach((b, i) => st(b, `${path}.then[${i}]`, ind + "  "));
        out.push(`${ind}} else {`);
        s.else.forEach((b, i) => st(b, `${path}.else[${i}]`, ind + "  "));
        out.push(`${ind}}`);
        return;
      case "break":
      case "continue":
      case "return":
        out.push(`${ind}${s.s};`);
        return;
      case "barrier":
        syncs.push({ kind: "barrier", path });
        out.push(`${ind}yield ${syncs.length - 1};`);
        return;
      case "subgroup":
        syncs.push({ kind: "subgroup", path, op: s.op, type: s.type });
        out.push(`${ind}T.sv = ${ex(s.value)}; T.sl = ${s.lane === undefined ? 0 : ex(s.lane)};`);
        out.push(`${ind}const v_${s.name} = yield ${syncs.length - 1};`);
        return;
      case "mma":
        syncs.push({ kind: "subgroup", path, op: "mma", type: "vec4<f32>", input: s.input, shape: s.shape });
        out.push(`${ind}T.sv = [${ex(s.a)}, ${ex(s.b)}, ${ex(s.c)}]; T.sl = 0;`);
        out.push(`${ind}const v_${s.name} = yield ${syncs.length - 1};`);
        return;
      case "atomic": {
        const args = [
          JSON.stringify(s.op),
          ex(s.index),
          s.value === undefined ? "0" : ex(s.value),
          s.compare === undefined ? "0" : ex(s.compare),
        ];
        const call = `A_${s.array}(${args.join(", ")})`;
        out.push(s.name === undefined ? `${ind}${call};` : `${ind}const v_${s.name} = ${call};`);
        return;
      }
      default:
        s satisfies never;
    }
  };
  body.forEach((s, i) => st(s, `body[${i}]`, "  "));
  return { source: out.join("\n"), syncs };
}

/** The type of an expression node (every node carries it). */
function exprType(e: Expr): ValueType {
  invariant(typeof e.type === "string", "expression without a type");
  return e.type;
}
