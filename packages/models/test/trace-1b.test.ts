// Tracing at true size without weights: Llama 3.2 1B's published config.json, tensors described by name,
// dtype and shape only. The decode graph must trace quickly, hold only primitives and pair a KV State per layer.
import * as fs from "node:fs";
import { PRIMITIVE_OPS, dispatchCount } from "@poot/graph-ir";
import { describe, expect, test } from "vitest";
import { ModelWeights, parseHFConfig, traceModel, type TensorInfo } from "@poot/models";
import { fixture, needFixture } from "@poot/testkit";

// The fixture folders this file reads (in the repo's fixtures/; CI fails when one is missing).
const NO_FIXTURES = needFixture("configs");
const FIXTURES = NO_FIXTURES === undefined ? fixture() : undefined;

describe.skipIf(FIXTURES === undefined)(
  `Llama 3.2 1B shapes (${FIXTURES === undefined ? NO_FIXTURES : "fixtures present"})`,
  () => {
    test("decode graph at context 4096: primitives only, 32 KV states, traced in well under a second", () => {
      const cfg = parseHFConfig(JSON.parse(fs.readFileSync(fixture("configs", "llama-3.2-1b.json"), "utf8")));
      const D = cfg.hiddenSize,
        F = cfg.intermediateSize,
        Dh = cfg.headDim;
      const shapes: [string, number[]][] = [
        ["model.embed_tokens.weight", [cfg.vocabSize, D]],
        ["model.norm.weight", [D]],
      ];
      for (let i = 0; i < cfg.numLayers; i++) {
        const p = `model.layers.${i}.`;
        shapes.push(
          [`${p}input_layernorm.weight`, [D]],
          [`${p}post_attention_layernorm.weight`, [D]],
          [`${p}self_attn.q_proj.weight`, [cfg.numHeads * Dh, D]],
          [`${p}self_attn.k_proj.weight`, [cfg.numKVHeads * Dh, D]],
          [`${p}self_attn.v_proj.weight`, [cfg.numKVHeads * Dh, D]],
          [`${p}self_attn.o_proj.weight`, [D, cfg.numHeads * Dh]],
          [`${p}mlp.gate_proj.weight`, [F, D]],
          [`${p}mlp.up_proj.weight`, [F, D]],
          [`${p}mlp.down_proj.weight`, [D, F]],
        );
      }
      const tensors = new Map(
        shapes.map(([name, shape]): [string, TensorInfo] => [
          name,
          { name, dtype: "BF16", shape, byteOffset: 0, byteLength: 0, file: "none" },
        ]),
      );
      const t0 = performance.now();
      const g = traceModel(cfg, new ModelWeights(tensors, "hf", "none"), { kind: "decode", context: 4096 });
      const ms = performance.now() - t0;
      console.log(
        `llama-3.2-1b decode: ${g.eqns.length} equations, ${dispatchCount(g)} dispatches unfused, traced in ${ms.toFixed(0)} ms`,
      );
      expect(ms).toBeLessThan(1000);
      expect(g.eqns.every((e) => e.op in PRIMITIVE_OPS)).toBe(true);
      expect(g.states).toHaveLength(2 * cfg.numLayers);
      expect(g.values[g.states[0]!.input]!.shape).toEqual([1, cfg.numKVHeads, 4096, Dh]);
      expect(g.values[g.outputs[0]!.value]!.shape).toEqual([1, cfg.vocabSize]);
      // Tied embeddings: the LM head reads the embedding Const, so no lm_head tensor is needed.
      expect(g.values.filter((v) => v.storage.kind === "const")).toHaveLength(shapes.length);
    });
  },
);
