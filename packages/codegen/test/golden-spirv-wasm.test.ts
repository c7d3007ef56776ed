// Golden tests, binary targets: the SPIR-V (disassembled) and Wasm (hex bytes) of the two golden kernels, pinned as
// inline snapshots (the text targets are in golden.test.ts).

import { describe, expect, test } from "vitest";
import { lowerSpirv, lowerWasm } from "@poot/codegen";
import { VULKAN_CAPS, WASM_CAPS } from "./helpers.js";
import { axpy, widen, spirvDis, disassemble, hex } from "./golden-kernels.js";

describe("SPIR-V (disassembled)", () => {
  test.skipIf(!spirvDis)("axpy", () =>
    expect(disassemble(lowerSpirv(axpy, VULKAN_CAPS).binary!)).toMatchInlineSnapshot(`
    "               OpCapability Shader
              %5 = OpExtInstImport "GLSL.std.450"
                   OpMemoryModel Logical GLSL450
                   OpEntryPoint GLCompute %3 "axpy" %26
                   OpExecutionMode %3 LocalSize 64 1 1
                   OpName %10 "x"
                   OpName %13 "y"
                   OpName %17 "params"
                   OpDecorate %7 ArrayStride 4
                   OpDecorate %8 Block
                   OpMemberDecorate %8 0 Offset 0
                   OpMemberDecorate %8 0 NonWritable
                   OpDecorate %10 DescriptorSet 0
                   OpDecorate %10 Binding 0
                   OpDecorate %11 Block
                   OpMemberDecorate %11 0 Offset 0
                   OpDecorate %13 DescriptorSet 0
                   OpDecorate %13 Binding 1
                   OpDecorate %15 Block
                   OpMemberDecorate %15 0 Offset 0
                   OpMemberDecorate %15 1 Offset 4
                   OpDecorate %17 DescriptorSet 0
                   OpDecorate %17 Binding 2
                   OpDecorate %26 BuiltIn GlobalInvocationId
              %1 = OpTypeVoid
              %2 = OpTypeFunction %1
              %6 = OpTypeFloat 32
              %7 = OpTypeRuntimeArray %6
              %8 = OpTypeStruct %7
              %9 = OpTypePointer StorageBuffer %8
             %10 = OpVariable %9 StorageBuffer
             %11 = OpTypeStruct %7
             %12 = OpTypePointer StorageBuffer %11
             %13 = OpVariable %12 StorageBuffer
             %14 = OpTypeInt 32 0
             %15 = OpTypeStruct %14 %6
             %16 = OpTypePointer Uniform %15
             %17 = OpVariable %16 Uniform
             %18 = OpTypePointer Uniform %14
             %19 = OpConstant %14 0
             %21 = OpTypePointer Uniform %6
             %22 = OpConstant %14 1
             %24 = OpTypeVector %14 3
             %25 = OpTypePointer Input %24
             %26 = OpVariable %25 Input
             %30 = OpTypeBool
             %34 = OpTypePointer StorageBuffer %6
              %3 = OpFunction %1 None %2
              %4 = OpLabel
             %20 = OpAccessChain %18 %17 %19
             %23 = OpAccessChain %21 %17 %22
             %27 = OpLoad %24 %26
             %28 = OpCompositeExtract %14 %27 0
             %29 = OpLoad %14 %20
             %31 = OpULessThan %30 %28 %29
                   OpSelectionMerge %33 None
                   OpBranchConditional %31 %32 %33
             %32 = OpLabel
             %35 = OpAccessChain %34 %10 %19 %28
             %36 = OpLoad %6 %35
             %37 = OpAccessChain %34 %13 %19 %28
             %38 = OpLoad %6 %37
             %39 = OpLoad %6 %23
             %40 = OpFMul %6 %36 %39
             %41 = OpFAdd %6 %40 %38
             %42 = OpAccessChain %34 %13 %19 %28
                   OpStore %42 %41
                   OpBranch %33
             %33 = OpLabel
                   OpReturn
                   OpFunctionEnd
    "
  `),
  );
  test.skipIf(!spirvDis)("bf16_widen", () =>
    expect(disassemble(lowerSpirv(widen, VULKAN_CAPS).binary!)).toMatchInlineSnapshot(`
    "               OpCapability Shader
                   OpCapability StorageBuffer16BitAccess
              %5 = OpExtInstImport "GLSL.std.450"
                   OpMemoryModel Logical GLSL450
                   OpEntryPoint GLCompute %3 "bf16_widen" %19
                   OpExecutionMode %3 LocalSize 32 1 1
                   OpName %10 "src"
                   OpName %15 "out"
                   OpDecorate %7 ArrayStride 2
                   OpDecorate %8 Block
                   OpMemberDecorate %8 0 Offset 0
                   OpMemberDecorate %8 0 NonWritable
                   OpDecorate %10 DescriptorSet 0
                   OpDecorate %10 Binding 0
                   OpDecorate %12 ArrayStride 4
                   OpDecorate %13 Block
                   OpMemberDecorate %13 0 Offset 0
                   OpDecorate %15 DescriptorSet 0
                   OpDecorate %15 Binding 1
                   OpDecorate %19 BuiltIn GlobalInvocationId
              %1 = OpTypeVoid
              %2 = OpTypeFunction %1
              %6 = OpTypeInt 16 0
              %7 = OpTypeRuntimeArray %6
              %8 = OpTypeStruct %7
              %9 = OpTypePointer StorageBuffer %8
             %10 = OpVariable %9 StorageBuffer
             %11 = OpTypeFloat 32
             %12 = OpTypeRuntimeArray %11
             %13 = OpTypeStruct %12
             %14 = OpTypePointer StorageBuffer %13
             %15 = OpVariable %14 StorageBuffer
             %16 = OpTypeInt 32 0
             %17 = OpTypeVector %16 3
             %18 = OpTypePointer Input %17
             %19 = OpVariable %18 Input
             %22 = OpTypePointer StorageBuffer %6
             %23 = OpConstant %16 0
             %27 = OpConstant %16 16
             %30 = OpTypePointer StorageBuffer %11
              %3 = OpFunction %1 None %2
              %4 = OpLabel
             %20 = OpLoad %17 %19
             %21 = OpCompositeExtract %16 %20 0
             %24 = OpAccessChain %22 %10 %23 %21
             %25 = OpLoad %6 %24
             %26 = OpUConvert %16 %25
             %28 = OpShiftLeftLogical %16 %26 %27
             %29 = OpBitcast %11 %28
             %31 = OpAccessChain %30 %15 %23 %21
                   OpStore %31 %29
                   OpReturn
                   OpFunctionEnd
    "
  `),
  );
});

