// `--tp` through the CLI: `poot compile --tp 2 --explain` lists the shards and the all-reduces per step (Llama-3.2-1B's
// released config: 2 per layer, one [1, 2048] f32 row each); `poot run --tp 2` answers what `--tp 1` answers; bad
// values, other backends and models whose KV heads do not divide are one-line refusals.
import { poot } from "./run-poot.js";
import { describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";

const NO_FIXTURES = needFixture("hf", "configs");

describe.skipIf(NO_FIXTURES !== undefined)(
  `poot --tp${NO_FIXTURES === undefined ? "" : ` (skipped: ${NO_FIXTURES})`}`,
  () => {
    test("compile --tp 2 --explain: Llama-3.2-1B's shards and 32 all-reduces of 8 KiB per decode step", async () => {
      const r = await poot(
        "compile",
        fixture("configs", "llama-3.2-1b.json"),
        "--target",
        "cuda",
        "--tp",
        "2",
        "--explain",
      );
      expect(r.code, r.err).toBe(0);
      expect(r.out).toContain("tensor parallel: 2 ranks, 33 segments per rank per step");
      expect(r.out).toContain("weights split: 112 tensors");
      expect(r.out).toContain("model.layers.0.self_attn.k_proj.weight [512, 2048] split on axis 0 -> 256 per rank");
      expect(r.out).toContain("all-reduce per step: 32 (262144 bytes)");
      expect(r.out).toContain("all-gather per step: 0 (0 bytes)");
    });

    test("run --tp 2 answers what one executor answers (greedy)", async () => {
      const args = ["run", fixture("hf", "llama3"), "--backend", "cpu", "--prompt", "hello", "-n", "10"];
      const one = await poot(...args, "--temperature", "0", "--json");
      const two = await poot(...args, "--temperature", "0", "--json", "--tp", "2");
      expect(two.code, two.err).toBe(0);
      expect((JSON.parse(two.out) as { text: string }).text).toBe((JSON.parse(one.out) as { text: string }).text);
    });

    test("refusals are one line naming the problem", async () => {
      const llama = fixture("hf", "llama3");
      const cases: [string[], RegExp][] = [
        [
          ["run", llama, "--backend", "cpu", "--tp", "4", "--prompt", "x"],
          /num_key_value_heads \(2\) does not divide by 4/,
        ],
        [["compile", llama, "--target", "cpu", "--tp", "4"], /num_key_value_heads \(2\) does not divide by 4/],
        [["run", llama, "--backend", "vulkan", "--tp", "2", "--prompt", "x"], /--tp 2 runs on cpu or eval only/],
        [
          ["run", llama, "--backend", "cpu", "--tp", "two", "--prompt", "x"],
          /--tp must be a positive integer, got "two"/,
        ],
        [["bench", llama, "--backend", "cpu", "--tp", "2", "--gpu-layers", "1"], /--tp 2 cannot be combined/],
        [["run", llama, "--backend", "cpu", "--tp", "2", "--compiled", "--prompt", "x"], /leave out --compiled/],
      ];
      for (const [argv, msg] of cases) {
        const r = await poot(...argv);
        expect(r.code, argv.join(" ")).not.toBe(0);
        expect(r.err).toMatch(msg);
        expect(r.err.trim().split("\n"), r.err).toHaveLength(1);
      }
    });
  },
);
