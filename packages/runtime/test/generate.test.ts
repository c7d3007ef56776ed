// Generation through the public API on the llama3 fixture: streamed text equals the tokenizer's decode of
// the ids, a stop string cuts the text exactly, EOS ids end generation, seeds reproduce, errors are typed.
import * as fs from "node:fs";
import { createEvalExecutor } from "@poot/backend-reference";
import { Engine, RuntimeError, generate, generateAll, generateAsync } from "@poot/runtime";
import { afterAll, describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("hf");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

interface Reference {
  prompt_ids: number[];
  greedy_ids: number[];
}

describe.skipIf(FIXTURES === undefined)(
  `generation on the llama3 fixture (${FIXTURES === undefined ? NO_FIXTURES : "present"})`,
  () => {
    const ref =
      FIXTURES === undefined
        ? null
        : (JSON.parse(fs.readFileSync(fixture("hf", "llama3", "reference.json"), "utf8")) as Reference);
    const engine =
      FIXTURES === undefined
        ? null
        : Engine.load(fixture("hf", "llama3"), { executor: createEvalExecutor(), context: 64 });
    afterAll(() => engine?.close());
    const greedy = { maxTokens: 16, temperature: 0, ignoreEos: true } as const;

    test("streamed pieces concatenate to the tokenizer's decode of the greedy ids", () => {
      const e = engine!,
        s = e.openSession();
      const it = generate(e, s, ref!.prompt_ids, greedy);
      let streamed = "";
      const ids: number[] = [];
      for (let r = it.next(); ; r = it.next()) {
        if (r.done === true) {
          expect(r.value.ids).toEqual(ref!.greedy_ids);
          expect(r.value.text).toBe(streamed);
          break;
        }
        if (r.value.kind === "token") ids.push(r.value.id);
        streamed += r.value.text;
      }
      expect(ids).toEqual(ref!.greedy_ids);
      expect(streamed).toBe(e.tokenizer!.decode(ref!.greedy_ids, { skipSpecial: true }));
      s.release();
    });

    test("a stop string ends generation exactly before it", () => {
      const e = engine!;
      const full = e.tokenizer!.decode(ref!.greedy_ids, { skipSpecial: true });
      const stop = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 3);
      const r = generateAll(e, e.openSession(), ref!.prompt_ids, { ...greedy, stop: [stop] });
      expect(r.finishReason).toBe("stop");
      expect(r.text).toBe(full.slice(0, full.indexOf(stop)));
      expect(ref!.greedy_ids.slice(0, r.ids.length)).toEqual(r.ids);
    });

    test("a stop token id ends generation and is not emitted; the token limit ends with 'length'", () => {
      const e = engine!;
      const r = generateAll(e, e.openSession(), ref!.prompt_ids, {
        maxTokens: 16,
        temperature: 0,
        stopTokenIds: [ref!.greedy_ids[3]!],
      });
      expect(r.ids).toEqual(ref!.greedy_ids.slice(0, 3));
      expect(r.finishReason).toBe("eos");
      const l = generateAll(e, e.openSession(), ref!.prompt_ids, { maxTokens: 4, temperature: 0, ignoreEos: true });
      expect(l.ids).toEqual(ref!.greedy_ids.slice(0, 4));
      expect(l.finishReason).toBe("length");
      expect(l.decodeSteps).toBe(3);
    });

    test("seeded sampling reproduces; top-k 1 is greedy; the async generator yields the same tokens", async () => {
      const e = engine!;
      const opts = { maxTokens: 8, temperature: 1.3, topP: 0.95, seed: 42, ignoreEos: true };
      const a = generateAll(e, e.openSession(), ref!.prompt_ids, opts);
      const b = generateAll(e, e.openSession(), ref!.prompt_ids, opts);
      expect(a.ids).toEqual(b.ids);
      const k1 = generateAll(e, e.openSession(), ref!.prompt_ids, {
        maxTokens: 6,
        temperature: 1,
        topK: 1,
        seed: 1,
        ignoreEos: true,
      });
      expect(k1.ids).toEqual(ref!.greedy_ids.slice(0, 6));
      const ids: number[] = [];
      for await (const ev of generateAsync(e, e.openSession(), ref!.prompt_ids, opts))
        if (ev.kind === "token") ids.push(ev.id);
      expect(ids).toEqual(a.ids);
    });

    test("context overflow, bad ids and released sessions are typed RuntimeErrors", () => {
      const e = engine!;
      const s = e.openSession();
      const code = (fn: () => unknown) => {
        try {
          fn();
        } catch (err) {
          expect(err).toBeInstanceOf(RuntimeError);
          return (err as RuntimeError).code;
        }
        return "no error";
      };
      expect(code(() => s.feed(new Array<number>(65).fill(1)))).toBe("context-overflow");
      expect(code(() => s.feed([e.config.vocabSize]))).toBe("bad-tokens");
      expect(code(() => s.step())).toBe("bad-tokens");
      s.release();
      expect(code(() => s.feed([1]))).toBe("bad-session");
      expect(code(() => generateAll(e, e.openSession(), ref!.prompt_ids, { maxTokens: 0 }))).toBe("bad-sampling");
    });
  },
);
