// Target-independent facts about a kernel: resolved specialization values, sizes, and usage flags.
// Every lowering starts here, so capability checks and spec resolution are done once, the same way.

import {
  elemBytes,
  type BufferParam,
  type Expr,
  type Kernel,
  type MmaShape,
  type SharedArray,
  type Size,
  type Stmt,
  type ValueType,
} from "@poot/kernel-dsl";
import { CodegenError } from "../errors.js";
import type { DeviceCaps, LowerOptions, TargetName } from "../caps.js";

/** A private array declared by an `array` statement. */
export interface PrivateArray {
  readonly name: string;
  readonly elem: Exclude<ValueType, "bool">;
  readonly length: number;
}

/** What a lowering needs to know about a kernel beyond its body. */
export interface PreparedKernel {
  readonly kernel: Kernel;
  readonly target: TargetName;
  /** Specialization constant values. */
  readonly specs: ReadonlyMap<string, number>;
  readonly workgroupSize: readonly [number, number, number];
  /** Buffers in binding order. */
  readonly buffers: readonly BufferParam[];
  /** Shared arrays with resolved lengths. */
  readonly shared: readonly (SharedArray & { readonly len: number })[];
  /** Private arrays with resolved lengths. */
  readonly privates: readonly PrivateArray[];
  /** Buffers stored to (by plain stores) — narrow ones need word-level read-modify-write on some targets. */
  readonly stored: ReadonlySet<string>;
  /** Whether any subgroup statement or subgroup builtin occurs. */
  readonly usesSubgroups: boolean;
  /** Subgroup size from the caps (1 where the target has none and the kernel uses none). */
  readonly subgroupSize: number;
}

/** Resolves a Size against the spec values. */
export function sizeOf(size: Size, specs: ReadonlyMap<string, number>, kernel: string): number {
  if (typeof size === "number") return size;
  const v = specs.get(size.spec);
  if (v === undefined)
    throw new CodegenError("invalid-kernel", `unknown specialization constant ${size.spec}`, {
      kernel,
      construct: size.spec,
    });
  return v;
}

/** Visits every statement (depth first, including nested blocks). */
export function walkStmts(body: readonly Stmt[], f: (s: Stmt) => void): void {
  for (const s of body) {
    f(s);
    if (s.s === "for" || s.s === "while") walkStmts(s.body, f);
    else if (s.s === "if") {
      walkStmts(s.then, f);
      walkStmts(s.else, f);
    }
  }
}

/** Visits every expression node reachable from `e`. */
export function walkExpr(e: Expr, f: (e: Expr) => void): void {
  f(e);
  switch (e.k) {
    case "load":
    case "load4":
      return walkExpr(e.index, f);
    case "unary":
    case "cast":
    case "bitcast":
    case "pack":
    case "unpack":
    case "extract":
      return walkExpr(e.a, f);
    case "binary":
    case "cmp":
      walkExpr(e.a, f);
      return walkExpr(e.b, f);
    case "select":
      walkExpr(e.cond, f);
      walkExpr(e.a, f);
      return walkExpr(e.b, f);
    case "call":
      return e.args.forEach((a) => walkExpr(a, f));
    case "vec":
      return e.elems.forEach((a) => walkExpr(a, f));
    case "const":
    case "local":
    case "param":
    case "spec":
    case "builtin":
      return;
    default:
      e satisfies never;
  }
}

/** The expressions directly held by a statement (not those of nested blocks). */
export function stmtExprs(s: Stmt): Expr[] {
  switch (s.s) {
    case "let":
    case "assign":
      return [s.value];
    case "var":
      return [s.init];
    case "store":
      return [s.index, s.value];
    case "for":
      return [s.start, s.end, s.step];
    case "while":
    case "if":
      return [s.cond];
    case "subgroup":
      return s.lane ? [s.value, s.lane] : [s.value];
    case "mma":
      return [s.a, s.b, s.c];
    case "atomic":
      return [s.index, ...(s.value ? [s.value] : []), ...(s.compare ? [s.compare] : [])];
    case "array":
    case "break":
    case "continue":
    case "barrier":
    case "return":
      return [];
    default:
      s satisfies never;
      return [];
  }
}

