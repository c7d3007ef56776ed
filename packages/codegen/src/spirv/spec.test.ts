import { existsSync, readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import {
  BuiltIn,
  Capability,
  Decoration,
  GLSL,
  GroupOperation,
  MemorySemantics,
  Op,
  Scope,
  StorageClass,
} from "./spec.js";

// The Khronos machine-readable grammar (Debian package spirv-headers) is the oracle for every number.
const core = "/usr/include/spirv/unified1/spirv.core.grammar.json";
const glsl = "/usr/include/spirv/unified1/extinst.glsl.std.450.grammar.json";
const have = existsSync(core) && existsSync(glsl);

describe.skipIf(!have)(
  `SPIR-V numbers match the Khronos grammar${have ? "" : " (skipped: spirv-headers not installed)"}`,
  () => {
    const g = have
      ? (JSON.parse(readFileSync(core, "utf8")) as {
          instructions: { opname: string; opcode: number }[];
          operand_kinds: { kind: string; enumerants?: { enumerant: string; value: number | string }[] }[];
        })
      : undefined;
    test("opcodes", () => {
      const ops = new Map(g!.instructions.map((i) => [i.opname.slice(2), i.opcode]));
      for (const [name, code] of Object.entries(Op)) expect([name, ops.get(name)]).toEqual([name, code]);
    });
    test.each([
      ["Capability", Capability],
      ["Decoration", Decoration],
      ["BuiltIn", BuiltIn],
      ["StorageClass", StorageClass],
      ["Scope", Scope],
      ["GroupOperation", GroupOperation],
      ["MemorySemantics", MemorySemantics],
    ] as const)("%s", (kind, table) => {
      const k = g!.operand_kinds.find((x) => x.kind === kind)!;
      const values = new Map(
        k.enumerants!.map((e) => [e.enumerant, typeof e.value === "string" ? Number(e.value) : e.value]),
      );
      for (const [name, v] of Object.entries(table)) expect([name, values.get(name)]).toEqual([name, v]);
    });
    test("GLSL.std.450", () => {
      const gl = JSON.parse(readFileSync(glsl, "utf8")) as { instructions: { opname: string; opcode: number }[] };
      const ops = new Map(gl.instructions.map((i) => [i.opname, i.opcode]));
      for (const [name, v] of Object.entries(GLSL)) expect([name, ops.get(name)]).toEqual([name, v]);
    });
  },
);
