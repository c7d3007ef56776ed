// The Wasm target for the CPU backend: one exported function per kernel that runs a range of a workgroup's
// threads, barrier regions split into thread loops ("work-item loops"), over one shared linear memory.

import type { Kernel, Stmt } from "@poot/kernel-dsl";
import { elemBytes } from "@poot/kernel-dsl";
import type { BindingSlot, DeviceCaps, LowerOptions, Target, TargetCode } from "../caps.js";
import { prepare, walkStmts, type PrivateArray } from "../common/prepare.js";
import { makeDriver, type Driver } from "../common/regs.js";
import { CodegenError } from "../errors.js";
import { W, WasmCode } from "./code.js";
import { ValType, WasmModule } from "./module.js";
import { MATH_IMPORTS } from "./frame.js";
import { WasmEmitter } from "./select.js";

/** Options of the Wasm target. */
export interface WasmOptions extends LowerOptions {
  /** Maximum memory pages the imported shared memory may have (default 65536 = 4 GiB). */
  readonly maxPages?: number;
}

const hasBarrier = (body: readonly Stmt[]): boolean => {
  let found = false;
  walkStmts(body, (s) => void (s.s === "barrier" && (found = true)));
  return found;
};

/** `body` without its barriers: in a workgroup of one thread a barrier orders nothing. */
function withoutBarriers(body: readonly Stmt[]): Stmt[] {
  return body.flatMap((s): Stmt[] => {
    switch (s.s) {
      case "barrier":
        return [];
      case "for":
      case "while":
        return [{ ...s, body: withoutBarriers(s.body) }];
      case "if":
        return [{ ...s, then: withoutBarriers(s.then), else: withoutBarriers(s.else) }];
      default:
        return [s];
    }
  });
}

/**
 * Lowers a kernel to a Wasm module (see docs/decisions/0351 for the calling convention):
 * `export <kernel>(args, wg_x, wg_y, wg_z, first, last)` runs threads `first..last-1` (local_index) of
 * one workgroup. `args` is the byte address of a u32 block: buffer byte addresses (binding order), uniforms,
 * num_workgroups x/y/z, the workgroup's shared-memory address, then the scratch address holding one
 * `frameBytes` frame per thread of the range. Kernels with barriers must be called with the whole workgroup.
 */
