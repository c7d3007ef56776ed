// The BatchEngine over @poot/runtime: a sequence is a runtime Session with the runtime's Decoding (seeded
// sampling, stop strings, streaming detokenization, logprobs), and a step is Engine.stepBatch.
import type { ChatMessage } from "@poot/models";
import {
  Decoding,
  RuntimeError,
  tokenLogprobs,
  formatPlacement,
  parsePlacement,
  type Engine,
  type GenerateOptions,
} from "@poot/runtime";
import { invariant } from "../errors.js";
import type {
  Admission,
  BatchEngine,
  EngineSequence,
  EngineStats,
  JsonConstraintSpec,
  PlacementSummary,
  PromptLogprob,
  RelocateResult,
  SequenceEvent,
  SequenceOptions,
} from "./engine.js";
import { JsonGrammar } from "./json-grammar.js";
import { CompiledConstraint, ConstrainedDecoder, TokenTable } from "./token-mask.js";
import { encodeChat, textCodec, type TextCodec } from "./text.js";
import { TextWorker } from "./text-worker.js";

/** Options of {@link RuntimeServeEngine}. */
export interface RuntimeServeEngineOptions {
  /** A Jinja chat template replacing the tokenizer's own (for models that ship none). */
  readonly chatTemplate?: string;
  /**
   * The model folder or .gguf file the engine was loaded from: when given, prompts are tokenized and chat
   * templates rendered in a worker thread that loads this model's tokenizer, never on the event loop.
   */
  readonly tokenizerSource?: string;
}

class RuntimeSequence implements EngineSequence {
  /**
   * @param decoding - the runtime's decoding state over the session.
   * @param json - the grammar constraint, when the output must be one JSON document.
   */
  constructor(
    readonly decoding: Decoding,
    private readonly json: ConstrainedDecoder | null = null,
  ) {}

  get length(): number {
    const s = this.decoding.session;
    return s.length + s.queued.length;
  }

  get cached(): number {
    return this.decoding.session.length;
  }

  get generated(): number {
    return this.decoding.ids.length;
  }

  get finish(): "eos" | "stop" | "length" | null {
    const f = this.decoding.finish;
    // The server cancels by releasing, never through Decoding.cancel.
    invariant(f !== "cancelled", "a served sequence was cancelled through its Decoding");
    return f;
  }

  accept(logits: Float32Array): SequenceEvent[] {
    const d = this.decoding;
    // The mask goes on the raw logits, before penalties and sampling: disallowed tokens are at -Infinity throughout.
    if (this.json !== null) this.json.mask(logits, d.options.maxTokens - d.ids.length);
    const events = d.accept(logits);
    if (this.json !== null) for (const e of events) if (e.kind === "token") this.json.accept(e.id);
    return events.map((e) =>
      e.kind === "text" ? e : { kind: "token", id: e.id, text: e.text, logprob: e.logprob ?? null, top: e.top ?? null },
    );
  }

  release(): void {
    this.decoding.session.release();
  }
}

/** Compiled schemas an engine keeps (least recently used dropped first). */
const CONSTRAINTS_KEPT = 64;

/** Adapts a runtime {@link Engine} (which must have a tokenizer) to the server's {@link BatchEngine}. */
export class RuntimeServeEngine implements BatchEngine {
  private readonly codec: TextCodec;
  private readonly worker: TextWorker | null;
  /** Most UTF-8 bytes of text one token can stand for (the longest token string's bytes, an upper bound). */
  readonly maxTokenBytes: number;
  /** Each token's text for constrained decoding (built on the first constrained request). */
  private table: TokenTable | null = null;
  /** Compiled schemas by their JSON text, with their mask caches (the most recent {@link CONSTRAINTS_KEPT}). */
  private readonly constraints = new Map<string, CompiledConstraint>();

  /**
   * @param engine - the runtime engine; the adapter closes it in {@link RuntimeServeEngine.close}.
   * @param options - a chat template override.
   */
  constructor(
    readonly engine: Engine,
    options: RuntimeServeEngineOptions = {},
  ) {
    invariant(engine.tokenizer !== null, "the server needs an engine with a tokenizer");
    this.codec = textCodec(engine.tokenizer, options.chatTemplate);
    const tok = engine.tokenizer;
    let most = 1;
    for (let id = 0; id < tok.vocabSize; id++) most = Math.max(most, Buffer.byteLength(tok.idToToken(id) ?? ""));
    this.maxTokenBytes = most;
    this.worker =
      options.tokenizerSource === undefined
        ? null
        : new TextWorker({
            model: options.tokenizerSource,
            ...(options.chatTemplate === undefined ? {} : { chatTemplate: options.chatTemplate }),
          });
  }

