// Sessions on the in-repo demo model: queued tokens run in one step, release frees the State's bytes,
// and a prompt fed in pieces gives the same logits as fed at once (State carries across steps).
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { createEvalExecutor } from "@poot/executor";
import { describe, expect, it } from "vitest";
import { Engine } from "./engine.js";

function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "pnpm-workspace.yaml"))) dir = path.dirname(dir);
  return dir;
}
const DEMO = path.join(repoRoot(), "models", "demo");

describe.skipIf(!fs.existsSync(path.join(DEMO, "config.json")))("Session on models/demo", () => {
  it("pieces and whole prompts give identical logits; release returns the State's bytes", () => {
    const exec = createEvalExecutor();
    const engine = Engine.load(DEMO, { executor: exec, context: 16, prefillChunk: 4 });
    try {
      const ids = [0, 346, 950, 413, 2038, 476, 263];
      const a = engine.openSession(), b = engine.openSession();
      // Two sessions, each 8 layers x (k, v) x [1, 2 heads, 16 positions, 64] f32.
      expect(exec.deviceBytes().state).toBe(2 * 8 * 2 * 2 * 16 * 64 * 4);
      const whole = a.step(ids);
      b.feed(ids.slice(0, 3));
      b.step();
      b.commit(ids[3]!);
      const pieces = b.step(ids.slice(4));
      expect(Buffer.from(pieces.buffer).equals(Buffer.from(whole.buffer))).toBe(true);
      expect(a.length).toBe(7);
      expect(b.tokens).toEqual(ids);
      a.release();
      b.release();
      expect(exec.deviceBytes().state).toBe(0);
      expect(engine.openSessions).toBe(0);
    } finally {
      engine.close();
    }
  });
});
