// compile: validate, run the fixed pass pipeline over one draft, validate the result, then plan every
// equation for the target. The graph is never mutated.

import { GraphError, validateGraph, type Graph } from "@poot/graph-ir";
import { PLAN_OPS } from "./composite/table.js";
import { Draft } from "./draft.js";
import { PlanError } from "./errors.js";
import { resolveOptions, type CompileOptions } from "./options.js";
import { enabledPasses } from "./passes/pipeline.js";
import { planBuffers, slotSchema } from "./plan/buffers.js";
import { layouts } from "./plan/layout.js";
import { planGraph, readersOf } from "./plan/planner.js";
import { Program } from "./program.js";
import { runPass, type Decline, type NumericalDecline, type PassReport } from "./rules.js";
import { makeTarget, type Target } from "./target.js";

/** Compiles a primitive graph for a target into a Program. */
export function compile(graph: Graph, target: Target, options: CompileOptions = {}): Program {
  const t0 = performance.now();
  const opts = resolveOptions(options);
  makeTarget(target);
  try {
    validateGraph(graph, { ops: PLAN_OPS });
  } catch (e) {
    if (e instanceof GraphError)
      throw new PlanError("invalid-graph", e.message, {
        ...(e.context.eqn === undefined ? {} : { eqn: e.context.eqn }),
        ...(e.context.op === undefined ? {} : { op: e.context.op }),
      });
    throw e;
  }
  const draft = new Draft(graph, PLAN_OPS);
  const reports: PassReport[] = [];
  const declines: Decline[] = [];
  const seen = new Set<string>();
  const numericalDeclines: NumericalDecline[] = [];
  const decline = (d: Decline): void => {
    // Sweeps revisit equations; report each near-match once.
    const key = `${d.pattern}:${d.value}:${d.check}`;
    if (!seen.has(key)) {
      seen.add(key);
      declines.push(d);
    }
  };
  for (const pass of enabledPasses(opts)) {
    reports.push(runPass(pass, { draft, target, options: opts, decline, numericalDeclines }));
    if (opts.checkPasses) validateGraph(draft.toGraph().graph, { ops: PLAN_OPS });
  }
  const { graph: optimized, valueMap } = draft.toGraph();
  validateGraph(optimized, { ops: PLAN_OPS });
  const plans = planGraph(optimized, target, opts, PLAN_OPS);
  const lay = layouts(optimized, readersOf(optimized));
  const roots = new Map([...lay].map(([v, a]) => [v, a.root]));
  const alignment = target.kind === "aie" ? 64 : target.caps.bindingAlignment;
  const buffers = planBuffers(optimized, plans, roots, Math.max(4, alignment));
  return new Program({
    graph: optimized,
    source: graph,
    target,
    valueMap,
    compileMs: performance.now() - t0,
    reports,
    declines,
    numericalDeclines,
    plans,
    buffers,
    slots: slotSchema(optimized),
  });
}