  /** The runtime engine's KV capacity per session. */
  get context(): number {
    return this.engine.context;
  }

  /** Tokens the runtime's whole KV page pool holds. */
  get kvTokens(): number {
    return this.engine.pool.pages * this.engine.pool.pageSize;
  }

  /** The model's vocabulary size. */
  get vocabSize(): number {
    return this.engine.config.vocabSize;
  }

  /** The model config's EOS ids. */
  get eosTokenIds(): readonly number[] {
    return this.engine.config.eosTokenIds;
  }

  /** The tokenizer's ids of `text` (`special`: add BOS/EOS as its post-processor says), in the worker when there is one. */
  async encode(text: string, special: boolean): Promise<number[]> {
    return this.worker === null
      ? this.codec.tok.encode(text, { addSpecial: special })
      : this.worker.encode(text, special);
  }

  /** The ids of the chat rendered by the override template, else the tokenizer's; null without a template. */
  async encodeChat(messages: readonly ChatMessage[], tools?: readonly unknown[] | null): Promise<number[] | null> {
    return this.worker === null ? encodeChat(this.codec, messages, tools) : this.worker.chat(messages, tools);
  }

  /** The tokenizer's decoding of `ids`. */
  textOf(ids: readonly number[]): string {
    return this.codec.tok.decode(ids);
  }

  /** The model's hidden size. */
  get hiddenSize(): number {
    return this.engine.config.hiddenSize;
  }

  /** `Engine.promptHidden`: one stateless prefill's final normed hidden states. */
  async hidden(ids: readonly number[]): Promise<Float32Array> {
    return this.engine.promptHidden(ids);
  }

  /** Log-softmax of `Engine.prefillLogits` rows (a stateless prefill: no KV pages taken). */
  async promptLogprobs(ids: readonly number[], top: number): Promise<PromptLogprob[]> {
    const V = this.vocabSize;
    const rows = this.engine.prefillLogits(ids);
    return ids.map((id, i) => {
      if (i === 0) return { id, logprob: null, top: null };
      const lp = tokenLogprobs(rows.subarray((i - 1) * V, i * V), id, top);
      return { id, logprob: lp.logprob, top: lp.top };
    });
  }

  /** One token decoded alone. */
  tokenText(id: number): string {
    return this.codec.tok.decode([id]);
  }

  /** The runtime pool's pages for prompt + maxTokens (at most a context) against its free pages and lanes. */
  admission(prompt: readonly number[], maxTokens: number): { admit: Admission; pages: number; pagesTotal: number } {
    const e = this.engine,
      pool = e.pool;
    const pages = pool.pagesFor(Math.min(prompt.length + maxTokens, e.context));
    const laneFree = !e.needsLane() || pool.stats.lanesInUse < pool.lanes;
    // With the prefix cache, cached prefix pages need no new page and cache-only pages can be evicted for it.
    const { need, available } = e.admissionPages(prompt, prompt.length + maxTokens);
    const admit: Admission = pages > pool.pages ? "never" : need <= available && laneFree ? "now" : "wait";
    return { admit, pages, pagesTotal: pool.pages };
  }

  /** A runtime session with the prompt queued and a runtime Decoding over it. */
  begin(prompt: readonly number[], o: SequenceOptions): EngineSequence {
    const p = o.sampling;
    const options: GenerateOptions = {
      maxTokens: o.maxTokens,
      temperature: p.temperature,
      topP: p.topP,
      frequencyPenalty: p.frequencyPenalty,
      presencePenalty: p.presencePenalty,
      topK: p.topK,
      minP: p.minP,
      repetitionPenalty: p.repetitionPenalty,
      logitBias: p.logitBias,
      stop: o.stop,
      ignoreEos: o.ignoreEos,
      ...(p.seed === undefined ? {} : { seed: p.seed }),
      ...(o.logprobs === null ? {} : { logprobs: o.logprobs }),
    };
    const json = o.constraint === undefined || o.constraint === null ? null : this.constrained(o.constraint);
    const session = this.engine.openSession({ reserveTokens: prompt.length + o.maxTokens, prompt });
    try {
      const decoding = new Decoding(this.engine, session, prompt, options);
      // A cached prefix is already held: only the rest of the prompt runs.
      session.feed(prompt.slice(session.length));
      return new RuntimeSequence(decoding, json);
    } catch (err) {
      session.release();
      throw err;
    }
  }

