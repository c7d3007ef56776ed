// The text printer: storage-class declarations first, then one equation per line, jaxpr-like,
// e.g. `%12:f32[1,64] = mul %10 %11  # layers.0.attn.q`. Meant for terminals and golden tests.

import { dtypeName } from "./dtype.js";
import { isLiteral, type Graph, type Operand, type ParamValue, type Value } from "./graph.js";
import { shapeString } from "./shape.js";

function ty(v: Value): string {
  return `${dtypeName(v.dtype)}${shapeString(v.shape)}`;
}

/** Prints a number so that NaN, ±Infinity and -0 stay visible. */
function num(x: number): string {
  if (Object.is(x, -0)) return "-0";
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  return String(x);
}

function operand(o: Operand): string {
  return isLiteral(o) ? `${num(o.lit)}:${o.dtype}` : `%${o}`;
}

function param(v: ParamValue): string {
  if (typeof v === "number") return num(v);
  if (Array.isArray(v)) return `[${v.map(param).join(",")}]`;
  if (v !== null && typeof v === "object")
    return `{${Object.entries(v)
      .map(([k, x]) => `${k}=${param(x)}`)
      .join(" ")}}`;
  return String(v);
}

function decl(v: Value): string | null {
  const s = v.storage;
  const nm = v.name !== undefined ? `  # ${v.name}` : "";
  switch (s.kind) {
    case "device":
      return null;
    case "const":
      return `const %${v.id}:${ty(v)} "${s.key}"${nm}`;
    case "slot":
      return `slot %${v.id}:${ty(v)} ${s.slot} "${s.key}"${nm}`;
    case "state":
      return `state %${v.id}:${ty(v)} "${s.key}"${nm}`;
    case "computed":
      return `computed %${v.id}:${ty(v)} <${s.data.length} elems>${nm}`;
    default:
      return s satisfies never;
  }
}

/** Renders a graph as text: declarations, equations, outputs and state pairs. */
export function printGraph(g: Graph): string {
  const lines: string[] = [];
  for (const v of g.values) {
    const d = decl(v);
    if (d !== null) lines.push(d);
  }
  if (lines.length > 0) lines.push("");
  for (const e of g.eqns) {
    const out = g.values[e.out];
    const head = out === undefined ? `%${e.out}:?` : `%${e.out}:${ty(out)}`;
    const ps = Object.entries(e.params);
    const pstr = ps.length > 0 ? `[${ps.map(([k, v]) => `${k}=${param(v)}`).join(" ")}]` : "";
    const args = e.inputs.map(operand).join(" ");
    const text = `${head} = ${e.op.toLowerCase()}${pstr}${args.length > 0 ? ` ${args}` : ""}`;
    lines.push(out?.name !== undefined ? `${text}  # ${out.name}` : text);
  }
  if (g.outputs.length > 0 || g.states.length > 0) lines.push("");
  for (const o of g.outputs) lines.push(`out ${o.name} = %${o.value}`);
  for (const s of g.states) lines.push(`state_out "${s.key}" %${s.input} <- %${s.output}`);
  return lines.join("\n") + "\n";
}