/** Resolves specs and checks the kernel against the device caps. */
export function prepare(
  kernel: Kernel,
  caps: DeviceCaps,
  target: TargetName,
  options: LowerOptions = {},
): PreparedKernel {
  const specs = new Map<string, number>();
  for (const d of kernel.specs) {
    const v = options.specs?.[d.name] ?? d.default;
    if (v === undefined)
      throw new CodegenError("invalid-kernel", `no value for specialization constant ${d.name}`, {
        kernel: kernel.name,
        target,
        construct: d.name,
      });
    specs.set(d.name, v);
  }
  const wg = kernel.workgroupSize.map((s) => sizeOf(s, specs, kernel.name)) as [number, number, number];
  const invocations = wg[0] * wg[1] * wg[2];
  if (invocations > caps.maxWorkgroup) {
    throw new CodegenError(
      "missing-capability",
      `workgroup of ${invocations} invocations exceeds the device maximum ${caps.maxWorkgroup}`,
      { kernel: kernel.name, target, construct: "workgroupSize", value: wg },
    );
  }
  const shared = kernel.shared.map((a) => ({ ...a, len: sizeOf(a.length, specs, kernel.name) }));
  const sharedBytes = shared.reduce((n, a) => n + a.len * elemBytes(a.elem), 0);
  if (sharedBytes > caps.sharedBytes) {
    throw new CodegenError(
      "missing-capability",
      `kernel needs ${sharedBytes} bytes of shared memory, device has ${caps.sharedBytes}`,
      { kernel: kernel.name, target, construct: "shared", value: sharedBytes },
    );
  }
  const privates: PrivateArray[] = [];
  const stored = new Set<string>();
  let usesSubgroups = false;
  walkStmts(kernel.body, (s) => {
    if (s.s === "array") privates.push({ name: s.name, elem: s.elem, length: sizeOf(s.length, specs, kernel.name) });
    if (s.s === "store" && s.space === "global") stored.add(s.array);
    if (s.s === "subgroup" || s.s === "mma") usesSubgroups = true;
    for (const e of stmtExprs(s)) {
      walkExpr(e, (x) => {
        if (x.k === "builtin" && (x.name === "subgroup_id" || x.name === "subgroup_lane" || x.name === "subgroup_size"))
          usesSubgroups = true;
      });
    }
  });
  checkMma(kernel, caps, target);
  checkLoad4(kernel, target);
  checkVectorWidth(kernel, caps, target);
  if (usesSubgroups && caps.subgroupSize === undefined) {
    throw new CodegenError("missing-capability", "kernel uses subgroup operations but the device has none", {
      kernel: kernel.name,
      target,
      construct: "subgroup",
    });
  }
  return {
    kernel,
    target,
    specs,
    workgroupSize: wg,
    buffers: [...kernel.buffers].sort((a, b) => a.binding - b.binding),
    shared,
    privates,
    stored,
    usesSubgroups,
    subgroupSize: caps.subgroupSize ?? 1,
  };
}

/** Targets that lower the `load4` expression (a SIMD load of four widened elements; decision 0302). */
const LOAD4_TARGETS: ReadonlySet<TargetName> = new Set(["wasm", "x86"]);

/** Targets that lower the 8-bit integer dot product (`dot4U8I8`, packed `load4`; decision 2320). */
const DOT4_TARGETS: ReadonlySet<TargetName> = new Set(["x86"]);

/**
 * Refuses a kernel with `load4` unless the target lowers it (kernelgen emits it only for caps with `simdLoads`),
 * and one with the 8-bit integer dot product (`dot4U8I8`, packed `load4`) unless the target has one.
 */
function checkLoad4(kernel: Kernel, target: TargetName): void {
  const dot4 = DOT4_TARGETS.has(target);
  if (LOAD4_TARGETS.has(target) && dot4) return;
  walkStmts(kernel.body, (s) => {
    for (const e of stmtExprs(s)) {
      walkExpr(e, (x) => {
        if (!dot4 && ((x.k === "call" && x.fn === "dot4U8I8") || (x.k === "load4" && x.packed === true)))
          throw new CodegenError(
            "missing-capability",
            `the ${target} target has no 8-bit integer dot product (dot4U8I8, packed load4)`,
            { kernel: kernel.name, target, construct: "dot4U8I8" },
          );
        if (LOAD4_TARGETS.has(target)) return;
        if (x.k === "load4")
          throw new CodegenError(
            "missing-capability",
            `the ${target} target has no SIMD load4 (of ${x.array} as ${x.type})`,
            { kernel: kernel.name, target, construct: "load4" },
          );
      });
    }
  });
}

