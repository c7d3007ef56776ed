// Executor modules of the engine-worker tests. The engine worker thread imports a module and calls one of its
// exports to make executors (functions cannot cross into a thread): the real CPU and eval backends, and eval
// executors with a planted failure at a given program run (a step that throws, or an uncaught error that kills the
// worker thread, as a crashing native backend would).
import { createCpuExecutor } from "@poot/backend-cpu";
import { createEvalExecutor } from "@poot/backend-reference";

/** The cpu and eval backends by name. */
export function executorFactory() {
  return (name) => {
    if (name === "cpu") return createCpuExecutor();
    if (name === "eval") return createEvalExecutor();
    throw new Error(`unknown backend "${name}"`);
  };
}

/** An eval executor for every device name (placement tests name their devices "a", "b", ...). */
export function namedEvalFactory() {
  return () => createEvalExecutor();
}

/** An executor that calls `onRun(n)` before its programs' n-th run (or replay), counting from 1. */
function counted(executor, onRun) {
  let runs = 0;
  const bound = (target, value) => (typeof value === "function" ? value.bind(target) : value);
  return new Proxy(executor, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key !== "stage") return bound(target, value);
      return (...args) =>
        new Proxy(value.apply(target, args), {
          get(program, k) {
            const v = Reflect.get(program, k);
            if (k !== "run" && k !== "replay") return bound(program, v);
            return (...a) => {
              onRun(++runs);
              return v.apply(program, a);
            };
          },
        });
    },
  });
}

/** Eval executors whose 4th program run throws (once): that step's requests fail, the server stays up. */
export function failingStepFactory() {
  return () =>
    counted(createEvalExecutor(), (n) => {
      if (n === 4) throw new Error("planted step failure");
    });
}

/** Eval executors whose 4th program run throws an uncaught error on the worker thread, which ends it. */
export function crashingFactory() {
  return () =>
    counted(createEvalExecutor(), (n) => {
      if (n === 4)
        setImmediate(() => {
          throw new Error("planted worker crash");
        });
    });
}

/**
 * An eval executor whose every program run (or replay) first sleeps `ms` milliseconds: a generation that is still
 * running while a test acts on it, however fast the machine (the event loop serves requests between steps).
 */
export function pacedEvalExecutor(ms) {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  return counted(createEvalExecutor(), () => Atomics.wait(cell, 0, 0, ms));
}

/** Eval executors that take 1.5 s of CPU on the thread making them: a model slow to load. */
export function slowLoadFactory() {
  return () => {
    const end = performance.now() + 1500;
    while (performance.now() < end);
    return createEvalExecutor();
  };
}

/** A cpu executor whose every program run (or replay) first sleeps `ms` milliseconds: a step as long as a large model's. */
export function pacedCpuExecutor(ms) {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  return counted(createCpuExecutor(), () => Atomics.wait(cell, 0, 0, ms));
}
