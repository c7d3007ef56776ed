// The executor contract every backend implements: stage a graph for one device, bind weights once (lazily,
// by name), write slots, run a step with State kept device-side, read outputs, capture and replay a step.
import type { ConstSource, Graph, OpTable, ScalarDType, ValueType } from "@poot/graph-ir";
import type { ProgramSchema } from "./schema.js";

/** What a backend can do, as data (CONVENTIONS 4): callers branch on these, never on the backend's name. */
export interface ExecutorCaps {
  /** Backend kind, e.g. `"eval"`, `"cpu"`, `"cuda"`. */
  readonly kind: string;
  /** The device in words, e.g. `"host (graph-ir reference evaluator)"`. */
  readonly device: string;
  /** Scalar dtypes the backend can hold in Const, Slot and State buffers. */
  readonly dtypes: readonly ScalarDType[];
  /** Whether `capture`/`replay` record a step once and replay it (CUDA graphs, command buffers, host schedules). */
  readonly capture: boolean;
  /** Device memory in bytes, or null when the backend shares host memory with no fixed budget. */
  readonly deviceMemoryBytes: number | null;
}

/** Device bytes held by an executor, by purpose. */
export interface DeviceBytes {
  /** Weights bound so far (only tensors a staged program has read: binding is lazy). */
  readonly weights: number;
  /** Live StateSets (KV caches, recurrent states). */
  readonly state: number;
  /** Slots and outputs of staged programs. */
  readonly io: number;
  /** The sum. */
  readonly total: number;
}

/**
 * Where weights come from: called at most once per Const key; returns stored data (bf16 bits, packed bytes, f32).
 * Optionally `into` writes a weight's storage bytes straight into `dst` (a device's host-visible memory) and returns
 * true, or returns false to be asked the usual way.
 */
export type WeightSource = ConstSource & {
  readonly into?: (key: string, type: ValueType, dst: Uint8Array) => boolean;
  /**
   * Optional: where a weight's storage bytes (`bytes` of them, stored as they are) lie in an open file, for a device
   * that maps them instead of reading; undefined where they do not.
   */
  readonly locate?: (key: string, type: ValueType, bytes: number) => WeightFileRange | undefined;
};

/** Bytes of an open file: a weight's storage as it is stored (`@poot/models`' `FileRange` has this shape). */
export interface WeightFileRange {
  /** The open file's descriptor (valid while the weight source is). */
  readonly fd: number;
  /** Byte offset in the file. */
  readonly offset: number;
  /** Byte length. */
  readonly length: number;
}

/**
 * A compiled graph: the optimized graph and the op table that defines its composite ops (Fused, Attention,
 * ...). `@poot/graph-plan`'s `Program` has this shape, so a Program can be staged directly.
 */
export interface CompiledGraph {
  /** The graph to run (may contain composite ops). */
  readonly graph: Graph;
  /** Op table with reference semantics for every op the graph uses. */
  readonly ops: OpTable;
}

/** What `stage` accepts: a primitive graph, or a compiled one with its op table. */
export type StageInput = Graph | CompiledGraph;

/** The graph and op table of a stage input (primitives for a plain graph). */
export function stageParts(input: StageInput): { readonly graph: Graph; readonly ops: OpTable | undefined } {
  return "graph" in input ? { graph: input.graph, ops: input.ops } : { graph: input, ops: undefined };
}

/** Options of {@link Executor.stage}. */
export interface StageOptions {
  /** A name for messages and metrics (default `"program"`). */
  readonly name?: string;
}

/** Host data of an output: f32/f16/bf16 outputs come back widened to f32; integer outputs as their own arrays. */
export type OutputData = Float32Array | Int32Array | Uint32Array | Uint8Array;

/**
 * One backend on one device. Weights are bound once per executor and shared by every program it stages
 * (prefill, decode and batched decode of one model read the same buffers).
 */
