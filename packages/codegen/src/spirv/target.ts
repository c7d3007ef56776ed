// The SPIR-V target (Vulkan 1.1, SPIR-V 1.3): descriptor layout, builtins and module assembly around the
// shared register-machine driver. 16-bit storage is used for bf16/f16 buffers when the caps list the type.

import { elemBytes, type Kernel } from "@poot/kernel-dsl";
import type { BindingSlot, DeviceCaps, LowerOptions, Target, TargetCode } from "../caps.js";
import { prepare, stmtExprs, walkExpr, walkStmts } from "../common/prepare.js";
import { driveBody } from "../common/regs.js";
import { SpirvModule } from "./module.js";
import { SpirvEmitter } from "./select.js";
import { BuiltIn, Capability, Decoration, ExecutionMode, ExecutionModel, Op, StorageClass } from "./spec.js";

const BUILTINS: Record<string, readonly [number, boolean]> = {
  global_id: [BuiltIn.GlobalInvocationId, true],
  local_id: [BuiltIn.LocalInvocationId, true],
  workgroup_id: [BuiltIn.WorkgroupId, true],
  num_workgroups: [BuiltIn.NumWorkgroups, true],
  local_index: [BuiltIn.LocalInvocationIndex, false],
  subgroup_lane: [BuiltIn.SubgroupLocalInvocationId, false],
};

/**
 * Lowers a kernel to a SPIR-V module. Descriptor set 0: buffers at bindings 0..n-1 in binding order,
 * then one uniform block holding every scalar uniform (4 bytes each, declaration order).
 */
export function lowerSpirv(kernel: Kernel, caps: DeviceCaps, options: LowerOptions = {}): TargetCode {
  const p = prepare(kernel, caps, "spirv", options);
  const m = new SpirvModule();
  m.capability(Capability.Shader);
  const voidT = m.typeVoid();
  const fn = m.function(voidT, m.typeFunction(voidT));
  const e = new SpirvEmitter(m, fn, kernel.name, p.subgroupSize, p.workgroupSize);
  // SPIR-V 1.3 entry-point interfaces list only Input/Output variables (the builtins).
  const iface: number[] = [];
  const slots: BindingSlot[] = [];

  for (const b of p.buffers) {
    const native16 = (b.elem === "bf16" || b.elem === "f16") && caps.dtypes.includes(b.elem);
    const words = !native16 && (b.elem === "bf16" || b.elem === "f16" || b.elem === "u8" || b.elem === "i8");
    if (native16) m.capability(Capability.StorageBuffer16BitAccess);
    const stored = words ? m.typeInt(32, false) : b.atomic ? m.typeInt(32, false) : e.type(b.elem);
    const stride = words ? 4 : elemBytes(b.elem);
    const struct = m.typeStruct([m.typeRuntimeArray(stored, stride)], { block: true, offsets: [0] });
    if (b.access === "read" && !b.atomic) m.memberDecorate(struct, 0, Decoration.NonWritable);
    const v = m.variable(m.typePointer(StorageClass.StorageBuffer, struct), StorageClass.StorageBuffer);
    m.decorate(v, Decoration.DescriptorSet, 0);
    m.decorate(v, Decoration.Binding, slots.length);
    m.name(v, b.name);
    e.arrays.set(b.name, {
      variable: v,
      storageClass: StorageClass.StorageBuffer,
      storedType: stored,
      elem: b.elem,
      inBlock: true,
      words,
    });
    slots.push({ kind: "buffer", slot: slots.length, buffer: b.name });
  }
  if (kernel.uniforms.length > 0) {
    const members = kernel.uniforms.map((u) => e.type(u.type));
    const struct = m.typeStruct(members, { block: true, offsets: members.map((_, i) => 4 * i) });
    const v = m.variable(m.typePointer(StorageClass.Uniform, struct), StorageClass.Uniform);
    m.decorate(v, Decoration.DescriptorSet, 0);
    m.decorate(v, Decoration.Binding, slots.length);
    m.name(v, "params");
    kernel.uniforms.forEach((u, i) => {
      const ptr = fn.op(Op.AccessChain, m.typePointer(StorageClass.Uniform, e.type(u.type)), v, m.u32(i));
      e.params.set(u.name, { ptr, type: u.type });
    });
    slots.push({ kind: "uniforms", slot: slots.length, order: kernel.uniforms.map((u) => u.name) });
  }
  for (const a of p.shared) {
    const elemT = a.atomic ? m.typeInt(32, false) : e.type(a.elem);
    const v = m.variable(m.typePointer(StorageClass.Workgroup, m.typeArray(elemT, a.len)), StorageClass.Workgroup);
    m.name(v, a.name);
    e.arrays.set(a.name, {
      variable: v,
      storageClass: StorageClass.Workgroup,
      storedType: elemT,
      elem: a.elem,
      inBlock: false,
      words: false,
    });
  }

  const used = new Set<string>();
  walkStmts(kernel.body, (s) =>
    stmtExprs(s).forEach((x) => walkExpr(x, (y) => void (y.k === "builtin" && used.add(y.name)))),
  );
  if (used.has("subgroup_id")) used.add("local_index");
  for (const name of used) {
    const b = BUILTINS[name];
    if (b === undefined) continue;
    const t = b[1] ? m.typeVector(m.typeInt(32, false), 3) : m.typeInt(32, false);
    const v = m.variable(m.typePointer(StorageClass.Input, t), StorageClass.Input);
    m.decorate(v, Decoration.BuiltIn, b[0]);
    iface.push(v);
    e.builtins.set(name, v);
  }
  if (used.has("subgroup_id")) e.builtins.set("subgroup_id", e.builtins.get("local_index")!);
  if (p.usesSubgroups) {
    for (const c of [
      Capability.GroupNonUniform,
      Capability.GroupNonUniformArithmetic,
      Capability.GroupNonUniformShuffle,
    ])
      m.capability(c);
  }

  driveBody(p, e);
  fn.end();
  m.entryPoint(ExecutionModel.GLCompute, fn.id, kernel.name, iface);
  m.executionMode(fn.id, ExecutionMode.LocalSize, ...p.workgroupSize);
  return {
    target: "spirv",
    kernel: kernel.name,
    entryPoint: kernel.name,
    ext: "spv",
    binary: m.bytes(),
    workgroupSize: p.workgroupSize,
    bindings: slots,
  };
}

/** The SPIR-V target (Vulkan). */
export const spirvTarget: Target = { name: "spirv", lower: lowerSpirv };
