// The weight pager on the cpu backend (decision 1709): with a budget of a third of the weights, every block runs on
// the one executor the pager made for the device, paging out releases the block's weights there and paging in
// uploads them again; the answer is the unpaged cpu run's (greedy ids, which are transformers' for the HF fixture,
// and logits within 1e-6). Planted: a staged program that keeps its recorded step after its weights were released
// reads freed memory, and the gate catches it.
import * as fs from "node:fs";
import * as path from "node:path";
import { DeviceProgram, type Executor } from "@poot/executor";
import { LoadedModel } from "@poot/models";
import { Engine, findBlocks, parsePlacement } from "@poot/runtime";
import { describe, expect, test } from "vitest";
import { needFixture } from "@poot/testkit";
import { createExecutor } from "../src/commands/backends.js";
import { FIXTURES, assertSameAnswer, greedyRun, type Run } from "./blocks-split.js";

const N = 8;
const MISSING = needFixture("hf", "gguf");

const CASES = [
  { name: "hf/llama3", model: () => path.join(FIXTURES, "hf", "llama3"), reference: "reference.json" },
  {
    name: "gguf/llama3-w256 Q8_0",
    model: () => path.join(FIXTURES, "gguf", "llama3-w256", "model-Q8_0.gguf"),
    reference: "reference-Q8_0.json",
  },
];

/** The fixture's prompt and greedy ids (transformers' for HF folders, llama.cpp's for GGUF files). */
function reference(c: (typeof CASES)[number]): { prompt: number[]; greedy: number[] } {
  const dir = c.name.startsWith("hf/") ? c.model() : path.dirname(c.model());
  const r = JSON.parse(fs.readFileSync(path.join(dir, c.reference), "utf8")) as {
    prompt_ids: number[];
    greedy_ids: number[];
  };
  // GGUF prompts are cut to 8 tokens (as the split tests do) to keep the run short; their ids are not compared.
  return { prompt: c.name.startsWith("hf/") ? r.prompt_ids : r.prompt_ids.slice(0, 8), greedy: r.greedy_ids };
}

/** An unpaged cpu run, and a paged one with a third of the weights (counting the executors the pager made). */
function runs(
  c: (typeof CASES)[number],
  prompt: number[],
  wrap: (e: Executor) => Executor = (e) => e,
): { ref: Run; paged: Run; made: number; pageIns: number } {
  const single = createExecutor("cpu", "test");
  let ref: Run, L: number, total: number, largest: number;
  try {
    const e = Engine.load(c.model(), {
      executor: single,
      context: prompt.length + N,
      prefillChunk: 8,
      tokenizer: null,
    });
    ref = greedyRun(e, prompt, N);
    L = e.config.numLayers;
    e.close();
    const probe = Engine.load(c.model(), {
      executor: single,
      devices: [{ name: "cpu", executor: single }],
      placement: parsePlacement(`embed:cpu,0-${L - 1}:cpu,head:cpu`, L, ["cpu"]),
      context: 2,
      tokenizer: null,
    });
    total = probe.placementReport()!.weightBytesByDevice["cpu"]!;
    probe.close();
    const m = LoadedModel.open(c.model());
    try {
      largest = Math.max(
        ...findBlocks(m.graph({ kind: "decode", context: 4, tokens: 1 })).blocks.map((b) => b.weightBytes),
      );
    } finally {
      m.close();
    }
  } finally {
    single.dispose();
  }
  const device = createExecutor("cpu", "test");
  let made = 0;
  try {
    const e = Engine.load(c.model(), {
      executor: device,
      devices: [{ name: "cpu", executor: device }],
      placement: parsePlacement(`embed:cpu,0-${L - 1}:cpu,head:cpu`, L, ["cpu"]),
      budgets: { cpu: Math.max(Math.floor(total / 3), largest) },
      deviceFactories: {
        cpu: () => {
          made++;
          return wrap(createExecutor("cpu", "test"));
        },
      },
      context: prompt.length + N,
      prefillChunk: 8,
      tokenizer: null,
    });
    try {
      const paged = greedyRun(e, prompt, N);
      return { ref, paged, made, pageIns: e.pagerStats!.pageIns };
    } finally {
      e.close();
    }
  } finally {
    device.dispose();
  }
}

describe.skipIf(MISSING !== undefined)(
  `the weight pager on cpu${MISSING === undefined ? "" : ` (skipped: ${MISSING})`}`,
  () => {
    for (const c of CASES) {
      test(`${c.name}: one executor pages every block; same answer as unpaged`, { timeout: 300_000 }, () => {
        const { prompt, greedy } = reference(c);
        const { ref, paged, made, pageIns } = runs(c, prompt);
        if (c.name.startsWith("hf/")) expect(ref.ids).toEqual(greedy.slice(0, N));
        assertSameAnswer(paged, ref, "paged", 1e-6);
        expect(pageIns).toBeGreaterThan(N);
        expect(made).toBe(1);
      });
    }

    test("an executor that cannot release weights gets one per page-in (the older scheme); same answer", {
      timeout: 300_000,
    }, () => {
      const c = CASES[1]!;
      const { prompt } = reference(c);
      // The same cpu executor, seen without its optional releaseWeights.
      const unreleasing = (e: Executor): Executor =>
        new Proxy(e, {
          get(target, prop) {
            if (prop === "releaseWeights") return undefined;
            const v = Reflect.get(target, prop) as unknown;
            return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
          },
        });
      const { ref, paged, made, pageIns } = runs(c, prompt, unreleasing);
      assertSameAnswer(paged, ref, "per-page-in executors", 1e-6);
      expect(made).toBe(pageIns);
    });

    test("planted: a step still recorded against released weights fails the gate", { timeout: 300_000 }, () => {
      const c = CASES[1]!;
      const { prompt } = reference(c);
      const proto = DeviceProgram.prototype as unknown as { weightsReleased: (keys: ReadonlySet<string>) => void };
      const real = proto.weightsReleased;
      proto.weightsReleased = () => {};
      try {
        const { ref, paged } = runs(c, prompt);
        expect(() => assertSameAnswer(paged, ref, "planted", 1e-6)).toThrow(/planted: (logits|greedy ids) differ/);
      } finally {
        proto.weightsReleased = real;
      }
    });
  },
);
