// The suite must be able to fail: executors with planted faults (a dropped state write-back, an output
// off by 1e-4 relative, slots ignored after the first step) are each caught.
import type { Executor, StagedProgram, StateSet } from "@poot/executor";
import { checkConformanceCase, conformanceCases, relativeError } from "@poot/executor/conformance";
import { describe, expect, it } from "vitest";
import { createEvalExecutor } from "./eval-executor.js";

/** Wraps the eval executor, letting a test corrupt a program's behaviour. */
function faulty(patch: (p: StagedProgram) => Partial<StagedProgram>): Executor {
  const inner = createEvalExecutor();
  return {
    caps: inner.caps,
    bindWeights: (s) => inner.bindWeights(s),
    deviceBytes: () => inner.deviceBytes(),
    dispose: () => inner.dispose(),
    stage: (g, o) => {
      const p = inner.stage(g, o);
      const over = patch(p);
      return Object.assign(Object.create(Object.getPrototypeOf(p) as object) as StagedProgram, p, over);
    },
  };
}

const find = (prefix: string) => conformanceCases("bf16").find((c) => c.name.startsWith(prefix))!;

describe("conformance suite catches planted faults", () => {
  it("accepts the reference", () => {
    for (const c of conformanceCases("bf16"))
      expect(() => checkConformanceCase(createEvalExecutor(), c, 0)).not.toThrow();
  });

  it("a state that is not written back (no donation) fails the state case", () => {
    const exec = faulty((p) => ({
      run: (st?: StateSet) => {
        const saved = st === undefined ? null : [...p.schema.states.keys()].map((k) => [k, st.read(k)] as const);
        p.run(st);
        if (saved !== null) for (const [k, v] of saved) st!.write(k, v);
      },
    }));
    expect(() => checkConformanceCase(exec, find("state"), 0)).toThrow();
  });

  it("an output perturbed by 1e-4 relative fails at tolerance 1e-5", () => {
    const exec = faulty((p) => ({
      readOutput: (name, into) => {
        const out = p.readOutput(name, into);
        if (out instanceof Float32Array) out[0] = out[0]! + 1e-4 * Math.max(1, Math.abs(out[0]!));
        return out;
      },
    }));
    expect(() => checkConformanceCase(exec, find("matmul"), 1e-5)).toThrow();
  });

  it("slots frozen after the first step fail the gather case", () => {
    let frozen = false;
    const exec = faulty((p) => ({
      writeSlot: (k, d) => {
        if (!frozen) p.writeSlot(k, d);
      },
      run: (st?: StateSet) => {
        p.run(st);
        frozen = true;
      },
    }));
    expect(() => checkConformanceCase(exec, find("gather"), 0)).toThrow();
  });

  it("relativeError scales by the oracle's magnitude and treats matching infinities as equal", () => {
    expect(relativeError([1, 2, 100], [1, 2, 101])).toBeCloseTo(1 / 101, 12);
    expect(relativeError([-Infinity, 0.5], [-Infinity, 0.5])).toBe(0);
    expect(relativeError([Infinity], [1])).toBe(Infinity);
    expect(relativeError([1], [1, 2])).toBe(Infinity);
  });
});