/** Targets that lower vectors wider than vec4 (vec8, vec16) when their caps report the lanes (decision 2310). */
const WIDE_TARGETS: ReadonlySet<TargetName> = new Set(["x86"]);

/** The vector width (lanes) a kernel uses: the widest type of any let, var, array or expression. */
function widestVector(kernel: Kernel): number {
  let w = 1;
  const see = (t: string): void => {
    if (t.startsWith("vec")) w = Math.max(w, Number(t.slice(3, t.indexOf("<"))));
  };
  for (const a of [...kernel.buffers, ...kernel.shared]) see(a.elem);
  walkStmts(kernel.body, (s) => {
    if ("type" in s && typeof s.type === "string") see(s.type);
    if (s.s === "array") see(s.elem);
    for (const e of stmtExprs(s)) walkExpr(e, (x) => see(x.type));
  });
  return w;
}

/** Refuses a kernel with vectors wider than vec4 unless the target lowers them and the caps report enough lanes. */
function checkVectorWidth(kernel: Kernel, caps: DeviceCaps, target: TargetName): void {
  const w = widestVector(kernel);
  if (w <= 4) return;
  const have = WIDE_TARGETS.has(target) ? (caps.vectorLanes ?? 4) : 4;
  if (w > have)
    throw new CodegenError(
      "missing-capability",
      `kernel uses ${w}-lane vectors but the ${target} target${WIDE_TARGETS.has(target) ? "'s caps report" : " has"} ${have}`,
      { kernel: kernel.name, target, construct: `vec${w}`, value: have },
    );
}

/**
 * What each `mma` shape needs (decisions 0353, 2401): the target that lowers it, the matrix-unit record the caps
 * must list (PTX's has no `layout`), and the subgroup width its fragments are laid out for.
 */
export const MMA_NEEDS: {
  readonly [S in MmaShape]: {
    readonly target: TargetName;
    readonly unit: { readonly m: number; readonly n: number; readonly k: number; readonly layout?: string };
    readonly lanes: number;
  };
} = {
  m16n8k16: { target: "ptx", unit: { m: 16, n: 8, k: 16 }, lanes: 32 },
  m16n16k16_mfma: { target: "amdgpu", unit: { m: 16, n: 16, k: 16, layout: "mfma" }, lanes: 64 },
  m16n8k16_wmma: { target: "amdgpu", unit: { m: 16, n: 16, k: 16, layout: "wmma" }, lanes: 32 },
};

/**
 * Refuses a kernel with `mma` statements unless the target lowers the shape, the caps list its matrix unit for the
 * input type, and subgroups have the shape's width; the planner only synthesizes such kernels for devices whose
 * caps list the unit.
 */
function checkMma(kernel: Kernel, caps: DeviceCaps, target: TargetName): void {
  walkStmts(kernel.body, (s) => {
    if (s.s !== "mma") return;
    const shape = `${s.shape}.${s.input}`;
    const ctx = { kernel: kernel.name, target, construct: `mma.${shape}` };
    const need = MMA_NEEDS[s.shape];
    if (need === undefined || need.target !== target)
      throw new CodegenError(
        "missing-capability",
        `the ${target} target has no matrix-unit instructions for mma ${shape}`,
        ctx,
      );
    const u = need.unit;
    const has = (caps.matrixShapes ?? []).some(
      (m) => m.m === u.m && m.n === u.n && m.k === u.k && m.input === s.input && m.layout === u.layout,
    );
    if (!has)
      throw new CodegenError(
        "missing-capability",
        `the device caps report no matrix unit of shape ${shape}${u.layout === undefined ? "" : ` (${u.layout} ${u.m}x${u.n}x${u.k})`}`,
        { ...ctx, value: caps.matrixShapes ?? [] },
      );
    if (caps.subgroupSize !== need.lanes)
      throw new CodegenError(
        "missing-capability",
        `mma ${shape} needs ${need.lanes}-lane subgroups, the device has ${String(caps.subgroupSize)}`,
        { ...ctx, value: caps.subgroupSize },
      );
  });
}
