// Greedy decoding in launches of several steps (decision 2201): on an executor with a device greedy loop (CUDA) the
// argmax and the next step's inputs stay on the device and the host reads ids a launch behind; stop conditions are
// checked as ids arrive and the session is rolled back to exactly what a step-by-step loop would hold. The host
// loop here has the same launch/read shape over plain steps, as the reference the device loop is tested against
// and the path of every other executor.
import type { GreedyLoop, GreedyLoopOptions, StagedProgram, StateSet } from "@poot/executor";
// The argmax the greedy loops use: the device kernel's semantics (`greedy_next`), defined once beside it.
import { greedyArgmax } from "@poot/kernelgen";
import { RuntimeError } from "./errors.js";

/** Options of {@link Engine.greedy}. */
export interface GreedyOptions {
  /**
   * Called with each id in order (and its index); true stops after it (it is returned, not committed). The device
   * may have run a few steps past it: they are rolled back.
   */
  readonly stop?: (id: number, index: number) => boolean;
}

/**
 * A greedy loop on the host with the device loop's shape: a launch runs `tokensPerLaunch` plain steps, each
 * writing the next step's `ids`, `pos` and `slot_map` slots from the argmax and the page table. `pages` returns the
 * sequence's page numbers (the device loop reads them from the `page_table` slot).
 */
export function hostGreedyLoop(
  program: StagedProgram,
  state: StateSet,
  options: GreedyLoopOptions,
  pages: () => readonly number[],
): GreedyLoop {
  const K = options.tokensPerLaunch;
  const done: Int32Array[] = [];
  let pos = 0;
  return {
    tokensPerLaunch: K,
    maxInFlight: 1,
    begin(p) {
      pos = p;
      done.length = 0;
    },
    launch() {
      const ids = new Int32Array(K);
      for (let j = 0; j < K; j++) {
        program.run(state);
        const id = greedyArgmax(program.readOutput(options.logits) as Float32Array);
        ids[j] = id;
        pos++;
        const table = pages();
        const page = table[Math.min(Math.floor(pos / options.pageSize), table.length - 1)]!;
        program.writeSlot("ids", [Math.max(id, 0)]);
        program.writeSlot("pos", [pos]);
        program.writeSlot("slot_map", [page * options.pageSize + (pos % options.pageSize)]);
      }
      done.push(ids);
    },
    read(i) {
      const ids = done[i];
      if (ids === undefined) throw new RuntimeError("bad-tokens", `greedy loop read of launch ${i} before it ran`);
      return ids;
    },
    dispose() {},
  };
}