export interface Executor {
  /** What the backend can do. */
  readonly caps: ExecutorCaps;
  /** Sets the weight source; each Const is read from it the first time a staged program needs it, then kept. */
  bindWeights(source: WeightSource): void;
  /** Stages a graph or compiled program for this device: validates it, plans its buffers, returns a program ready to run. */
  stage(input: StageInput, options?: StageOptions): StagedProgram;
  /**
   * Optional: frees the device copies of these weights (keys not held are ignored); a later step that needs one
   * reads it from the bound source again. Staged programs stay valid: steps recorded against a freed weight are
   * recorded again on their next run. Returns the bytes freed. The weight pager (decision 1709) pages blocks of one
   * executor in and out with it; without it, each paged-in block gets an executor of its own.
   */
  releaseWeights?(keys: Iterable<string>): number;
  /** Device bytes held now. */
  deviceBytes(): DeviceBytes;
  /**
   * Optional: device memory free now in bytes (CUDA's cuMemGetInfo), what the default placement fits layers into
   * (decision 1705). Left out where the backend cannot ask; callers then use `caps.deviceMemoryBytes`.
   */
  freeMemoryBytes?(): number;
  /**
   * Kernel launches submitted to the device so far, by every program (steps, replays and bind-time preparation).
   * Optional: a backend that launches kernels counts them here; hosts without kernels (eval) leave it out.
   * `poot bench` reads it around decode steps to report dispatches per token.
   */
  dispatchesSubmitted?(): number;
  /**
   * Device work submissions (CUDA graph launches) so far. Optional: `poot bench` reads it around decode steps to
   * report graph launches per token; backends without replayable graphs leave it out.
   */
  graphLaunchesSubmitted?(): number;
  /**
   * Milliseconds the host has spent blocked waiting for the device so far (stream and event synchronizes, reads).
   * Optional: `poot bench` subtracts it from decode wall time to report host milliseconds per token.
   */
  hostWaitMs?(): number;
  /**
   * A greedy decode loop that runs on the device (decision 2201): argmax, the next step's token, position and KV
   * slot written device-side, several steps per launch, ids read back in batches. Optional; null when this program
   * or state does not fit the loop (other slots than a single sequence's, logits not f32). The runtime falls back
   * to host steps without it.
   */
  greedyLoop?(program: StagedProgram, state: StateSet, options: GreedyLoopOptions): GreedyLoop | null;
  /** Frees everything; the executor and its programs and StateSets are unusable afterwards. */
  dispose(): void;
}

/**
 * A staged program. Slots keep their last written value (stable addresses), so a step writes only what
 * changed. `run(state)` reads state_in from `state` and leaves state_out in it (the buffers are donated).
 */
export interface StagedProgram {
  /** Its name. */
  readonly name: string;
  /** Slots, states and outputs with their types. */
  readonly schema: ProgramSchema;
  /** A zeroed, device-side StateSet with this program's state layout. */
  createState(): StateSet;
  /** Writes one slot (checked against the schema: length and dtype range). */
  writeSlot(key: string, data: ArrayLike<number>): void;
  /** Runs one step with the written slots; `state` is required when the program has State. */
  run(state?: StateSet): void;
  /** Copies an output to the host (into `into` when given and long enough). */
  readOutput(name: string, into?: OutputData): OutputData;
  /** Records the next step so `replay` repeats it with the slots' values at replay time; false if the backend cannot. */
  capture(state?: StateSet): boolean;
  /** Replays the captured step against the StateSet it was captured with. */
  replay(): void;
  /** Frees the program's slot and output buffers. */
  dispose(): void;
}

/**
 * Device-side persistent buffers of one program layout (the KV cache of one sequence, or of a batch).
 * A lane is one index of the leading dimension of every state (one sequence of a batched layout).
 */
export interface StateSet {
  /** The layout: state keys with dtype and shape. */
  readonly schema: ProgramSchema;
  /** Lanes (the leading dimension shared by every state). */
  readonly lanes: number;
  /** Copies one state to the host as f32 (f16/bf16 widened) or its integer array. */
  read(key: string): OutputData;
  /** Overwrites one state from the host. */
  write(key: string, data: ArrayLike<number>): void;
  /** Copies `count` lanes of every state from `from` (lane `fromLane`...) into this set at `toLane`...; per-lane shapes must match. */
  copyLanes(from: StateSet, fromLane: number, toLane: number, count?: number): void;
  /** Zeroes every state. */
  zero(): void;
  /** Bytes held. */
  readonly bytes: number;
  /** Frees the buffers. */
  dispose(): void;
}

/** What {@link Executor.greedyLoop} needs to know about a single-token paged decode program. */
export interface GreedyLoopOptions {
  /** The output holding one row of logits [V] (f32). */
  readonly logits: string;
  /** Decode steps per launch (one CUDA graph holds this many steps). */
  readonly tokensPerLaunch: number;
  /** Tokens per KV page; the program's `page_table` slot holds the sequence's page numbers. */
  readonly pageSize: number;
}

/**
 * A greedy decode loop on the device over a single-token paged decode program with slots `ids`, `pos`,
 * `page_table` and `slot_map` (decision 2201). The caller writes the first step's slots, calls {@link begin},
 * then queues launches and reads their ids; each step's id is the argmax of its logits (the lowest index among
 * equal maxima, NaN never chosen; -1 when no logit is above -inf), and becomes the next step's token at the next
 * position, its KV slot taken from the page table, without the host. The caller must hold KV pages for every
 * position the queued launches reach.
 */
export interface GreedyLoop {
  /** Decode steps per launch. */
  readonly tokensPerLaunch: number;
  /** Launches that may be queued ahead of the oldest unread one. */
  readonly maxInFlight: number;
  /** Starts a run: the slots as written now are the first step's; `pos` is the first token's position. */
  begin(pos: number): void;
  /** Queues the next launch (`tokensPerLaunch` steps) and returns without waiting. */
  launch(): void;
  /** Waits for launch `index` (0-based since {@link begin}) and returns its ids in step order. */
  read(index: number): Int32Array;
  /** Frees the loop's device resources. */
  dispose(): void;
}
