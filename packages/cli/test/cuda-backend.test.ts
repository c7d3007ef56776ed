// `--backend cuda` in the CLI: without a CUDA driver every command that takes a backend fails with a clear
// message (exit 1); the bandwidth floor poot bench reports is the weight-and-KV bytes at the measured copy rate.
import * as path from "node:path";
import { CudaError, loadDriver } from "@poot/backend-cuda";
import { bandwidthFloor, bufferIo, runCli } from "@poot/cli";
import { describe, expect, test } from "vitest";
import { REPO_ROOT } from "@poot/testkit";

const DEMO = path.join(REPO_ROOT, "models", "demo");

function driverPresent(): boolean {
  try {
    loadDriver();
    return true;
  } catch (e) {
    if (e instanceof CudaError && e.code === "no-driver") return false;
    throw e;
  }
}

describe.skipIf(driverPresent())("--backend cuda without a CUDA driver (skipped where libcuda.so.1 loads)", () => {
  test.each([
    ["bench"],
    ["logits", "--ids", "1,2"],
    ["generate", "--ids", "1,2", "--greedy"],
    ["run", "--prompt", "hi"],
  ])("poot %s exits 1 saying what is missing", async (cmd, ...rest) => {
    const io = bufferIo();
    const code = await runCli([cmd, DEMO, "--backend", "cuda", ...rest], { io });
    expect(code).toBe(1);
    expect(io.stderr()).toMatch(/--backend cuda: needs an NVIDIA GPU and its driver \(libcuda\.so\.1\)/);
  });
});

test("bandwidthFloor: Llama-3.2-1B's bf16 weights at 4234 GB/s is 0.58 ms per token", () => {
  // Issue 9's figures: 2.47 GB of weights, device copy 4.3 TB/s -> 0.58 ms (about 1,726 tok/s at the floor).
  const f = bandwidthFloor(4234, 2.4716288e9, 2.0);
  expect(f.floorMsPerToken).toBeCloseTo(0.58376, 4);
  expect(f.fractionOfFloor).toBeCloseTo(0.58376 / 2.0, 4);
  expect(f.decodeGBps).toBeCloseTo(1235.8, 1);
  expect(f.copyGBps).toBe(4234);
});