export function lowerWasm(source: Kernel, caps: DeviceCaps, options: WasmOptions = {}): TargetCode {
  const p0 = prepare(source, caps, "wasm", options);
  // One thread per workgroup (CPU kernels shaped for serial threads): dropping the barriers lets every name live in a
  // Wasm local instead of the thread's frame in memory (a kernel with barriers keeps names in frames across regions).
  const one = p0.workgroupSize[0] * p0.workgroupSize[1] * p0.workgroupSize[2] === 1 && hasBarrier(p0.kernel.body);
  const kernel = one ? { ...source, body: withoutBarriers(source.body) } : source;
  const p = one ? { ...p0, kernel: { ...p0.kernel, body: withoutBarriers(p0.kernel.body) } } : p0;
  if (p.usesSubgroups && p.subgroupSize !== 1) {
    throw new CodegenError(
      "missing-capability",
      `the Wasm target runs subgroups of one lane; caps ask for ${p.subgroupSize}`,
      { kernel: kernel.name, target: "wasm", construct: "subgroupSize" },
    );
  }
  const m = new WasmModule();
  m.importMemory({ module: "env", name: "memory", minimum: 1, maximum: options.maxPages ?? 65536, shared: true });
  for (const name of MATH_IMPORTS) {
    const f16in = name === "f16_to_f32";
    m.importFunc(
      "math",
      name,
      [f16in || name === "f32_to_f16" ? (f16in ? ValType.i32 : ValType.f32) : ValType.f32],
      [name === "f32_to_f16" ? ValType.i32 : ValType.f32],
    );
  }
  const code = new WasmCode(6);
  const [ARGS, WX, WY, WZ, FIRST, LAST] = [0, 1, 2, 3, 4, 5];
  const uniformIndex = new Map(kernel.uniforms.map((u, i) => [u.name, i] as const));
  const nb = p.buffers.length;
  const e = new WasmEmitter(code, kernel.name, p.workgroupSize, uniformIndex, nb);
  const t = code.local(ValType.i32);
  const frame = code.local(ValType.i32);
  const shared = code.local(ValType.i32);
  const scratch = code.local(ValType.i32);
  const frameSize = code.local(ValType.i32);
  e.ctx = {
    args: ARGS,
    wg: [WX, WY, WZ],
    t,
    frame,
    shared,
    threadDone: () => code.opU(W.local_get, frame).i32(1).mem(W.i32_store, 2, 0),
  };
  const slots: BindingSlot[] = [];
  p.buffers.forEach((b, i) => {
    const l = code.local(ValType.i32);
    code
      .opU(W.local_get, ARGS)
      .mem(W.i32_load, 2, 4 * i)
      .opU(W.local_set, l);
    e.bufferBase.set(b.name, l);
    slots.push({ kind: "buffer", slot: i, buffer: b.name });
  });
  if (kernel.uniforms.length > 0)
    slots.push({ kind: "uniforms", slot: slots.length, order: kernel.uniforms.map((u) => u.name) });
  const tail = nb + kernel.uniforms.length + 3;
  code
    .opU(W.local_get, ARGS)
    .mem(W.i32_load, 2, 4 * tail)
    .opU(W.local_set, shared);
  code
    .opU(W.local_get, ARGS)
    .mem(W.i32_load, 2, 4 * (tail + 1))
    .opU(W.local_set, scratch);
  let sharedBytes = 0;
  for (const a of p.shared) {
    sharedBytes = Math.ceil(sharedBytes / 16) * 16;
    e.sharedOffset.set(a.name, sharedBytes);
    sharedBytes += a.len * elemBytes(a.elem);
  }
  // Without barriers a thread runs start to finish in one loop iteration: names can live in Wasm locals.
  const barriers = hasBarrier(kernel.body);
  e.registers = !barriers;
  const d = makeDriver(p, e, { letsAsVars: barriers, lifetimes: e });

  /** A loop over the thread range running `body` per thread, skipping threads that returned. */
  const threadLoop = (body: () => void, skipReturned = true): void => {
    code.opU(W.local_get, FIRST).opU(W.local_set, t);
    code.open(W.block).open(W.loop);
    code.opU(W.local_get, t).opU(W.local_get, LAST).op(W.i32_ge_u).opU(W.br_if, 1);
    setFrame();
    code.open(W.block);
    e.ctl.push("other", "other", "thread");
    if (skipReturned) code.opU(W.local_get, frame).mem(W.i32_load, 2, 0).opU(W.br_if, 0);
    body();
    e.ctl.pop(), e.ctl.pop(), e.ctl.pop();
    code.op(W.end);
    code.opU(W.local_get, t).i32(1).op(W.i32_add).opU(W.local_set, t).opU(W.br, 0);
    code.op(W.end).op(W.end);
  };
  const setFrame = (): void => {
    code
      .opU(W.local_get, scratch)
      .opU(W.local_get, t)
      .opU(W.local_get, FIRST)
      .op(W.i32_sub)
      .opU(W.local_get, frameSize)
      .op(W.i32_mul)
      .op(W.i32_add)
      .opU(W.local_set, frame);
  };
  /** Uniform control (regions with barriers): evaluate with the first thread of the range. */
  const asFirst = <T>(f: () => T): T => {
    code.opU(W.local_get, FIRST).opU(W.local_set, t);
    setFrame();
    return f();
  };
  const uniformBlock = (body: readonly Stmt[]): void => {
    let run: Stmt[] = [];
    const flush = (): void => {
      if (run.length === 0) return;
      const r = run;
      run = [];
      threadLoop(() => d.block(r));
    };
    for (const s of body) {
      if (!hasBarrier([s])) {
        run.push(s);
        continue;
      }
      flush();
      regionStmt(s, d);
    }
    flush();
  };
  const regionStmt = (s: Stmt, dr: Driver<number>): void => {
    switch (s.s) {
      case "barrier":
        return; // all threads of the range finished the previous region
      case "if":
        e.ifElse(
          asFirst(() => dr.expr(s.cond)),
          () => uniformBlock(s.then),
          s.else.length ? () => uniformBlock(s.else) : undefined,
        );
        return;
      case "while":
        e.loop(
          () => asFirst(() => dr.expr(s.cond)),
          () => uniformBlock(s.body),
          () => {},
        );
        return;
      case "for": {
        const [start, end, step] = asFirst(() => [dr.expr(s.start), dr.expr(s.end), dr.expr(s.step)]);
        const v = code.local(ValType.i32);
        code.opU(W.local_get, start).opU(W.local_set, v);
        e.uniformVars.set(s.var, v);
        dr.bindVar(s.var, s.type);
        const lt = s.type === "i32" ? W.i32_lt_s : W.i32_lt_u;
        e.loop(
          () => {
            const c = code.local(ValType.i32);
            code.opU(W.local_get, v).opU(W.local_get, end).op(lt).opU(W.local_set, c);
            return c;
          },
          () => uniformBlock(s.body),
          () => void code.opU(W.local_get, v).opU(W.local_get, step).op(W.i32_add).opU(W.local_set, v),
        );
        return;
      }
      default:
        throw new CodegenError("unsupported", `a barrier inside '${s.s}' cannot be split into thread regions`, {
          kernel: kernel.name,
          target: "wasm",
          construct: s.s,
        });
    }
  };

  // Zero every frame's "returned" flag first (whatever the scratch held before: frames are reused), then run the body.
  const zeroFlags = (): void =>
    threadLoop(() => void code.opU(W.local_get, frame).i32(0).mem(W.i32_store, 2, 0), false);
  allocateFrame(e, p.kernel.body, p.privates);
  const frameBytes = Math.ceil(e.frameBytes / 16) * 16;
  code.i32(frameBytes).opU(W.local_set, frameSize);
  zeroFlags();
  uniformBlock(kernel.body);
  const fn = m.func([ValType.i32, ValType.i32, ValType.i32, ValType.i32, ValType.i32, ValType.i32], [], code);
  m.exportFunc(kernel.name, fn);
  return {
    target: "wasm",
    kernel: kernel.name,
    entryPoint: kernel.name,
    ext: "wasm",
    binary: m.encode(),
    workgroupSize: p.workgroupSize,
    bindings: slots,
    abi: { frameBytes, sharedBytes, argWords: tail + 2, barriers: barriers ? 1 : 0 },
  };
}

