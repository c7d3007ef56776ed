// Lossless, versioned JSON for graphs: packed formats are listed once by name, Computed data is
// base64 of its little-endian storage bytes, and non-finite or -0 literals are spelled as strings.

import { isPacked, isScalarDType, type DType } from "./dtype.js";
import { GraphError } from "./errors.js";
import {
  isLiteral,
  type Eqn,
  type Graph,
  type Operand,
  type ParamValue,
  type Storage,
  type StoredData,
  type Value,
} from "./graph.js";
import type { PackedFormat } from "./packed.js";
import { storedClass, validateGraph, type OpsOption } from "./validate.js";

/** The JSON format version written by `graphToJson`. */
export const GRAPH_JSON_VERSION = 1;

type JsonNum = number | "NaN" | "Infinity" | "-Infinity" | "-0";

function encNum(x: number): JsonNum {
  if (Number.isNaN(x)) return "NaN";
  if (x === Infinity) return "Infinity";
  if (x === -Infinity) return "-Infinity";
  if (Object.is(x, -0)) return "-0";
  return x;
}

function decNum(x: unknown, path: string): number {
  if (typeof x === "number") return x;
  const m: Record<string, number> = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity, "-0": -0 };
  if (typeof x === "string" && x in m) return m[x]!;
  return perr(path, `expected a number, got ${JSON.stringify(x)}`);
}

function perr(path: string, message: string): never {
  throw new GraphError("json-parse", message, { path });
}

/** Stored data of dtype `d` over a copy of `bytes` (little-endian, as every supported host is). */
function storedArray(d: DType, bytes: Uint8Array): StoredData {
  const cls = storedClass(d);
  if (bytes.byteLength % cls.BYTES_PER_ELEMENT !== 0)
    throw new GraphError(
      "json-parse",
      `computed data of ${bytes.byteLength} bytes is not a whole number of ${cls.name} elements`,
    );
  return new cls(bytes.slice().buffer);
}

/** Bytes of `data` re-typed through the dtype's storage array, so they always mean the same thing. */
function canonical(d: DType, data: StoredData): Uint8Array {
  const t = retype(d, data);
  return new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
}

function retype(d: DType, data: StoredData): StoredData {
  return storedClass(d).from(data);
}

