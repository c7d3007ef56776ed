// `poot logits | generate --backend vulkan` on the shared fixtures: the model compiled by graph-plan, kernels
// from kernelgen lowered to SPIR-V and run on a Vulkan device (lavapipe here), against transformers' references.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { probeVulkan } from "@poot/backend-vulkan";
import { openSafetensors } from "@poot/models";
import { poot } from "./run-poot.js";
import { afterAll, describe, expect, test } from "vitest";
import { fixture, needFixture, relErr } from "@poot/testkit";

const NO_FIXTURES = needFixture("hf");
const FIX = fixture();
// The test (not the library) picks lavapipe when no ICD is chosen and .ci/lavapipe-setup ran.
const LVP = path.join(os.homedir(), ".cache", "lavapipe25", "lvp_icd.json");
if (process.env.VK_DRIVER_FILES === undefined && fs.existsSync(LVP)) process.env.VK_DRIVER_FILES = LVP;
const probe = probeVulkan();
const why = NO_FIXTURES !== undefined ? NO_FIXTURES : !probe.ok ? `no Vulkan device: ${probe.reason}` : undefined;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "poot-vulkan-cmd-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe.skipIf(why !== undefined)(
  `poot --backend vulkan on fixtures/${why === undefined ? "" : ` (skipped: ${why})`}`,
  () => {
    // Every family with f32 weights; bf16 weights on llama3 only (lavapipe compiles each new pipeline with LLVM,
    // and every extra program costs seconds on a shared CPU).
    for (const fam of ["llama3", "qwen3", "gemma3", "olmoe", "qwen35"]) {
      const dir = path.join(FIX, "hf", fam);
      test(`${fam}: logits within 1e-4 of transformers and greedy ids equal`, async () => {
        const ref = JSON.parse(fs.readFileSync(path.join(dir, "reference.json"), "utf8")) as {
          prompt_ids: number[];
          greedy_ids: number[];
        };
        const want = openSafetensors(path.join(dir, "reference.safetensors")).readF32Sync("prompt_logits");
        for (const weights of fam === "llama3" ? ["f32", "bf16"] : ["f32"]) {
          const out = path.join(tmp, `${fam}-${weights}.bin`);
          const r = await poot(
            "logits",
            dir,
            "--backend",
            "vulkan",
            "--ids",
            ref.prompt_ids.join(","),
            "--out",
            out,
            "--weights",
            weights,
          );
          expect(r.code, r.err).toBe(0);
          const b = fs.readFileSync(out);
          expect(
            relErr(new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4), want),
            `${fam} ${weights}`,
          ).toBeLessThanOrEqual(1e-4);
        }
        const g = await poot(
          "generate",
          dir,
          "--backend",
          "vulkan",
          "--ids",
          ref.prompt_ids.join(","),
          "--max-tokens",
          String(ref.greedy_ids.length),
          "--greedy",
          "--ignore-eos",
        );
        expect(g.code, g.err).toBe(0);
        expect(JSON.parse(g.out)).toEqual(ref.greedy_ids);
      }, 600_000);
    }
  },
);
