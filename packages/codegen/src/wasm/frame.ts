// Wasm emission machinery shared by instruction selection: locals as registers, per-thread frames in
// linear memory for every name, and structured control flow with label-depth tracking.

import { elemOf, lanesOf, type ValueType } from "@poot/kernel-dsl";
import type { RegLifetimes } from "../common/lifetimes.js";
import { CodegenError } from "../errors.js";
import { Misc, Simd, W, type WasmCode } from "./code.js";
import { LocalPool } from "./locals.js";
import { ValType } from "./module.js";

/** Indices of the math imports, in the fixed order of the calling convention. */
export const MATH_IMPORTS = ["exp", "log", "tanh", "erf", "sin", "cos", "f16_to_f32", "f32_to_f16"] as const;

/** The Wasm value type of an IR value type. */
export const vt = (t: ValueType): ValType =>
  lanesOf(t) > 1 ? ValType.v128 : elemOf(t) === "f32" ? ValType.f32 : ValType.i32;
/** Whether a value type is f32 (or a vector of f32). */
export const isF = (t: ValueType): boolean => elemOf(t) === "f32";

/** Locals the emitter reads that the kernel prologue / thread loop set up. */
export interface WasmContext {
  readonly args: number;
  readonly wg: readonly [number, number, number];
  readonly t: number;
  readonly frame: number;
  readonly shared: number;
  readonly threadDone: () => void;
}

/** Locals, frames and control flow of one Wasm kernel function. */
export abstract class WasmBase implements RegLifetimes<number> {
  /** Frame slots: byte offset and type of each per-thread name. */
  readonly slots = new Map<string, { offset: number; type: ValueType | "array"; bytes: number }>();
  frameBytes = 4; // word 0: the thread's "returned" flag
  readonly uniformVars = new Map<string, number>();
  readonly bufferBase = new Map<string, number>();
  readonly sharedOffset = new Map<string, number>();
  /** Control stack: which enclosing Wasm labels are loop exits/continues. */
  readonly ctl: ("exit" | "cont" | "other" | "thread")[] = [];
  ctx!: WasmContext;
  /**
   * Kernels without barriers run each thread start to finish inside one loop iteration, so their variables
   * live in Wasm locals (registers) instead of the thread's frame in linear memory.
   */
  registers = false;
  private readonly regs = new Map<string, number>();
  /** The function's reusable locals (temporaries, let values, variables). */
  protected readonly pool: LocalPool;

  constructor(
    readonly c: WasmCode,
    protected readonly kernel: string,
    protected readonly wg: readonly [number, number, number],
    protected readonly uniformIndex: ReadonlyMap<string, number>,
    protected readonly buffers: number,
  ) {
    this.pool = new LocalPool(c);
  }

  protected unsupported(what: string): never {
    throw new CodegenError("unsupported", `Wasm lowering cannot express ${what}`, {
      kernel: this.kernel,
      target: "wasm",
      construct: what,
    });
  }
  /** Pops the stack top into a temporary of type `t` (freed at the end of the statement unless a let holds it). */
  protected put(t: ValueType): number {
    const l = this.pool.temp(vt(t));
    this.c.opU(W.local_set, l);
    return l;
  }
  protected get(l: number): this {
    this.c.opU(W.local_get, l);
    return this;
  }

  protected mem(code: number, align: number, offset = 0): this {
    this.c.mem(code, align, offset);
    return this;
  }