function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function fromBase64(s: unknown, path: string): Uint8Array {
  if (typeof s !== "string") perr(path, "expected a base64 string");
  let bin: string;
  try {
    bin = atob(s);
  } catch {
    return perr(path, "invalid base64");
  }
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Serializes a graph to a JSON-compatible object (`{ version: 1, ... }`); non-finite params raise `bad-param`. */
export function graphToJson(g: Graph): unknown {
  const formats: Record<string, PackedFormat> = {};
  const dt = (d: DType): unknown => {
    if (!isPacked(d)) return d;
    formats[d.packed.name] = d.packed;
    return { packed: d.packed.name };
  };
  const values = g.values.map((v) => {
    const s = v.storage;
    const storage = s.kind === "computed" ? { kind: "computed", base64: toBase64(canonical(v.dtype, s.data)) } : s;
    return { id: v.id, dtype: dt(v.dtype), shape: v.shape, storage, ...(v.name !== undefined ? { name: v.name } : {}) };
  });
  g.eqns.forEach((e, k) => {
    // JSON has no NaN/Infinity; params must stay plain finite data to round-trip.
    if (!finiteParams(e.params))
      throw new GraphError("bad-param", "params contain a non-finite number, which JSON cannot hold", {
        eqn: k,
        op: e.op,
        values: [e.out],
      });
  });
  const eqns = g.eqns.map((e) => ({
    op: e.op,
    inputs: e.inputs.map((o) => (isLiteral(o) ? { lit: encNum(o.lit), dtype: o.dtype } : o)),
    params: e.params,
    out: e.out,
  }));
  return { version: GRAPH_JSON_VERSION, formats, values, eqns, outputs: g.outputs, states: g.states };
}

function finiteParams(v: ParamValue): boolean {
  if (typeof v === "number") return Number.isFinite(v) && !Object.is(v, -0);
  if (Array.isArray(v)) return v.every(finiteParams);
  if (v !== null && typeof v === "object") return Object.values(v).every(finiteParams);
  return true;
}

/** Serializes a graph to a JSON string. */
export function graphToJsonString(g: Graph): string {
  return JSON.stringify(graphToJson(g));
}

function obj(x: unknown, path: string): Record<string, unknown> {
  if (typeof x !== "object" || x === null || Array.isArray(x)) perr(path, "expected an object");
  return x as Record<string, unknown>;
}

function arr(x: unknown, path: string): unknown[] {
  if (!Array.isArray(x)) perr(path, "expected an array");
  return x;
}

function int(x: unknown, path: string): number {
  if (!Number.isInteger(x)) perr(path, `expected an integer, got ${JSON.stringify(x)}`);
  return x as number;
}

function str(x: unknown, path: string): string {
  if (typeof x !== "string") perr(path, "expected a string");
  return x;
}

/** Parses a graph from `graphToJson` output (object or string) and validates it; errors are typed. */
export function graphFromJson(input: unknown, options: OpsOption = {}): Graph {
  let raw = input;
  if (typeof input === "string") {
    try {
      raw = JSON.parse(input);
    } catch (e) {
      perr("$", `not JSON: ${(e as Error).message}`);
    }
  }
  const root = obj(raw, "$");
  if (root.version !== GRAPH_JSON_VERSION)
    throw new GraphError(
      "json-version",
      `unsupported graph JSON version ${JSON.stringify(root.version)}; this reader understands ${GRAPH_JSON_VERSION}`,
      { path: "$.version" },
    );
  const formats = obj(root.formats ?? {}, "$.formats") as Record<string, PackedFormat>;
  const dtype = (x: unknown, path: string): DType => {
    if (isScalarDType(x)) return x;
    const name = str(obj(x, path).packed, `${path}.packed`);
    const f = formats[name];
    if (f === undefined) perr(path, `packed format "${name}" is not listed in formats`);
    return { packed: f };
  };
  const values: Value[] = arr(root.values, "$.values").map((x, i) => {
    const p = `$.values[${i}]`;
    const v = obj(x, p);
    const d = dtype(v.dtype, `${p}.dtype`);
    const shape = arr(v.shape, `${p}.shape`).map((n, j) => int(n, `${p}.shape[${j}]`));
    const s = obj(v.storage, `${p}.storage`);
    let storage: Storage;
    switch (s.kind) {
      case "device":
        storage = { kind: "device" };
        break;
      case "const":
        storage = { kind: "const", key: str(s.key, `${p}.storage.key`) };
        break;
      case "state":
        storage = { kind: "state", key: str(s.key, `${p}.storage.key`) };
        break;
      case "slot":
        storage = { kind: "slot", key: str(s.key, `${p}.storage.key`), slot: str(s.slot, `${p}.storage.slot`) };
        break;
      case "computed":
        storage = { kind: "computed", data: storedArray(d, fromBase64(s.base64, `${p}.storage.base64`)) };
        break;
      default:
        return perr(`${p}.storage.kind`, `unknown storage kind ${JSON.stringify(s.kind)}`);
    }
    const value: Value = { id: int(v.id, `${p}.id`), dtype: d, shape, storage };
    return v.name === undefined ? value : { ...value, name: str(v.name, `${p}.name`) };
  });
  const eqns: Eqn[] = arr(root.eqns, "$.eqns").map((x, i) => {
    const p = `$.eqns[${i}]`;
    const e = obj(x, p);
    const inputs = arr(e.inputs, `${p}.inputs`).map((o, j): Operand => {
      if (typeof o === "number") return int(o, `${p}.inputs[${j}]`);
      const l = obj(o, `${p}.inputs[${j}]`);
      if (!isScalarDType(l.dtype)) perr(`${p}.inputs[${j}].dtype`, "literal needs a scalar dtype");
      return { lit: decNum(l.lit, `${p}.inputs[${j}].lit`), dtype: l.dtype };
    });
    return {
      op: str(e.op, `${p}.op`),
      inputs,
      params: obj(e.params ?? {}, `${p}.params`) as Eqn["params"],
      out: int(e.out, `${p}.out`),
    };
  });
  const outputs = arr(root.outputs, "$.outputs").map((x, i) => {
    const o = obj(x, `$.outputs[${i}]`);
    return { name: str(o.name, `$.outputs[${i}].name`), value: int(o.value, `$.outputs[${i}].value`) };
  });
  const states = arr(root.states, "$.states").map((x, i) => {
    const s = obj(x, `$.states[${i}]`);
    return {
      key: str(s.key, `$.states[${i}].key`),
      input: int(s.input, `$.states[${i}].input`),
      output: int(s.output, `$.states[${i}].output`),
    };
  });
  const g: Graph = { values, eqns, outputs, states };
  validateGraph(g, options);
  return g;
}
