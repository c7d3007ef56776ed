// The forward driver used by the CLI and tests: open a checkpoint (HF folder or .gguf), trace, evaluate with
// weights bound lazily by name, and greedy generation token by token through the decode graph's KV State.
import * as fs from "node:fs";
import * as path from "node:path";
import { evaluate, type ConstSource, type Graph, type HostData } from "@poot/graph-ir";
import type { Checkpoint } from "../checkpoint.js";
import type { ModelConfig } from "../config.js";
import { configFromGGUF } from "../config-gguf.js";
import { readHFConfig } from "../config-hf.js";
import { TraceError } from "../errors.js";
import { openGGUF } from "../gguf.js";
import { isGGUF } from "../open.js";
import { checkGGUFActivations, type ActivationNumerics } from "../hf-activations.js";
import { withHFQuantization } from "../hf-quant.js";
import { openSafetensors } from "../safetensors.js";
import { shapeOf, traceModel, type GraphKind } from "./trace.js";
import { checkpointConsts, ModelWeights } from "./weights.js";

/** Options of {@link LoadedModel.open}. */
export interface OpenModelOptions {
  /** HF folders: `bf16` reads `model.bf16.safetensors` instead of `model.safetensors` (default `f32`). */
  readonly weights?: "f32" | "bf16";
  /**
   * Quantized HF folders: `fp8-static` applies an FP8 checkpoint's static `input_scale`s (the numerics it was
   * calibrated for, as vLLM runs it); default `f32` keeps activations f32 (see {@link ActivationNumerics}).
   */
  readonly activations?: ActivationNumerics;
}

/** Result of {@link LoadedModel.generate}. */
export interface Generation {
  /** Generated ids (not including the prompt). */
  readonly ids: number[];
  /** The logits each generated id was taken from, [V] each. */
  readonly logits: Float32Array[];
}

/** Result of {@link LoadedModel.step}. */
export interface StepResult {
  /** Logits, row-major [B·T, V]. */
  readonly logits: Float32Array;
  /** The state after the step (state_out by key), to pass to the next step. */
  readonly state: Record<string, Float64Array>;
}

/** Position whose token first makes a LongRoPE sequence longer than the original context (null without LongRoPE). */
function longropeSwitch(config: ModelConfig): number | null {
  const s = config.rope.scaling;
  return s?.type === "longrope" ? s.originalMaxPositions : null;
}

/** Index of the first maximum of `row` (greedy sampling). */
export function argmax(row: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}

/** A model opened for evaluation with the reference evaluator: config, checkpoint and a cache of traced graphs. */
export class LoadedModel {
  private readonly graphs = new Map<string, Graph>();
  private readonly consts: ConstSource;

  private constructor(
    readonly config: ModelConfig,
    readonly checkpoint: Checkpoint,
    readonly weights: ModelWeights,
  ) {
    this.consts = checkpointConsts(checkpoint);
  }

  /** A model over an opened checkpoint and its parsed config (no file system: a browser's fetched bytes, say). */
  static fromCheckpoint(config: ModelConfig, checkpoint: Checkpoint): LoadedModel {
    return new LoadedModel(config, checkpoint, ModelWeights.of(checkpoint));
  }

  /** Opens an HF model folder (config.json + safetensors) or a GGUF file (recognized by its magic). */
  static open(modelPath: string, options: OpenModelOptions = {}): LoadedModel {
    if (isGGUF(modelPath)) {
      checkGGUFActivations(options.activations, modelPath);
      const g = openGGUF(modelPath);
      try {
        return new LoadedModel(configFromGGUF(g), g, ModelWeights.of(g));
      } catch (e) {
        g.close();
        throw e;
      }
    }
    if (!fs.statSync(modelPath).isDirectory())
      throw new TraceError(
        "bad-config",
        "a model is a Hugging Face folder (config.json + safetensors) or a GGUF file",
        { file: modelPath },
      );
    const config = readHFConfig(modelPath);
    const fileName = options.weights === "bf16" ? "model.bf16.safetensors" : undefined;
    if (fileName !== undefined && !fs.existsSync(path.join(modelPath, fileName)))
      throw new TraceError("io", `no ${fileName} in the model folder`, { file: path.join(modelPath, fileName) });
    const ckpt = openSafetensors(modelPath, fileName === undefined ? {} : { fileName });
    try {
      const quantized = withHFQuantization(
        ckpt,
        modelPath,
        options.activations === undefined ? {} : { activations: options.activations },
      );
      return new LoadedModel(config, quantized, ModelWeights.of(quantized));
    } catch (e) {
      ckpt.close();
      throw e;
    }
  }