  /** Frame slot of a name (allocated on first use). */
  slot(name: string, type: ValueType | "array", bytes: number): number {
    let s = this.slots.get(name);
    if (s === undefined) {
      const align = bytes >= 16 ? 16 : 4;
      const offset = Math.ceil(this.frameBytes / align) * align;
      s = { offset, type, bytes };
      this.slots.set(name, s);
      this.frameBytes = offset + bytes;
    }
    return s.offset;
  }
  /** The Wasm local holding variable `name` of `type` in register mode (one per name and value type). */
  private reg(name: string, type: ValueType): number {
    const key = `${name}:${vt(type)}`;
    let l = this.regs.get(key);
    if (l === undefined) {
      l = this.pool.take(vt(type));
      this.regs.set(key, l);
    }
    return l;
  }
  /** {@link RegLifetimes.mark}: statements free their temporaries back to here. */
  mark(): number {
    return this.pool.mark();
  }
  /** {@link RegLifetimes.freeSince}. */
  freeSince(mark: number): void {
    this.pool.freeSince(mark);
  }
  /** {@link RegLifetimes.hold}: a let's value outlives its statement. */
  hold(v: number): void {
    this.pool.hold(v);
  }
  /** {@link RegLifetimes.drop}: the let's last use is emitted. */
  drop(v: number): void {
    this.pool.drop(v);
  }
  /** {@link RegLifetimes.dropVar}: variable `name`'s scope ended; its local (register mode) can be reused. */
  dropVar(name: string, type: ValueType): void {
    const key = `${name}:${vt(type)}`;
    const l = this.regs.get(key);
    if (l === undefined) return;
    this.regs.delete(key);
    this.pool.release(l);
  }
  newVar(name: string, type: ValueType, init: number): void {
    if (!this.registers) this.slot(name, type, lanesOf(type) > 1 ? 16 : 4);
    this.writeVar(name, type, init);
  }
  readVar(name: string, type: ValueType): number {
    const u = this.uniformVars.get(name) ?? (this.registers ? this.reg(name, type) : undefined);
    if (u !== undefined) {
      this.get(u);
      return this.put(type);
    }
    this.get(this.ctx.frame);
    if (lanesOf(type) > 1) this.c.simdMem(Simd.v128_load, 4, this.slots.get(name)!.offset);
    else this.mem(isF(type) ? W.f32_load : W.i32_load, 2, this.slots.get(name)!.offset);
    return this.put(type);
  }
  writeVar(name: string, type: ValueType, v: number): void {
    const u = this.uniformVars.get(name) ?? (this.registers ? this.reg(name, type) : undefined);
    if (u !== undefined) {
      this.get(v).c.opU(W.local_set, u);
      return;
    }
    this.get(this.ctx.frame).get(v);
    if (lanesOf(type) > 1) this.c.simdMem(Simd.v128_store, 4, this.slots.get(name)!.offset);
    else this.mem(isF(type) ? W.f32_store : W.i32_store, 2, this.slots.get(name)!.offset);
  }
  privateArray(name: string, elem: ValueType, length: number): void {
    const bytes = 4 * lanesOf(elem) * length;
    const off = this.slot(name, "array", bytes);
    // Private arrays start as zero (IR semantics): memory.fill over the slot.
    this.get(this.ctx.frame).c.i32(off).op(W.i32_add).i32(0).i32(bytes).misc(Misc.memory_fill);
  }

  protected depth(kind: "exit" | "cont" | "thread"): number {
    for (let i = this.ctl.length - 1; i >= 0; i--) {
      if (this.ctl[i] === kind) return this.ctl.length - 1 - i;
      // Per-thread code cannot leave a loop that encloses its thread loop (that loop is a barrier region).
      if (this.ctl[i] === "thread") break;
    }
    return this.unsupported(
      kind === "thread"
        ? "return outside a thread loop"
        : `${kind === "exit" ? "break" : "continue"} across a barrier region`,
    );
  }
  ifElse(cond: number, then: () => void, otherwise: (() => void) | undefined): void {
    this.get(cond).c.open(W.if);
    this.ctl.push("other");
    then();
    if (otherwise) {
      this.c.op(W.else);
      otherwise();
    }
    this.ctl.pop();
    this.c.op(W.end);
  }
  loop(cond: () => number, body: () => void, step: () => void): void {
    this.c.open(W.block);
    this.ctl.push("exit");
    this.c.open(W.loop);
    this.ctl.push("other");
    this.get(cond()).c.op(W.i32_eqz).opU(W.br_if, 1);
    this.c.open(W.block);
    this.ctl.push("cont");
    body();
    this.ctl.pop();
    this.c.op(W.end);
    step();
    this.c.opU(W.br, 0);
    this.ctl.pop();
    this.c.op(W.end);
    this.ctl.pop();
    this.c.op(W.end);
  }
  breakLoop(): void {
    this.c.opU(W.br, this.depth("exit"));
  }
  continueLoop(): void {
    this.c.opU(W.br, this.depth("cont"));
  }
  ret(): void {
    this.ctx.threadDone();
    this.c.opU(W.br, this.depth("thread"));
  }
}