/** Lays out every per-thread name in the frame up front, so the frame size is known before the body. */
function allocateFrame(e: WasmEmitter, body: readonly Stmt[], privates: readonly PrivateArray[]): void {
  walkStmts(body, (s) => {
    const size = (t: string): number => (t.startsWith("vec") ? 16 : 4);
    switch (s.s) {
      case "let":
      case "var":
      case "subgroup":
        if (!e.registers) e.slot(s.name, s.type, size(s.type));
        break;
      case "mma":
        if (!e.registers) e.slot(s.name, "vec4<f32>", 16);
        break;
      case "atomic":
        if (s.name !== undefined && !e.registers) e.slot(s.name, s.type, 4);
        break;
      // Loop variables of loops with barriers are uniform and live in a Wasm local instead.
      case "for":
        if (!hasBarrier(s.body) && !e.registers) e.slot(s.var, s.type, 4);
        break;
      case "array": {
        const a = privates.find((x) => x.name === s.name)!;
        e.slot(s.name, "array", 4 * (s.elem.startsWith("vec") ? Number(s.elem[3]) : 1) * a.length);
        break;
      }
      default:
        break;
    }
  });
}

/** The Wasm target (CPU backend). */
export const wasmTarget: Target = { name: "wasm", lower: lowerWasm };
