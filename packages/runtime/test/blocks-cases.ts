// The cases of the blocks tests: the HF and GGUF fixture models with their oracles' prompts and greedy ids, the two
// host devices, the placement with every boundary kind, and the probes and planted weight faults of the gates.

import * as fs from "node:fs";
import { createEvalExecutor } from "@poot/backend-reference";
import type { Executor, WeightSource } from "@poot/executor";
import type { Graph } from "@poot/graph-ir";
import { LoadedModel } from "@poot/models";
import { parsePlacement, type BlockDevice, type Placement } from "@poot/runtime";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders the blocks tests read (in the repo's fixtures/; CI fails when one is missing).
export const NO_FIXTURES = needFixture("hf", "gguf");
export const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

export const HF = [
  "llama3",
  "gemma3",
  "qwen3",
  "qwen35",
  "olmoe",
  "deepseek2",
  "gptoss",
  "granite",
  "phi4",
  "smollm3",
] as const;
export const GGUF = ["llama3", "gemma3", "olmoe", "qwen3", "llama3-w256", "qwen3-w256"] as const;
export const TYPES = ["F32", "F16", "Q8_0", "Q4_K_M"] as const;

/** Two host devices, "a" and "b", each an eval executor. */
export function devices(): BlockDevice[] {
  return [
    { name: "a", executor: createEvalExecutor() },
    { name: "b", executor: createEvalExecutor() },
  ];
}

/** A placement with every boundary kind: embed and layer 0 on a, the other layers on b, the head back on a. */
export function split(layers: number): Placement {
  const text = layers > 1 ? `0:a,1-${layers - 1}:b,head:a` : "embed:a,0:b,head:a";
  return parsePlacement(text, layers, ["a", "b"]);
}

/** A model to run, its prompt, and the greedy ids of its oracle (null where the fixture has none). */
export interface Case {
  readonly model: string;
  readonly prompt: number[];
  readonly greedy: number[] | null;
}

/** The case of an HF fixture family: transformers' prompt and greedy ids. */
export function hfCase(fam: string): Case {
  const ref = JSON.parse(fs.readFileSync(fixture("hf", fam, "reference.json"), "utf8")) as {
    prompt_ids: number[];
    greedy_ids: number[];
  };
  return { model: fixture("hf", fam), prompt: ref.prompt_ids, greedy: ref.greedy_ids };
}

/** The case of one GGUF fixture file: the first 8 prompt ids of its llama.cpp reference. */
export function ggufCase(dir: string, type: string): Case {
  const ref = JSON.parse(fs.readFileSync(fixture("gguf", dir, `reference-${type}.json`), "utf8")) as {
    prompt_ids: number[];
  };
  return { model: fixture("gguf", dir, `model-${type}.gguf`), prompt: ref.prompt_ids.slice(0, 8), greedy: null };
}

/** Tokens each run generates. */
export const N = 14;

/** The single-token decode graph of a model (its block cut). */
export function probeGraph(dir: string): Graph {
  const m = LoadedModel.open(dir);
  try {
    return m.graph({ kind: "decode", context: 4, tokens: 1 });
  } finally {
    m.close();
  }
}

/** An executor whose weight source scales the tensors `pick` selects by 1 + 1e-4. */
export function perturbing(inner: Executor, pick: (key: string) => boolean): Executor {
  return new Proxy(inner, {
    get(target, prop, recv) {
      if (prop === "bindWeights") {
        return (source: WeightSource) =>
          target.bindWeights((key, type) => {
            const d = source(key, type);
            if (!pick(key) || !(d instanceof Float32Array)) return d;
            return d.map((x) => x * (1 + 1e-4));
          });
      }
      const v = Reflect.get(target, prop, recv) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
