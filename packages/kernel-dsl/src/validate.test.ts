// Validator unit tests: one hand-built invalid kernel per error code, each checked for its code and node path.

import { describe, expect, it } from "vitest";
import { KernelValidationError } from "./errors.js";
import type { KernelValidationCode } from "./errors.js";
import type { Expr, Kernel, Stmt } from "./ir.js";
import { assertValidKernel, validateKernel } from "./validate.js";

const u = (value: number): Expr => ({ k: "const", type: "u32", value });
const f = (value: number): Expr => ({ k: "const", type: "f32", value });
const gid: Expr = { k: "builtin", type: "u32", name: "global_id", axis: 0 };

function base(body: Stmt[], extra: Partial<Kernel> = {}): Kernel {
  return {
    name: "k",
    workgroupSize: [64, 1, 1],
    specs: [],
    buffers: [
      { name: "src", binding: 0, elem: "f32", access: "read" },
      { name: "dst", binding: 1, elem: "f32", access: "write" },
      { name: "cnt", binding: 2, elem: "u32", access: "read_write", atomic: true },
    ],
    uniforms: [{ name: "n", type: "u32" }],
    shared: [{ name: "tile", elem: "f32", length: 64 }],
    body,
    ...extra,
  };
}

const load = (array: string, index: Expr = gid): Expr => ({ k: "load", type: "f32", space: "global", array, index });

describe("validateKernel", () => {
  it("accepts a well-formed kernel", () => {
    const ok = base([
      { s: "let", name: "x", type: "f32", value: load("src") },
      {
        s: "store",
        space: "workgroup",
        array: "tile",
        index: { k: "builtin", type: "u32", name: "local_index" },
        value: { k: "local", type: "f32", name: "x" },
      },
      { s: "barrier" },
      {
        s: "store",
        space: "global",
        array: "dst",
        index: gid,
        value: { k: "call", type: "f32", fn: "exp", args: [{ k: "local", type: "f32", name: "x" }] },
      },
      { s: "atomic", op: "add", type: "u32", space: "global", array: "cnt", index: u(0), value: u(1), name: "old" },
    ]);
    expect(validateKernel(ok)).toEqual([]);
  });

  const cases: [KernelValidationCode, string, Kernel][] = [
    ["bad_name", "body[0]", base([{ s: "let", name: "1x", type: "u32", value: u(1) }])],
    ["duplicate_name", "body[0]", base([{ s: "let", name: "src", type: "u32", value: u(1) }])],
    [
      "unknown_name",
      "body[0].value",
      base([{ s: "let", name: "a", type: "u32", value: { k: "local", type: "u32", name: "nope" } }]),
    ],
    ["type_mismatch", "body[0].value", base([{ s: "let", name: "a", type: "u32", value: f(1) }])],
    [
      "bad_operand_type",
      "body[0].value",
      base([{ s: "let", name: "a", type: "f32", value: { k: "binary", type: "f32", op: "shl", a: f(1), b: f(2) } }]),
    ],
    ["bad_literal", "body[0].value", base([{ s: "let", name: "a", type: "f32", value: f(0.1) }])],
    ["bad_size", "workgroupSize[0]", base([], { workgroupSize: [0, 1, 1] })],
    [
      "bad_binding",
      "buffers[1].binding",
      base([], {
        buffers: [
          { name: "a", binding: 0, elem: "f32", access: "read" },
          { name: "b", binding: 0, elem: "f32", access: "read" },
        ],
      }),
    ],
    [
      "assign_to_immutable",
      "body[1]",
      base([
        { s: "let", name: "a", type: "u32", value: u(1) },
        { s: "assign", name: "a", value: u(2) },
      ]),
    ],
    ["access_violation", "body[0]", base([{ s: "store", space: "global", array: "src", index: gid, value: f(1) }])],
    ["atomic_misuse", "body[0]", base([{ s: "store", space: "global", array: "cnt", index: gid, value: u(1) }])],
    ["bad_control_flow", "body[0]", base([{ s: "break" }])],
    ["bad_subgroup", "body[0]", base([{ s: "subgroup", name: "b", type: "f32", op: "broadcast", value: f(1) }])],
    [
      "bad_vector",
      "body[0].value",
      base([{ s: "let", name: "v", type: "vec4<f32>", value: { k: "vec", type: "vec4<f32>", elems: [f(1), f(2)] } }]),
    ],
  ];
  for (const [code, path, kernel] of cases) {
    it(`reports ${code} at ${path}`, () => {
      const issues = validateKernel(kernel);
      expect(issues.map((i) => `${i.code}@${i.path}`)).toContain(`${code}@${path}`);
      expect(() => assertValidKernel(kernel)).toThrow(KernelValidationError);
    });
  }

  it("scopes block declarations: a let inside an if is not visible after it", () => {
    const k = base([
      {
        s: "if",
        cond: { k: "const", type: "bool", value: true },
        then: [{ s: "let", name: "a", type: "u32", value: u(1) }],
        else: [],
      },
      { s: "let", name: "b", type: "u32", value: { k: "local", type: "u32", name: "a" } },
    ]);
    expect(validateKernel(k).map((i) => `${i.code}@${i.path}`)).toEqual(["unknown_name@body[1].value"]);
  });

  it("rejects a load from a write-only buffer and a read of a plain shared array as atomic", () => {
    const k = base([
      { s: "let", name: "a", type: "f32", value: load("dst") },
      { s: "atomic", op: "load", type: "f32", space: "workgroup", array: "tile", index: u(0), name: "b" },
    ]);
    expect(validateKernel(k).map((i) => `${i.code}@${i.path}`)).toEqual([
      "access_violation@body[0].value",
      "atomic_misuse@body[1]",
    ]);
  });

  it("checks the for variable is immutable and loop-scoped", () => {
    const k = base([
      {
        s: "for",
        var: "i",
        type: "u32",
        start: u(0),
        end: u(4),
        step: u(1),
        body: [{ s: "assign", name: "i", value: u(3) }],
      },
      { s: "let", name: "j", type: "u32", value: { k: "local", type: "u32", name: "i" } },
    ]);
    expect(validateKernel(k).map((i) => `${i.code}@${i.path}`)).toEqual([
      "assign_to_immutable@body[0].body[0]",
      "unknown_name@body[1].value",
    ]);
  });
});
