// The ServeEngine over @poot/runtime: a sequence is a runtime Session with the runtime's Decoding (seeded
// sampling, stop strings, streaming detokenization, logprobs), and a step is Engine.stepBatch.
import { Template } from "@huggingface/jinja";
import type { ChatMessage, Tokenizer } from "@poot/models";
import { Decoding, type Engine, type GenerateOptions } from "@poot/runtime";
import { invariant } from "../errors.js";
import type { Admission, EngineSequence, EngineStats, SequenceEvent, SequenceOptions, ServeEngine } from "./engine.js";

/** Options of {@link RuntimeServeEngine}. */
export interface RuntimeServeEngineOptions {
  /** A Jinja chat template replacing the tokenizer's own (for models that ship none). */
  readonly chatTemplate?: string;
}

class RuntimeSequence implements EngineSequence {
  constructor(readonly decoding: Decoding) {}

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
    return this.decoding.accept(logits).map((e) => (e.kind === "text" ? e : { kind: "token", id: e.id, text: e.text, logprob: e.logprob ?? null, top: e.top ?? null }));
  }

  release(): void {
    this.decoding.session.release();
  }
}

/** Adapts a runtime {@link Engine} (which must have a tokenizer) to the server's {@link ServeEngine}. */
export class RuntimeServeEngine implements ServeEngine {
  private readonly tok: Tokenizer;
  private readonly template: Template | null;

  /**
   * @param engine - the runtime engine; the adapter closes it in {@link RuntimeServeEngine.close}.
   * @param options - a chat template override.
   */
  constructor(readonly engine: Engine, options: RuntimeServeEngineOptions = {}) {
    invariant(engine.tokenizer !== null, "the server needs an engine with a tokenizer");
    this.tok = engine.tokenizer;
    this.template = options.chatTemplate === undefined ? null : new Template(options.chatTemplate);
  }

  /** The runtime engine's KV capacity per session. */
  get context(): number {
    return this.engine.context;
  }

  /** The model's vocabulary size. */
  get vocabSize(): number {
    return this.engine.config.vocabSize;
  }

  /** The model config's EOS ids. */
  get eosTokenIds(): readonly number[] {
    return this.engine.config.eosTokenIds;
  }

  /** The tokenizer's ids of `text` (`special`: add BOS/EOS as its post-processor says). */
  encode(text: string, special: boolean): number[] {
    return this.tok.encode(text, { addSpecial: special });
  }

  /** The override template's, else the tokenizer's, rendering with the generation prompt; null without a template. */
  renderChat(messages: readonly ChatMessage[]): string | null {
    if (this.template !== null) {
      // The variables HF apply_chat_template gives every template.
      return this.template.render({ messages, add_generation_prompt: true, bos_token: this.tok.bosToken ?? "", eos_token: this.tok.eosToken ?? "" });
    }
    if (this.tok.chatTemplate === null) return null;
    return this.tok.applyChatTemplate(messages, { addGenerationPrompt: true });
  }

  /** The tokenizer's decoding of `ids`. */
  textOf(ids: readonly number[]): string {
    return this.tok.decode(ids);
  }

  /** One token decoded alone. */
  tokenText(id: number): string {
    return this.tok.decode([id]);
  }

  /** The runtime pool's pages for prompt + maxTokens (at most a context) against its free pages and lanes. */
  admission(prompt: readonly number[], maxTokens: number): { admit: Admission; pages: number; pagesTotal: number } {
    const e = this.engine, pool = e.pool;
    const pages = pool.pagesFor(Math.min(prompt.length + maxTokens, e.context));
    const laneFree = !e.needsLane() || pool.stats.lanesInUse < pool.lanes;
    const admit: Admission = pages > pool.pages ? "never" : pages <= pool.available && laneFree ? "now" : "wait";
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
      stop: o.stop,
      ignoreEos: o.ignoreEos,
      ...(p.seed === undefined ? {} : { seed: p.seed }),
      ...(o.logprobs === null ? {} : { logprobs: o.logprobs }),
    };
    const session = this.engine.openSession({ reserveTokens: prompt.length + o.maxTokens });
    try {
      const decoding = new Decoding(this.engine, session, prompt, options);
      session.feed(prompt);
      return new RuntimeSequence(decoding);
    } catch (err) {
      session.release();
      throw err;
    }
  }

  /** One `Engine.stepBatch` over the sequences' sessions. */
  step(seqs: readonly EngineSequence[]): Float32Array[] {
    return this.engine.stepBatch(seqs.map((s) => (s as RuntimeSequence).decoding.session));
  }

  /** Programs staged, executor bytes and open sessions, from the runtime. */
  stats(): EngineStats {
    const kv = this.engine.pool.stats;
    return {
      compiles: this.engine.stats.programsStaged, deviceBytes: this.engine.executor.deviceBytes(), openSequences: this.engine.openSessions,
      kv: { pageSize: kv.pageSize, pagesTotal: kv.pagesTotal, pagesInUse: kv.pagesInUse, pagesReserved: kv.pagesReserved },
      ...this.blocks(),
    };
  }

  /** The pipeline's hand-offs and the pager's counters, when the engine runs blocks. */
  private blocks(): Pick<EngineStats, "blocks"> {
    const p = this.engine.pipelineStats;
    if (p === null) return {};
    const g = this.engine.pagerStats;
    return { blocks: { handoffs: p.handoffs, pageIns: g?.pageIns ?? 0, pageInBytes: g?.pageInBytes ?? 0, pageOuts: g?.pageOuts ?? 0, stallSeconds: (g?.stallMs ?? 0) / 1000 } };
  }

  /** Closes the runtime engine (its sessions, programs and checkpoint). */
  close(): void {
    this.engine.close();
  }
}
