import { describe, expect, test } from "vitest";
import { validateSpirv } from "../validate/spirv-val.js";
import { instruction, SpirvModule, stringWords } from "./module.js";
import { Capability, Decoration, ExecutionMode, ExecutionModel, MAGIC, Op, StorageClass } from "./spec.js";

describe("SpirvModule", () => {
  test("literal strings are NUL-terminated little-endian words", () => {
    // "main" = 6d 61 69 6e, then a zero word for the terminator.
    expect(stringWords("main")).toEqual([0x6e69616d, 0]);
    expect(stringWords("abc")).toEqual([0x00636261]);
  });
  test("an instruction's first word is word count << 16 | opcode", () => {
    expect(instruction(Op.Capability, [1])).toEqual([(2 << 16) | 17, 1]);
  });
  test("types and constants are deduplicated, structs are not", () => {
    const m = new SpirvModule();
    expect(m.typeInt(32, false)).toBe(m.typeInt(32, false));
    expect(m.typeInt(32, true)).not.toBe(m.typeInt(32, false));
    expect(m.u32(7)).toBe(m.u32(7));
    expect(m.f32(1)).not.toBe(m.u32(0x3f800000));
    expect(m.typeStruct([m.typeFloat(32)])).not.toBe(m.typeStruct([m.typeFloat(32)]));
  });
  test("a hand-built compute shader with a loop, a break and an if passes spirv-val", async () => {
    const m = new SpirvModule();
    m.capability(Capability.Shader);
    const u32 = m.typeInt(32, false);
    const block = m.typeStruct([m.typeRuntimeArray(u32, 4)], { block: true, offsets: [0] });
    const buf = m.variable(m.typePointer(StorageClass.StorageBuffer, block), StorageClass.StorageBuffer);
    m.decorate(buf, Decoration.DescriptorSet, 0);
    m.decorate(buf, Decoration.Binding, 0);
    const v = m.typeVoid();
    const fn = m.function(v, m.typeFunction(v));
    const i = fn.localVariable(m.typePointer(StorageClass.Function, u32));
    fn.stmt(Op.Store, i, m.u32(0));
    const bool = m.typeBool();
    fn.loop(
      () => fn.op(Op.ULessThan, bool, fn.op(Op.Load, u32, i), m.u32(10)),
      ({ merge }) => {
        const iv = fn.op(Op.Load, u32, i);
        const p = fn.op(Op.AccessChain, m.typePointer(StorageClass.StorageBuffer, u32), buf, m.u32(0), iv);
        fn.stmt(Op.Store, p, iv);
        fn.ifThen(fn.op(Op.IEqual, bool, iv, m.u32(7)), () => fn.terminate(Op.Branch, merge));
      },
      () => fn.stmt(Op.Store, i, fn.op(Op.IAdd, u32, fn.op(Op.Load, u32, i), m.u32(1))),
    );
    fn.end();
    m.entryPoint(ExecutionModel.GLCompute, fn.id, "main", []);
    m.executionMode(fn.id, ExecutionMode.LocalSize, 1, 1, 1);
    const words = m.encode();
    expect(words[0]).toBe(MAGIC);
    expect(words[3]).toBeGreaterThan(20); // id bound covers every id used
    const r = await validateSpirv(m.bytes());
    if (r.status === "unavailable") return;
    expect(r.status === "invalid" ? r.message : r.status).toBe("ok");
  });
});
