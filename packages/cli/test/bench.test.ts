// `poot bench` in-process on the llama3 fixture: the JSON report has positive rates consistent with its
// ms/token, the requested shape, and weights counted in device bytes; bad options exit 1.
import { bufferIo, runCli } from "@poot/cli";
import { describe, expect, test } from "vitest";
import { fixture, needFixture } from "@poot/testkit";

const NO_FIXTURES = needFixture("hf/llama3");
const DIR = fixture("hf/llama3");

describe.skipIf(NO_FIXTURES !== undefined)(
  `poot bench${NO_FIXTURES === undefined ? "" : ` (skipped: ${NO_FIXTURES})`}`,
  () => {
    test("--json reports the run's shape and self-consistent rates", async () => {
      const io = bufferIo();
      const code = await runCli(
        ["bench", DIR, "--backend", "eval", "--prompt-tokens", "8", "--gen-tokens", "4", "--runs", "1", "--json"],
        { io },
      );
      expect(code).toBe(0);
      const r = JSON.parse(io.stdout()) as {
        promptTokens: number;
        genTokens: number;
        runs: number;
        prefillTokS: number;
        decodeTokS: number;
        decodeMsPerToken: number;
        deviceBytes: { weights: number };
        timeToFirstTokenMs: number;
        bytesPerToken: number;
        floor: unknown;
        decodeLoop: string;
        tokensPerLaunch: number;
        graphLaunchesPerToken: number | null;
        hostMsPerToken: number | null;
      };
      expect(r).toMatchObject({ promptTokens: 8, genTokens: 4, runs: 1 });
      expect(r.prefillTokS).toBeGreaterThan(0);
      expect(r.decodeTokS * r.decodeMsPerToken).toBeCloseTo(1000, 6);
      // The fixture's f32 weights: 2 layers of (4 attention + 3 MLP matrices + 2 norms), embeddings and final norm.
      const params = 512 * 64 + 64 + 2 * (64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 64 * 128 + 2 * 64);
      expect(r.deviceBytes.weights).toBeGreaterThanOrEqual(4 * params);
      // The whole prefill is the time to the first token; a decode step reads at least every weight once.
      expect(r.timeToFirstTokenMs).toBeCloseTo((8 / r.prefillTokS) * 1000, 6);
      expect(r.bytesPerToken).toBeGreaterThanOrEqual(r.deviceBytes.weights);
      // The eval executor (named: the default is --backend auto) cannot measure a device copy: no floor.
      expect(r.floor).toBeNull();
      // eval has no device greedy loop and counts no graph launches or waits (decision 2201).
      expect(r).toMatchObject({
        decodeLoop: "steps",
        tokensPerLaunch: 1,
        graphLaunchesPerToken: null,
        hostMsPerToken: null,
      });
    }, 60_000);

    test("--decode-loop host-launches runs the greedy loop's launches over host steps; a bad mode is one line", async () => {
      const io = bufferIo();
      const argv = ["bench", DIR, "--backend", "eval", "--prompt-tokens", "8", "--gen-tokens", "7", "--runs", "1"];
      expect(
        await runCli([...argv, "--decode-loop", "host-launches", "--tokens-per-launch", "4", "--json"], { io }),
      ).toBe(0);
      expect(JSON.parse(io.stdout())).toMatchObject({ decodeLoop: "host-launches", tokensPerLaunch: 4 });
      const bad = bufferIo();
      expect(await runCli([...argv, "--decode-loop", "gpu"], { io: bad })).not.toBe(0);
      expect(bad.stderr().trim().split("\n")).toHaveLength(1);
      expect(bad.stderr()).toContain("--decode-loop must be auto, steps or host-launches");
    }, 60_000);

    test("--threads: the CPU backend's worker count; 0 or a non-number is a one-line error", async () => {
      for (const bad of ["0", "two"]) {
        const io = bufferIo();
        expect(await runCli(["bench", DIR, "--backend", "cpu", "--threads", bad], { io })).toBe(1);
        expect(io.stderr().trim().split("\n")).toHaveLength(1);
        expect(io.stderr()).toContain("--threads");
      }
      const io = bufferIo();
      const argv = ["bench", DIR, "--backend", "cpu", "--threads", "1", "--prompt-tokens", "4", "--gen-tokens", "3"];
      expect(await runCli([...argv, "--runs", "1", "--json"], { io })).toBe(0);
      expect(JSON.parse(io.stdout()).decodeTokS).toBeGreaterThan(0);
    }, 120_000);

    test("--gen-tokens 1 exits 1", async () => {
      const io = bufferIo();
      expect(await runCli(["bench", DIR, "--gen-tokens", "1"], { io })).toBe(1);
      expect(io.stderr()).toContain("--gen-tokens >= 2");
    });
  },
);
