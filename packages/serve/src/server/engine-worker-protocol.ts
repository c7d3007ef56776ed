// The engine worker's message protocol (decision 2004): what the HTTP thread starts the worker with, the messages
// each side posts (calls, submissions and cancellations in; readiness, step batches and replies out) and their wire forms.
import type { ActivationNumerics } from "@poot/models";
import type { PlacementReport } from "@poot/runtime";
import type { ApiErrorCode } from "../errors.js";
import type { PlacementFlags } from "../placement.js";
import type { EngineStats, PlacementSummary, PromptLogprob, RelocateResult } from "./engine.js";
import type { GenerationEvent, GenerationRequest } from "./scheduler-api.js";

/** The runtime engine's options the worker loads the model with (`Engine.load`'s, less the executors). */
export interface EngineWorkerLoad {
  readonly weights?: "f32" | "bf16";
  /** FP8 checkpoints' activation numerics (`--activations`, decision 2610). */
  readonly activations?: ActivationNumerics;
  readonly maxSequences?: number;
  readonly context?: number;
  readonly prefillChunk?: number;
  readonly pageSize?: number;
  readonly kvPages?: number;
  /** Reuse cached prompt prefixes' KV pages (`--prefix-cache`). */
  readonly prefixCache?: boolean;
}

/** What the worker reports once the engine is loaded. */
export interface EngineWorkerInfo {
  readonly context: number;
  readonly kvTokens: number;
  readonly vocabSize: number;
  readonly eosTokenIds: readonly number[];
  readonly hiddenSize: number;
  readonly pageSize: number;
  readonly pagesTotal: number;
  /** Whether the model has a tokenizer (the server needs one). */
  readonly tokenizer: boolean;
  readonly stats: EngineStats;
  /** The placement `poot serve` prints (with how the default was chosen), or null for one program. */
  readonly placementReport: (PlacementReport & { readonly chosen?: string }) | null;
  /** Where the blocks are, as `/admin/place` answers; null for one program. */
  readonly placement: PlacementSummary | null;
  /** Programs compiled and seconds spent when `prepare` was asked. */
  readonly prepared: { readonly programs: number; readonly seconds: number } | null;
}

/** A loading failure in the worker, classified so the CLI can say it as it says the in-process ones. */
export class EngineWorkerError extends Error {
  override readonly name = "EngineWorkerError";

  /**
   * @param kind - which package's error it was (`model`: @poot/models, `runtime`, `cli`: an executor factory's).
   * @param message - its message.
   * @param code - its code, when it had one.
   * @param file - the file it names, when it had one.
   */
  constructor(
    readonly kind: "model" | "runtime" | "cli" | "other",
    message: string,
    readonly code: string | undefined,
    readonly file: string | undefined,
  ) {
    super(message);
  }
}

/** What the worker is started with. */
export interface EngineWorkerData {
  readonly model: string;
  readonly executorModule: string;
  readonly executorExport: string;
  readonly backend: string;
  readonly command: string;
  readonly placement: PlacementFlags;
  readonly backends: readonly string[];
  readonly load: EngineWorkerLoad;
  readonly prepare: boolean;
  readonly nice: number;
}

/** A generation request on the wire (the prompt a transferred Int32Array). */
export type WireRequest = Omit<GenerationRequest, "prompt"> & { readonly prompt: Int32Array };

/** An event on the wire: an ApiError travels as its fields. */
export type WireEvent =
  | Exclude<GenerationEvent, { kind: "error" }>
  | {
      readonly kind: "error";
      readonly status: number;
      readonly code: ApiErrorCode;
      readonly message: string;
      readonly param: string | null;
      readonly headers: Readonly<Record<string, string>>;
    };

/** Messages to the worker. */
export type ToWorker =
  | { readonly op: "schedule"; readonly maxBatch: number; readonly maxQueue: number }
  | { readonly op: "submit"; readonly jobs: readonly { readonly id: number; readonly req: WireRequest }[] }
  | { readonly op: "cancel"; readonly ids: readonly number[] }
  | {
      readonly op: "call";
      readonly id: number;
      readonly call:
        | { readonly kind: "hidden"; readonly ids: Int32Array }
        | { readonly kind: "promptLogprobs"; readonly ids: Int32Array; readonly top: number }
        | { readonly kind: "relocate"; readonly place: string };
    }
  | { readonly op: "shutdown" }
  | { readonly op: "close" };

/** The answer to a call: hidden rows, a relocation's result (with the placement after it), or an error's message. */
export interface WorkerReply {
  readonly kind: "reply";
  readonly id: number;
  readonly hidden?: Float32Array;
  readonly promptLogprobs?: PromptLogprob[];
  readonly relocated?: RelocateResult;
  readonly error?: string;
}

/** What one scheduler turn released: jobs admitted to the batch, events in order, and the figures after it. */
export interface WorkerBatch {
  readonly kind: "batch";
  readonly admitted: readonly number[];
  readonly events: readonly { readonly job: number; readonly event: WireEvent }[];
  readonly stats: EngineStats;
  readonly kvTokens: number;
  readonly steps: number;
}

/** Messages from the worker. */
export type FromWorker =
  | { readonly kind: "ready"; readonly info: EngineWorkerInfo }
  | {
      readonly kind: "fatal";
      readonly error: {
        readonly kind: EngineWorkerError["kind"];
        readonly message: string;
        readonly code?: string;
        readonly file?: string;
      };
    }
  | WorkerBatch
  | WorkerReply
  | { readonly kind: "closed" };
