// The Wasm locals of one kernel function, reused by type once their value is dead (decision 2490): a temporary lives
// until the end of the statement that made it, a let's value until the driver drops it after its last use in its block,
// a variable's local until its scope ends. A kernel then needs locals for what is live at once, not one per name.

import type { WasmCode } from "./code.js";
import type { ValType } from "./module.js";

/** Reusable Wasm locals: temporaries freed per statement, values held by `let`s, locals of variables. */
export class LocalPool {
  /** Free locals by type, most recently freed last. */
  private readonly free = new Map<ValType, number[]>();
  /** Live pooled locals and their types. */
  private readonly live = new Map<number, ValType>();
  /** Temporaries in order of allocation; entries before a {@link mark} belong to enclosing statements. */
  private readonly log: number[] = [];
  /** Where in {@link log} each live temporary was logged (entries of locals since freed and reused are stale). */
  private readonly loggedAt = new Map<number, number>();
  /** Holds on live locals (a let's value, a splat's scalar): held locals outlive their statement. */
  private readonly holds = new Map<number, number>();
  /** A local that keeps another alive while it lives (a splatted vector and its scalar). */
  private readonly links = new Map<number, number>();

  constructor(private readonly code: WasmCode) {}

  /** A local of type `t` that lives until {@link release}d (a variable's). */
  take(t: ValType): number {
    const l = this.free.get(t)?.pop() ?? this.code.local(t);
    this.live.set(l, t);
    this.loggedAt.delete(l);
    return l;
  }

  /** A temporary of type `t`: freed at the end of the statement being emitted unless held. */
  temp(t: ValType): number {
    const l = this.take(t);
    this.loggedAt.set(l, this.log.length);
    this.log.push(l);
    return l;
  }

  /** The point to free temporaries back to (taken before a statement). */
  mark(): number {
    return this.log.length;
  }

  /** Frees the temporaries made since `mark` that nothing holds. */
  freeSince(mark: number): void {
    const tail = this.log.splice(mark);
    tail.forEach((l, i) => {
      if (this.loggedAt.get(l) !== mark + i) return;
      this.loggedAt.delete(l);
      if (!this.holds.has(l)) this.release(l);
    });
  }

  /** Keeps live local `l` past its statement until a matching {@link drop} (locals not from the pool are ignored). */
  hold(l: number): void {
    if (this.live.has(l)) this.holds.set(l, (this.holds.get(l) ?? 0) + 1);
  }

  /** Drops one hold on `l`; the last frees it (unless it is a temporary of a statement still being emitted). */
  drop(l: number): void {
    const n = this.holds.get(l);
    if (n === undefined) return;
    if (n > 1) this.holds.set(l, n - 1);
    else {
      this.holds.delete(l);
      if (!this.loggedAt.has(l)) this.release(l);
    }
  }

  /** Returns `l` to the free list now. */
  release(l: number): void {
    const t = this.live.get(l);
    if (t === undefined) return;
    this.live.delete(l);
    this.holds.delete(l);
    this.loggedAt.delete(l);
    const on = this.links.get(l);
    if (on !== undefined) {
      this.links.delete(l);
      this.drop(on);
    }
    let list = this.free.get(t);
    if (list === undefined) this.free.set(t, (list = []));
    list.push(l);
  }

  /** Records that `l` was made from `source` (a splat), holding `source` while `l` lives. */
  link(l: number, source: number): void {
    this.links.set(l, source);
    this.hold(source);
  }

  /** The local `l` was made from ({@link link}), if it is still live. */
  source(l: number): number | undefined {
    return this.links.get(l);
  }
}
