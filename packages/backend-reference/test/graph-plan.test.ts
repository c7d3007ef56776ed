// graph-plan Programs on the eval executor: each conformance graph compiled for several targets (fused
// regions, composite ops) is staged as it is — a Program has the CompiledGraph shape — and every step's
// outputs and State equal graph-ir's `evaluate` of the uncompiled graph.
import { createEvalExecutor } from "@poot/backend-reference";
import { conformanceCases, relativeError } from "@poot/executor/conformance";
import { evaluate, type HostData } from "@poot/graph-ir";
import { compile, defaultTarget } from "@poot/graph-plan";
import { describe, expect, it } from "vitest";

describe("compiled programs on the eval executor", () => {
  for (const kind of ["cpu", "cuda", "wgpu"] as const) {
    it(`every conformance graph compiled for ${kind} matches evaluate of the source graph`, () => {
      for (const c of conformanceCases("bf16")) {
        const program = compile(c.graph, defaultTarget(kind));
        for (const foldWeights of [true, false]) {
          const exec = createEvalExecutor({ foldWeights });
          exec.bindWeights((key) => c.weights[key]!);
          const prog = exec.stage(program, { name: c.name });
          const st = c.graph.states.length > 0 ? prog.createState() : undefined;
          let oracle: Record<string, HostData> = Object.fromEntries(
            c.graph.states.map((s) => [
              s.key,
              new Float64Array(c.graph.values[s.input]!.shape.reduce((a, d) => a * d, 1)),
            ]),
          );
          for (const slots of c.steps) {
            for (const [k, v] of Object.entries(slots)) prog.writeSlot(k, v);
            prog.run(st);
            const r = evaluate(c.graph, { consts: c.weights, slots, state: oracle });
            for (const o of c.graph.outputs)
              expect(
                relativeError(prog.readOutput(o.name), r.outputs[o.name]!.data),
                `${kind} ${c.name} ${o.name}`,
              ).toBeLessThanOrEqual(1e-6);
            for (const s of c.graph.states)
              expect(
                relativeError(st!.read(s.key), r.state[s.key]!.data),
                `${kind} ${c.name} state ${s.key}`,
              ).toBeLessThanOrEqual(1e-6);
            oracle = Object.fromEntries(Object.entries(r.state).map(([k, t]) => [k, t.data]));
          }
          exec.dispose();
        }
      }
    });
  }
});