describe("Wasm (bytes)", () => {
  test("bf16_widen", () =>
    expect(hex(lowerWasm(widen, WASM_CAPS).binary!)).toMatchInlineSnapshot(`
    "0061736d0100000001190460017d017d60017f017d60017d017f60067f7f7f7f
    7f7f00027909046d617468036578700000046d617468036c6f670000046d6174
    680474616e680000046d617468036572660000046d6174680373696e0000046d
    61746803636f730000046d6174680a6631365f746f5f6633320001046d617468
    0a6633325f746f5f663136000203656e76066d656d6f72790203018080040302
    0103070e010a626631365f776964656e00080aba0101b70102097f017d200028
    0200210b2000280204210c20002802142108200028021821094110210a200421
    0602400340200620054f0d012009200620046b200a6c6a210702402007410036
    02000b200641016a21060c000b0b2004210602400340200620054f0d01200920
    0620046b200a6c6a2107024020072802000d002006412070210d200141206c20
    0d6a210e200b200e41026c6a2f0100411074be210f200c200e41046c6a200f38
    02000b200641016a21060c000b0b0b"
  `));
  test("axpy", () =>
    expect(hex(lowerWasm(axpy, WASM_CAPS).binary!)).toMatchInlineSnapshot(`
      "0061736d0100000001190460017d017d60017f017d60017d017f60067f7f7f7f
      7f7f00027909046d617468036578700000046d617468036c6f670000046d6174
      680474616e680000046d617468036572660000046d6174680373696e0000046d
      61746803636f730000046d6174680a6631365f746f5f6633320001046d617468
      0a6633325f746f5f663136000203656e76066d656d6f72790203018080040302
      0103070801046178707900080aed0101ea01020a7f057d2000280200210b2000
      280204210c200028021c2108200028022021094110210a200421060240034020
      0620054f0d012009200620046b200a6c6a21070240200741003602000b200641
      016a21060c000b0b2004210602400340200620054f0d012009200620046b200a
      6c6a2107024020072802000d00200641c00070210d200141c0006c200d6a210e
      2000280208210d200e200d49210f200f0440200b200e41046c6a2a0200211020
      0c200e41046c6a2a0200211120002a020c211220102012942113201320119221
      14200c200e41046c6a20143802000b0b200641016a21060c000b0b0b"
    `));
});
