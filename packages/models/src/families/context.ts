// The per-trace context shared by every block: builder, config, weights, the traced shape (batch, tokens,
// static context) and the Token/Pos slots; weight consts are created once per tensor name.
import { Builder, type Ref } from "@poot/graph-ir";
import type { ModelConfig } from "../config.js";
import { TraceError } from "../errors.js";
import { fp8DynamicQuantize, fp8StaticQuantize } from "./fp8-activations.js";
import type { ModelWeights } from "./weights.js";

/**
 * The paged KV layout (decision 0603): the K and V caches of every layer are one shared pool of `pages`
 * pages of `pageSize` token rows each, State `[pages·pageSize, Hkv, Dh]` (row r: page r / pageSize, offset r % pageSize); a sequence names its pages in
 * the `page_table` slot (PageTable, i32 [B, ceil(context / pageSize)]) and where each new token's row goes
 * in the `slot_map` slot (SlotMap, i32 [B·T], flat row index page·pageSize + offset). Per-sequence
 * recurrent states (Qwen3.5 conv / delta-net) are pools of `lanes` lanes `[lanes, ...]` indexed by the
 * `state_lane` slot (i32 [B]).
 */
export interface PagedLayout {
  /** Token rows per page (a power of two). */
  readonly pageSize: number;
  /** Pages in the shared pool. */
  readonly pages: number;
  /** Lanes of each recurrent-state pool (the most sequences with recurrent state at once). */
  readonly lanes: number;
}

/** Checks a paged layout; a TraceError names the bad field. */
export function checkPagedLayout(p: PagedLayout): void {
  const { pageSize, pages, lanes } = p;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1 || (pageSize & (pageSize - 1)) !== 0)
    throw new TraceError("bad-config", `paged pageSize must be a power of two, got ${pageSize}`, {
      key: "pageSize",
      value: pageSize,
    });
  if (!Number.isSafeInteger(pages) || pages < 1)
    throw new TraceError("bad-config", `paged pages must be a positive integer, got ${pages}`, {
      key: "pages",
      value: pages,
    });
  if (!Number.isSafeInteger(lanes) || lanes < 1)
    throw new TraceError("bad-config", `paged lanes must be a positive integer, got ${lanes}`, {
      key: "lanes",
      value: lanes,
    });
}

/** What one graph computes: `batch` sequences of `tokens` new tokens each; `context` is the KV capacity (null: stateless prefill). */
export interface TraceShape {
  /** Sequences per step (B). */
  readonly batch: number;
  /** New tokens per sequence (T). */
  readonly tokens: number;
  /** Static KV/state capacity in tokens (S), or null for a stateless prefill at positions 0..T-1. */
  readonly context: number | null;
  /** The paged KV layout, or absent/null for one contiguous cache per sequence ([B, Hkv, context, Dh]). */
  readonly paged?: PagedLayout | null;
}

/** Tracing state passed to every block. */
export class TraceContext {
  /** The builder the graph is traced into. */
  readonly b = new Builder();
  /** B·T: rows of every token-wise activation [N, D]. */
  readonly rows: number;
  /** Token ids slot, i32 [B·T] (sequence-major). */
  readonly ids: Ref;
  /** Start position of each sequence (Pos slot, i32 [B]); null for stateless prefill. */
  readonly pos: Ref | null;
  /** Absolute position of every new token, i32 [B, T]. */
  readonly positions: Ref;
  /** Paged graphs: the page table slot, i32 [B, pagesPerSequence]; null otherwise. */
  readonly pageTable: Ref | null = null;
  /** Paged graphs: the pool row of every new token (SlotMap slot), i32 [B·T]; null otherwise. */
  readonly slotMap: Ref | null = null;
  /** Paged graphs: each sequence's lane in the recurrent-state pools, i32 [B] (created on first use); null otherwise. */
  private laneSlot: Ref | null = null;
  /** The paged layout, or null. */
  readonly paged: PagedLayout | null;
  private readonly consts = new Map<string, Ref>();
  private readonly ordered = new Map<Ref["id"], { readonly order: Int32Array; readonly gathered: Ref }[]>();
  /** Memoized per-trace tables (RoPE cos/sin, masks) by key. */
  readonly memo = new Map<string, Ref>();