  /** A decoder for `spec`, its schema compiled once (and its masks cached) for every sequence that uses it. */
  private constrained(spec: JsonConstraintSpec): ConstrainedDecoder {
    const key = JSON.stringify(spec.schema);
    let c = this.constraints.get(key);
    if (c === undefined) {
      const tok = this.codec.tok;
      this.table ??= TokenTable.of(this.vocabSize, (ids) => tok.decode(ids, { skipSpecial: true }), this.eosTokenIds);
      c = new CompiledConstraint(new JsonGrammar(spec.schema, "response_format"), this.table);
      if (this.constraints.size >= CONSTRAINTS_KEPT) this.constraints.delete(this.constraints.keys().next().value!);
    } else this.constraints.delete(key);
    this.constraints.set(key, c);
    return new ConstrainedDecoder(c);
  }

  /** One `Engine.stepBatch` over the sequences' sessions. */
  step(seqs: readonly EngineSequence[]): Float32Array[] {
    return this.engine.stepBatch(seqs.map((s) => (s as RuntimeSequence).decoding.session));
  }

  /** Programs staged, executor bytes and open sessions, from the runtime. */
  stats(): EngineStats {
    const kv = this.engine.pool.stats;
    return {
      compiles: this.engine.stats.programsStaged,
      deviceBytes: this.engine.executor.deviceBytes(),
      openSequences: this.engine.openSessions,
      ...(this.engine.prefixCache === null ? {} : { prefixCache: this.engine.prefixCache.stats }),
      kv: {
        pageSize: kv.pageSize,
        pagesTotal: kv.pagesTotal,
        pagesInUse: kv.pagesInUse,
        pagesReserved: kv.pagesReserved,
      },
      ...this.blocks(),
    };
  }

  /** Where the blocks are; null when the engine runs one program. */
  placement(): PlacementSummary | null {
    const p = this.engine.pipeline;
    if (p === null) return null;
    const r = p.report();
    return {
      place: formatPlacement(r.placement),
      unitsPerToken: r.unitsPerToken,
      handoffsPerToken: r.handoffsPerToken,
      weightBytesByDevice: r.weightBytesByDevice,
      relocations: p.stats.relocations,
    };
  }

  /**
   * Moves blocks to `place`'s devices (the devices the engine was made with) between steps, with their State;
   * a bad placement is refused with one line and moves nothing.
   */
  relocate(place: string): RelocateResult {
    const p = this.engine.pipeline;
    if (p === null)
      return {
        error:
          "this server runs the model as one program: start poot serve with --place or --gpu-layers to relocate blocks",
      };
    try {
      this.engine.relocate(parsePlacement(place, this.engine.config.numLayers, p.deviceNames));
    } catch (err) {
      if (err instanceof RuntimeError) return { error: err.message.replace(/^\[[a-z-]+\] /, "") };
      throw err;
    }
    return { placement: this.placement()! };
  }

  /** The pipeline's hand-offs and the pager's counters, when the engine runs blocks. */
  private blocks(): Pick<EngineStats, "blocks"> {
    const p = this.engine.pipelineStats;
    if (p === null) return {};
    const g = this.engine.pagerStats;
    return {
      blocks: {
        handoffs: p.handoffs,
        pageIns: g?.pageIns ?? 0,
        pageInBytes: g?.pageInBytes ?? 0,
        pageOuts: g?.pageOuts ?? 0,
        stallSeconds: (g?.stallMs ?? 0) / 1000,
        prefetchedBytes: g?.prefetchedBytes ?? 0,
      },
    };
  }

  /** Closes the runtime engine (its sessions, programs and checkpoint) and stops the text worker. */
  close(): void {
    void this.worker?.close();
    this.engine.close();
  }
}
