// Sessions on the in-repo demo model: queued tokens run in one step, pages are taken as a session grows and
// given back on release, a full pool refuses with kv-full, and a prompt fed in pieces gives the same logits
// as fed at once (State carries across steps).
import * as fs from "node:fs";
import * as path from "node:path";
import { createEvalExecutor } from "@poot/backend-reference";
import { describe, expect, it } from "vitest";
import { Engine } from "./engine.js";
import { REPO_ROOT } from "@poot/testkit";

const DEMO = path.join(REPO_ROOT, "models", "demo");

describe.skipIf(!fs.existsSync(path.join(DEMO, "config.json")))("Session on models/demo", () => {
  it("pieces and whole prompts give identical logits; pages are taken as sessions grow and given back on release", () => {
    const exec = createEvalExecutor();
    const engine = Engine.load(DEMO, { executor: exec, context: 16, prefillChunk: 4, pageSize: 4, kvPages: 5 });
    try {
      const ids = [0, 346, 950, 413, 2038, 476, 263];
      const a = engine.openSession(),
        b = engine.openSession();
      expect(engine.pool.stats).toMatchObject({ pagesTotal: 5, pagesInUse: 0 });
      const whole = a.step(ids);
      // One shared pool: 8 layers x (k, v) x [5 pages x 4 rows, 2 heads, 64] f32, whatever the session count.
      const states = [...engine.state().schema.states.values()];
      expect(states).toHaveLength(16);
      for (const st of states) expect(st.shape).toEqual([20, 2, 64]);
      expect(a.pages).toHaveLength(2);
      b.feed(ids.slice(0, 3));
      b.step();
      b.commit(ids[3]!);
      const pieces = b.step(ids.slice(4));
      expect(Buffer.from(pieces.buffer).equals(Buffer.from(whole.buffer))).toBe(true);
      expect(a.length).toBe(7);
      expect(b.tokens).toEqual(ids);
      expect(engine.pool.stats.pagesInUse).toBe(4);
      // a's ninth token takes the fifth page; b's ninth would need a sixth: the pool is full.
      a.step([1, 2]);
      expect(a.pages).toHaveLength(3);
      expect(() => b.step([2, 3])).toThrow(expect.objectContaining({ code: "kv-full" }));
      expect(b.pages).toHaveLength(2);
      a.release();
      b.release();
      expect(engine.pool.stats).toMatchObject({ pagesInUse: 0, pagesReserved: 0 });
      expect(engine.openSessions).toBe(0);
    } finally {
      engine.close();
    }
  });

  it("prepare stages every chunk size once, reporting progress; later steps stage nothing", () => {
    const engine = Engine.load(DEMO, { executor: createEvalExecutor(), context: 16, prefillChunk: 4 });
    try {
      const seen: string[] = [];
      engine.prepare((done, total, name) => seen.push(`${done}/${total} ${name}`));
      expect(seen).toEqual(["1/3 prefill-4", "2/3 prefill-2", "3/3 decode-1"]);
      const staged = engine.stats.programsStaged;
      engine.openSession().step([0, 346, 950, 413, 2038, 476, 263]);
      expect(engine.stats.programsStaged).toBe(staged);
      expect(engine.stats.prefillTokens).toBe(6);
      expect(engine.stats.decodeTokens).toBe(1);
      // Single-token steps are captured once against the shared StateSet; every later one replays (any session).
      const a = engine.openSession(),
        b = engine.openSession();
      a.step([0, 346]);
      const c0 = engine.stats.captures,
        r0 = engine.stats.replays;
      a.step([950]);
      a.step([413]);
      a.step([2038]);
      b.step([0]);
      a.step([476]);
      expect(engine.stats.captures - c0).toBe(0);
      expect(engine.stats.replays - r0).toBe(5);
    } finally {
      engine.close();
    }
  });
});
