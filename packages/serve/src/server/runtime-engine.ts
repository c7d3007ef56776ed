// The ServeEngine over @poot/runtime: sessions are runtime Sessions, a step is Engine.stepBatch, sampling is
// the runtime's seeded sampleToken, stop strings its StopMatcher, and text the model tokenizer's.
import { Template } from "@huggingface/jinja";
import type { ChatMessage, Tokenizer } from "@poot/models";
import { Rng, StopMatcher, randomSeed, sampleToken, type Engine, type Session, type SamplingOptions } from "@poot/runtime";
import { invariant } from "../errors.js";
import type { EngineSequence, EngineStats, Sampler, SamplingParams, ServeEngine, StopStream, TextStream } from "./engine.js";

/** Options of {@link RuntimeServeEngine}. */
export interface RuntimeServeEngineOptions {
  /** A Jinja chat template replacing the tokenizer's own (for models that ship none). */
  readonly chatTemplate?: string;
}

class RuntimeSequence implements EngineSequence {
  constructor(readonly session: Session) {}

  get length(): number {
    return this.session.length + this.session.queued.length;
  }

  feed(ids: readonly number[]): void {
    this.session.feed(ids);
  }

  release(): void {
    this.session.release();
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

  /** The tokenizer's stream decoder, special tokens skipped. */
  textStream(): TextStream {
    return this.tok.streamDecoder({ skipSpecial: true });
  }

  /** The runtime's stop matcher. */
  stopStream(stops: readonly string[]): StopStream {
    return new StopMatcher(stops);
  }

  /** The runtime's `sampleToken` with its own seeded `Rng`. */
  sampler(p: SamplingParams): Sampler {
    const options: SamplingOptions = { temperature: p.temperature, topP: p.topP, frequencyPenalty: p.frequencyPenalty, presencePenalty: p.presencePenalty };
    const rng = new Rng(p.seed ?? randomSeed());
    // The context argument only feeds the repetition penalty, which the OpenAI API does not have.
    return (logits, generated) => sampleToken(logits, [], generated, options, rng);
  }

  /** A new runtime session. */
  open(): EngineSequence {
    return new RuntimeSequence(this.engine.openSession());
  }

  /** One `Engine.stepBatch` over the sequences' sessions. */
  step(seqs: readonly EngineSequence[]): Float32Array[] {
    return this.engine.stepBatch(seqs.map((s) => (s as RuntimeSequence).session));
  }

  /** Programs staged, executor bytes and open sessions, from the runtime. */
  stats(): EngineStats {
    return { compiles: this.engine.stats.programsStaged, deviceBytes: this.engine.executor.deviceBytes(), openSequences: this.engine.openSessions };
  }

  /** Closes the runtime engine (its sessions, programs and checkpoint). */
  close(): void {
    this.engine.close();
  }
}
