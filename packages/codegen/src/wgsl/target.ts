// The WGSL target: bindings within the device limit, the WGSL dialect of the shared C-like printer, and the prologue.
// Subgroup builtins and `enable f16` appear only when the caps allow them and the kernel needs them.

import { elemOf, isVecType, type Kernel, type ValueType } from "@poot/kernel-dsl";
import type { BindingSlot, DeviceCaps, LowerOptions, Target, TargetCode } from "../caps.js";
import { CStylePrinter, type CStyleDialect } from "../common/cstyle.js";
import { prepare, sizeOf, walkExpr, walkStmts, stmtExprs } from "../common/prepare.js";
import { CodegenError } from "../errors.js";
import { wgslIdent } from "./names.js";
import {
  directElem,
  isWordPacked,
  loadHelper,
  PACKED,
  storeHelper,
  WGSL_HELPERS,
  type WgslBufferPlan,
} from "./memory.js";

const MATH: Record<string, string> = {
  exp: "exp",
  log: "log",
  sqrt: "sqrt",
  rsqrt: "inverseSqrt",
  tanh: "tanh",
  erf: "erf_f32",
  sin: "sin",
  cos: "cos",
  abs: "abs",
  min: "min",
  max: "max",
  fma: "fma",
  floor: "floor",
};
const SUBGROUP: Record<string, string> = {
  reduce_add: "subgroupAdd",
  reduce_max: "subgroupMax",
  reduce_min: "subgroupMin",
  broadcast: "subgroupShuffle",
  shuffle_xor: "subgroupShuffleXor",
  shuffle_idx: "subgroupShuffle",
};
const AXES = ["x", "y", "z"] as const;

/** Decides which buffers are bound directly and which are packed, within `maxStorageBuffers`. */
function planBuffers(
  kernel: Kernel,
  caps: DeviceCaps,
  stored: ReadonlySet<string>,
  nativeF16: boolean,
): { plans: Map<string, WgslBufferPlan>; slots: BindingSlot[]; offsets: string[] } {
  const bufs = [...kernel.buffers].sort((a, b) => a.binding - b.binding);
  const plans = new Map<string, WgslBufferPlan>();
  let packed: typeof bufs = [];
  if (bufs.length > caps.maxStorageBuffers) {
    // Pack read-only plain buffers (the small inputs of a fused kernel) into one, last bindings first.
    const need = bufs.length - caps.maxStorageBuffers + 1;
    const candidates = bufs.filter((b) => b.access === "read" && !b.atomic).reverse();
    if (candidates.length < need || need < 2) {
      throw new CodegenError(
        "binding-limit",
        `kernel binds ${bufs.length} buffers; the device allows ${caps.maxStorageBuffers} and only ${candidates.length} are read-only and packable`,
        { kernel: kernel.name, target: "wgsl", value: bufs.length },
      );
    }
    packed = candidates.slice(0, need);
  }
  const slots: BindingSlot[] = [];
  const offsets: string[] = [];
  let slot = 0;
  for (const b of bufs) {
    if (packed.includes(b)) continue;
    const { wgslElem, atomicWords } = directElem(b, nativeF16, stored.has(b.name) && isWordPacked(b.elem, nativeF16));
    plans.set(b.name, { how: "direct", buf: b, slot, wgslElem, atomicWords });
    slots.push({ kind: "buffer", slot: slot++, buffer: b.name });
  }
  if (packed.length > 0) {
    const members = packed.map((b) => ({ buffer: b.name, offsetUniform: `${b.name}_offset` }));
    for (const b of packed) {
      plans.set(b.name, { how: "packed", buf: b, offset: `params.${b.name}_offset` });
      offsets.push(`${b.name}_offset`);
    }
    slots.push({ kind: "packed", slot: slot++, members });
  }
  return { plans, slots, offsets };
}