  /** The traced graph of a kind (traced once, then cached). */
  graph(kind: GraphKind): Graph {
    const key = JSON.stringify(kind);
    let g = this.graphs.get(key);
    if (g === undefined) {
      g = traceModel(this.config, this.weights, kind);
      this.graphs.set(key, g);
    }
    return g;
  }

  private checkIds(ids: readonly number[]): void {
    if (ids.length === 0) throw new TraceError("bad-config", "no token ids given");
    for (const id of ids)
      if (!Number.isInteger(id) || id < 0 || id >= this.config.vocabSize)
        throw new TraceError("bad-config", `token id ${id} is outside the vocabulary [0, ${this.config.vocabSize})`, {
          value: id,
        });
  }

  /** Logits [T·V] (row-major [T, V]) of a prompt evaluated in one stateless prefill. */
  logits(ids: readonly number[]): Float32Array {
    this.checkIds(ids);
    const g = this.graph({ kind: "prefill", tokens: ids.length });
    const out = evaluate(g, { consts: this.consts, slots: { ids: Int32Array.from(ids) } }, { validate: false }).outputs
      .logits!;
    return Float32Array.from(out.data as Float64Array);
  }

  /** Zeroed State buffers (KV caches, conv and recurrent states) for a graph kind, by state key. */
  initialState(kind: GraphKind): Record<string, Float32Array> {
    const g = this.graph(kind);
    const state: Record<string, Float32Array> = {};
    for (const s of g.states) state[s.key] = new Float32Array(g.values[s.input]!.shape.reduce((a, d) => a * d, 1));
    return state;
  }

  /**
   * One evaluation of a stateful graph: `ids` (sequence-major) at start positions `pos` (one per sequence) with
   * the given state and any further i32 slots (a paged graph's `page_table`, `slot_map`, `state_lane`);
   * returns the logits [B·T·V] and the next state. A write past the traced context is a TraceError.
   */
  step(
    kind: Exclude<GraphKind, { kind: "prefill" }>,
    ids: readonly number[],
    pos: readonly number[],
    state: Readonly<Record<string, HostData>>,
    slots: Readonly<Record<string, readonly number[]>> = {},
  ): StepResult {
    this.checkIds(ids);
    const { batch, tokens, context } = shapeOf(kind);
    if (ids.length !== batch * tokens || pos.length !== batch)
      throw new TraceError(
        "bad-config",
        `expected ${batch * tokens} ids and ${batch} positions, got ${ids.length} and ${pos.length}`,
      );
    for (const p of pos)
      if (!Number.isInteger(p) || p < 0 || p + tokens > context!)
        throw new TraceError(
          "context-overflow",
          `tokens at ${p}..${p + tokens - 1} do not fit the traced context of ${context}`,
          { value: p },
        );
    const extra = Object.fromEntries(Object.entries(slots).map(([k, v]) => [k, Int32Array.from(v)]));
    const r = evaluate(
      this.graph(kind),
      { consts: this.consts, slots: { ...extra, ids: Int32Array.from(ids), pos: Int32Array.from(pos) }, state },
      { validate: false },
    );
    const next: Record<string, Float64Array> = {};
    for (const [k, t] of Object.entries(r.state)) next[k] = t.data as Float64Array;
    return { logits: Float32Array.from(r.outputs.logits!.data as Float64Array), state: next };
  }

  /** Greedy generation: the prompt fills the KV cache in one decode step, then one token per step; stops early at `stopIds`. */
  generate(ids: readonly number[], maxTokens: number, stopIds: readonly number[] = []): Generation {
    this.checkIds(ids);
    const context = ids.length + maxTokens;
    const V = this.config.vocabSize;
    let state: Readonly<Record<string, HostData>> = this.initialState({ kind: "decode", context, tokens: ids.length });
    const run = (tokens: readonly number[], pos: number): Float32Array => {
      const r = this.step({ kind: "decode", context, tokens: tokens.length }, tokens, [pos], state);
      state = r.state;
      return r.logits.subarray(r.logits.length - V);
    };
    const out: number[] = [];
    const logits: Float32Array[] = [];
    const switchAt = longropeSwitch(this.config);
    let row = run(ids, 0);
    for (let n = 0; n < maxTokens; n++) {
      const next = argmax(row);
      out.push(next);
      logits.push(row);
      if (stopIds.includes(next) || n === maxTokens - 1) break;
      const pos = ids.length + n;
      if (pos === switchAt && ids.length <= switchAt) {
        // LongRoPE switches to its long factors here; like HF, drop the short-factor cache and re-prefill everything.
        const all = [...ids, ...out];
        state = this.initialState({ kind: "decode", context, tokens: all.length });
        row = run(all, 0);
      } else row = run([next], pos);
    }
    return { ids: out, logits };
  }

  /** Closes the checkpoint's files. */
  close(): void {
    this.checkpoint.close();
  }
}