  /** @param config - model hyperparameters; @param weights - tensor view; @param shape - what the graph computes. */
  constructor(
    readonly config: ModelConfig,
    readonly weights: ModelWeights,
    readonly shape: TraceShape,
  ) {
    const { batch: B, tokens: T, context: S } = shape;
    if (!(B >= 1 && T >= 1 && Number.isInteger(B) && Number.isInteger(T)))
      throw new TraceError("bad-config", `batch ${B} and tokens ${T} must be positive integers`, { value: { B, T } });
    if (S !== null && !(Number.isInteger(S) && S >= T))
      throw new TraceError("context-overflow", `context ${S} must hold the ${T} new tokens`, { value: S });
    this.rows = B * T;
    const b = this.b;
    this.ids = b.slot("Token", "ids", "i32", [B * T]);
    const steps = b.iota([B, T], 1, "i32", "steps");
    if (S === null) {
      this.pos = null;
      this.positions = steps;
    } else {
      this.pos = b.slot("Pos", "pos", "i32", [B]);
      this.positions = b.add(b.reshape(this.pos, [B, 1]), steps, "positions");
    }
    this.paged = shape.paged ?? null;
    if (this.paged !== null) {
      if (S === null)
        throw new TraceError("bad-config", "a paged layout needs a decode graph (a context)", { key: "paged" });
      checkPagedLayout(this.paged);
      this.pageTable = b.slot("PageTable", "page_table", "i32", [B, Math.ceil(S / this.paged.pageSize)]);
      this.slotMap = b.slot("SlotMap", "slot_map", "i32", [B * T]);
    }
  }

  /** Paged graphs: the `state_lane` slot, i32 [B], created the first time a recurrent state needs it. */
  stateLanes(): Ref {
    if (this.paged === null)
      throw new TraceError("bad-config", "state lanes exist only in paged graphs", { key: "paged" });
    this.laneSlot ??= this.b.slot("StateLane", "state_lane", "i32", [this.shape.batch]);
    return this.laneSlot;
  }

  /**
   * The Const of a checkpoint tensor (created once); `shape` checks it when given. A weight stored with its input
   * columns reordered (act-order) is refused unless `reordered` says the caller applies `inputOrder` (as `linear` does).
   */
  weight(name: string, shape?: readonly (number | null)[], reordered = false): Ref {
    let r = this.consts.get(name);
    if (r === undefined) {
      const s = this.weights.spec(name);
      if (s.inputOrder !== undefined && !reordered)
        throw new TraceError(
          "bad-weight",
          `tensor "${name}" has reordered input columns (act-order) and is used other than as a linear layer`,
          {
            file: this.weights.file,
            tensor: name,
          },
        );
      if (
        shape !== undefined &&
        (shape.length !== s.shape.length || shape.some((d, i) => d !== null && d !== s.shape[i]))
      ) {
        throw new TraceError(
          "bad-weight",
          `tensor "${name}" has shape [${s.shape.join(", ")}], expected [${shape.map((d) => d ?? "?").join(", ")}]`,
          { file: this.weights.file, tensor: name, value: s.shape },
        );
      }
      r = this.b.const(s.name, s.dtype, s.shape);
      this.consts.set(name, r);
    }
    return r;
  }

  /**
   * x gathered along its last axis in a weight's stored input order (GPTQ act-order): one Gather per distinct
   * (x, order), so linears that read the same x with equal orders (q/k/v, gate/up: AutoGPTQ derives the order from
   * their shared input's Hessian) share it, and stay one horizontal group.
   */
  inputsInOrder(x: Ref, order: Int32Array, name: string): Ref {
    const seen = this.ordered.get(x.id) ?? [];
    const same = seen.find((s) => s.order.length === order.length && s.order.every((v, k) => v === order[k]));
    if (same !== undefined) return same.gathered;
    const k = x.shape[x.shape.length - 1]!;
    const gathered = this.b.gather(x, this.b.computed("i32", [k], order, `${name}.input_order`), x.shape.length - 1);
    this.ordered.set(x.id, [...seen, { order, gathered }]);
    return gathered;
  }

  /**
   * x quantized to FP8 e4m3 and back (decision 2610) with a static scale or per dynamic group, once per (x, scale or
   * group): q/k/v and gate/up read one input (with one calibrated scale), so they share one quantized copy and stay
   * one horizontal group.
   */
  inputsQuantized(x: Ref, how: number | { readonly group: number }): Ref {
    const key = `fp8:${x.id}:${typeof how === "number" ? how : `g${how.group}`}`;
    let r = this.memo.get(key);
    if (r === undefined) {
      r = typeof how === "number" ? fp8StaticQuantize(this.b, x, how) : fp8DynamicQuantize(this.b, x, how.group);
      this.memo.set(key, r);
    }
    return r;
  }

  /** A scalar i32 literal operand (for dynamic-slice starts). */
  i32(value: number): Ref {
    const key = `i32:${value}`;
    let r = this.memo.get(key);
    if (r === undefined) {
      r = this.b.computed("i32", [], new Int32Array([value]), `c${value}`);
      this.memo.set(key, r);
    }
    return r;
  }
}