function wgslLiteral(type: ValueType, value: number | boolean): string {
  if (type === "bool") return value ? "true" : "false";
  const n = Number(value);
  if (type === "u32") return `${n >>> 0}u`;
  if (type === "i32") return n === -2147483648 ? "i32(-2147483648)" : `${n}i`;
  // WGSL rejects a constant expression that evaluates to NaN or infinity, so these load the bits at run time.
  if (Number.isNaN(n)) return "bitcast<f32>(poot_nonfinite.x)";
  if (!Number.isFinite(n)) return n > 0 ? "bitcast<f32>(poot_nonfinite.y)" : "bitcast<f32>(poot_nonfinite.z)";
  const s = String(n);
  return `${s.includes(".") || s.includes("e") ? s : `${s}.0`}f`;
}

/** Lowers a kernel to WGSL. */
export function lowerWgsl(kernel: Kernel, caps: DeviceCaps, options: LowerOptions = {}): TargetCode {
  const p = prepare(kernel, caps, "wgsl", options);
  const nativeF16 = caps.f16 && caps.dtypes.includes("f16");
  const { plans, slots, offsets } = planBuffers(kernel, caps, p.stored, nativeF16);
  const helpers = new Map<string, string>();
  const need = (name: string): void => void helpers.set(name, WGSL_HELPERS[name]!);
  const shared = new Map(p.shared.map((a) => [a.name, a]));
  const f32Atomic = new Set<string>();
  walkStmts(kernel.body, (s) => {
    if (s.s === "atomic" && s.type === "f32") f32Atomic.add(s.array);
  });

  const id = wgslIdent;
  const d: CStyleDialect = {
    ident: id,
    type: (t) => t,
    literal: (t, v) => {
      const text = wgslLiteral(t, v);
      if (text.includes("poot_nonfinite")) need("nonfinite");
      return text;
    },
    builtin: (name, axis) => {
      switch (name) {
        case "global_id":
          return `gid.${AXES[axis!]}`;
        case "local_id":
          return `lid.${AXES[axis!]}`;
        case "workgroup_id":
          return `wid.${AXES[axis!]}`;
        case "num_workgroups":
          return `nwg.${AXES[axis!]}`;
        case "workgroup_size":
          return `${p.workgroupSize[axis!]}u`;
        case "local_index":
          return "lidx";
        case "subgroup_lane":
          return "sg_lane";
        case "subgroup_size":
          return "sg_size";
        case "subgroup_id":
          return "(lidx / sg_size)";
        default:
          throw new CodegenError("unsupported", `builtin ${name}`, {
            kernel: kernel.name,
            target: "wgsl",
            construct: name,
          });
      }
    },
    param: (name) => `params.${id(name)}`,
    spec: (name) => `${p.specs.get(name)}u`,
    load: (space, array, index, type) => {
      if (space !== "global") return `${id(array)}[${index}]`;
      const plan = plans.get(array)!;
      const h = loadHelper(plan, nativeF16, type);
      // Native f16 storage widens on load (f16 -> f32 is exact).
      if (h === undefined) return plan.buf.elem === "f16" ? `f32(${id(array)}[${index}])` : `${id(array)}[${index}]`;
      helpers.set(`ld_${array}`, h);
      return `ld_${id(array)}(${index})`;
    },
    store: (space, array, index, value) => {
      if (space !== "global") return `${id(array)}[${index}] = ${value};`;
      const plan = plans.get(array)!;
      const type =
        plan.buf.elem === "bf16" || plan.buf.elem === "f16"
          ? "f32"
          : plan.buf.elem === "u8"
            ? "u32"
            : plan.buf.elem === "i8"
              ? "i32"
              : plan.buf.elem;
      const h = storeHelper(plan, nativeF16, type as ValueType);
      if (h === undefined)
        return plan.buf.elem === "f16"
          ? `${id(array)}[${index}] = f16(${value});`
          : `${id(array)}[${index}] = ${value};`;
      if (plan.buf.elem === "bf16") need("bf16_bits");
      helpers.set(`st_${array}`, h);
      return `st_${id(array)}(${index}, ${value});`;
    },
    shiftCount: (b, type) => (elemOf(type) === "u32" ? `(${b} & 31u)` : `(bitcast<u32>(${b}) & 31u)`),
    call: (fn, args) => {
      if (fn === "erf") need("erf_f32");
      return `${MATH[fn]}(${args.join(", ")})`;
    },
    cast: (a, from, to) => {
      if (elemOf(to) === "bool") return isVecType(from) ? `(${a} != ${from}())` : `(${a} != ${wgslLiteral(from, 0)})`;
      if (elemOf(from) === "bool") return `select(${wgslLiteral(to, 0)}, ${wgslLiteral(to, 1)}, ${a})`;
      const ints = ["i32", "u32"];
      // i32 <-> u32 reinterprets the bits (IR semantics), which is what WGSL bitcast does.
      if (ints.includes(elemOf(from)) && ints.includes(elemOf(to))) return `bitcast<${to}>(${a})`;
      if (from === "f32" && (to === "i32" || to === "u32")) {
        need(`f32_to_${to}`);
        return `f32_to_${to}(${a})`;
      }
      return `${to}(${a})`;
    },
    bitcast: (a, to) => `bitcast<${to}>(${a})`,
    pack: (fmt, a) => {
      switch (fmt) {
        case "f16x2":
          return `pack2x16float(${a})`;
        case "f16":
          return `(pack2x16float(vec2<f32>(${a}, 0.0)) & 0xffffu)`;
        case "bf16":
          need("bf16_bits");
          return `bf16_bits(${a})`;
        case "bf16x2":
          need("bf16_bits");
          return `(bf16_bits((${a}).x) | (bf16_bits((${a}).y) << 16u))`;
        default:
          fmt satisfies never;
          return "";
      }
    },
    unpack: (fmt, a) => {
      switch (fmt) {
        case "f16x2":
          return `unpack2x16float(${a})`;
        case "f16":
          return `unpack2x16float(${a}).x`;
        case "bf16":
          return `bitcast<f32>(${a} << 16u)`;
        case "bf16x2":
          return `vec2<f32>(bitcast<f32>(${a} << 16u), bitcast<f32>(${a} & 0xffff0000u))`;
        default:
          fmt satisfies never;
          return "";
      }
    },
    select: (c, a, b) => `select(${b}, ${a}, ${c})`,
    vec: (type, elems) => `${type}(${elems.join(", ")})`,
    subgroup: (op, _type, value, lane) =>
      lane === undefined ? `${SUBGROUP[op]}(${value})` : `${SUBGROUP[op]}(${value}, ${lane})`,
    atomic: (op, type, _space, array, index, value, compare, result) => {
      const ptr = `&${id(array)}[${index}]`;
      const def = (expr: string): string => (result === undefined ? `${expr};` : `let ${result} = ${expr};`);
      if (type === "f32" || f32Atomic.has(array)) {
        // No f32 atomics in WGSL: a compare-exchange loop on the bit pattern (add only).
        const r = result ?? `_old_${array}`;
        return [
          `var ${r}_bits = atomicLoad(${ptr});`,
          "loop {",
          `  let x = atomicCompareExchangeWeak(${ptr}, ${r}_bits, bitcast<u32>(bitcast<f32>(${r}_bits) + ${value}));`,
          `  if (x.exchanged) { break; }`,
          `  ${r}_bits = x.old_value;`,
          "}",
          ...(result === undefined ? [] : [`let ${result} = bitcast<f32>(${r}_bits);`]),
        ];
      }
      switch (op) {
        case "add":
          return [def(`atomicAdd(${ptr}, ${value})`)];
        case "max":
          return [def(`atomicMax(${ptr}, ${value})`)];
        case "min":
          return [def(`atomicMin(${ptr}, ${value})`)];
        case "exchange":
          return [def(`atomicExchange(${ptr}, ${value})`)];
        case "load":
          return [def(`atomicLoad(${ptr})`)];
        case "store":
          return [`atomicStore(${ptr}, ${value});`];
        case "cmpxchg": {
          // WGSL only has the weak form; retry spurious failures to get the IR's strong semantics.
          const r = result ?? `_old_${array}`;
          return [
            `var ${r}_v: ${type};`,
            "loop {",
            `  let x = atomicCompareExchangeWeak(${ptr}, ${compare}, ${value});`,
            `  if (x.exchanged || x.old_value != ${compare}) { ${r}_v = x.old_value; break; }`,
            "}",
            ...(result === undefined ? [] : [`let ${result} = ${r}_v;`]),
          ];
        }
        default:
          op satisfies never;
          return [];
      }
    },
    barrier: () => "workgroupBarrier();",
    declLet: (name, type, value) => `let ${name}: ${type} = ${value};`,
    declVar: (name, type, value) => `var ${name}: ${type} = ${value};`,
    declArray: (name, elem, length) => `var ${name}: array<${elem}, ${length}>;`,
    length: (s) => sizeOf(s, p.specs, kernel.name),
  };

  const printer = new CStylePrinter(d);
  printer.block(kernel.body, 1);
  const bodyLines = printer.text();

  const out: string[] = [];
  const usesF16 = nativeF16 && kernel.buffers.some((b) => b.elem === "f16");
  if (usesF16) out.push("enable f16;");
  if (p.usesSubgroups) out.push("enable subgroups;", "diagnostic(off, subgroup_uniformity);");
  if (out.length > 0) out.push("");
  for (const plan of plans.values()) {
    if (plan.how !== "direct") continue;
    const access = plan.buf.access === "read" && !plan.atomicWords && !plan.buf.atomic ? "read" : "read_write";
    out.push(`@group(0) @binding(${plan.slot}) var<storage, ${access}> ${id(plan.buf.name)}: array<${plan.wgslElem}>;`);
  }
  const packedSlot = slots.find((s) => s.kind === "packed");
  if (packedSlot) out.push(`@group(0) @binding(${packedSlot.slot}) var<storage, read> ${PACKED}: array<u32>;`);
  const uniformNames = [...kernel.uniforms.map((u) => u.name), ...offsets];
  if (uniformNames.length > 0) {
    const slot = slots.length;
    slots.push({ kind: "uniforms", slot, order: uniformNames });
    out.push("struct Params {");
    for (const u of kernel.uniforms) out.push(`  ${id(u.name)}: ${u.type},`);
    for (const o of offsets) out.push(`  ${o}: u32,`);
    out.push("}");
    out.push(`@group(0) @binding(${slot}) var<uniform> params: Params;`);
  }
  for (const a of p.shared)
    out.push(
      `var<workgroup> ${id(a.name)}: array<${a.atomic ? (a.elem === "i32" ? "atomic<i32>" : "atomic<u32>") : a.elem}, ${a.len}>;`,
    );
  out.push("");
  for (const h of helpers.values()) out.push(h, "");
  const used = new Set<string>();
  walkStmts(kernel.body, (s) =>
    stmtExprs(s).forEach((e) =>
      walkExpr(e, (x) => {
        if (x.k === "builtin") used.add(x.name);
      }),
    ),
  );
  const args: string[] = [];
  if (used.has("global_id")) args.push("@builtin(global_invocation_id) gid: vec3<u32>");
  if (used.has("local_id")) args.push("@builtin(local_invocation_id) lid: vec3<u32>");
  if (used.has("workgroup_id")) args.push("@builtin(workgroup_id) wid: vec3<u32>");
  if (used.has("num_workgroups")) args.push("@builtin(num_workgroups) nwg: vec3<u32>");
  if (used.has("local_index") || used.has("subgroup_id")) args.push("@builtin(local_invocation_index) lidx: u32");
  if (used.has("subgroup_lane")) args.push("@builtin(subgroup_invocation_id) sg_lane: u32");
  if (used.has("subgroup_size") || used.has("subgroup_id")) args.push("@builtin(subgroup_size) sg_size: u32");
  const [x, y, z] = p.workgroupSize;
  out.push(`@compute @workgroup_size(${x}, ${y}, ${z})`);
  out.push(`fn ${kernel.name}(${args.join(", ")}) {`);
  out.push(...bodyLines);
  out.push("}");
  return {
    target: "wgsl",
    kernel: kernel.name,
    entryPoint: kernel.name,
    ext: "wgsl",
    text: `${out.join("\n")}\n`,
    workgroupSize: p.workgroupSize,
    bindings: slots,
  };
}

/** The WGSL target (WebGPU). */
export const wgslTarget: Target = { name: "wgsl", lower: lowerWgsl };
