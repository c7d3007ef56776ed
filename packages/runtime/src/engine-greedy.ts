// Greedy decoding of one session (decision 2201): launches of several argmax steps through the executor's device
// loop (or its host-launches reference) where there is one, then single host steps for whatever is left.
import type { GreedyLoop } from "@poot/executor";
import type { Engine } from "./engine.js";
import { RuntimeError } from "./errors.js";
import { greedyArgmax } from "@poot/kernelgen";
import { hostGreedyLoop, type GreedyOptions } from "./greedy.js";
import type { Session } from "./session.js";

/** An engine's greedy decoding: its greedy loop (made once) and the session that loop is running for. */
export class EngineGreedy {
  /** The greedy loop of the single-token program, once made (null: none for this executor or model). */
  private loop: GreedyLoop | null | undefined = undefined;
  /** The session a greedy loop is running for (the host loop reads its pages). */
  private session: Session | null = null;

  /** @param engine - the engine whose programs, state and counters the loop uses. */
  constructor(private readonly engine: Engine) {}

  /** See {@link Engine.greedy}. */
  run(session: Session, first: number, count: number, options: GreedyOptions): number[] {
    const engine = this.engine,
      stats = engine.stats;
    if (!Number.isSafeInteger(count) || count < 0)
      throw new RuntimeError("bad-config", `greedy count must be a non-negative integer, got ${count}`, {
        param: "count",
        value: count,
      });
    if (session.queued.length > 0)
      throw new RuntimeError("bad-tokens", "greedy: the session has queued tokens; run them first", {
        session: session.id,
      });
    session.feed([first]);
    const out: number[] = [];
    const loop = count > 1 ? this.loopOf() : null;
    if (loop !== null) {
      const K = loop.tokensPerLaunch;
      const start = session.length;
      const launches = Math.min(Math.ceil(count / K), Math.floor((engine.context - start) / K));
      if (launches > 0) {
        const t0 = performance.now();
        session.grow(start + launches * K);
        const p = engine.decodeProgram(1);
        p.writeSlot("ids", [first]);
        p.writeSlot("pos", [start]);
        engine.writePaging(p, [{ session, start }], 1);
        this.session = session;
        loop.begin(start);
        let launched = 0,
          read = 0,
          stopped = false,
          bad = false;
        // Launches queued past a stop are not waited for: their steps write KV entries past the session's length
        // (in pages it held when they were queued), and later work on the stream runs after them.
        while (!stopped && read < launches) {
          while (launched < launches && launched - read < loop.maxInFlight) {
            loop.launch();
            launched++;
          }
          const ids = loop.read(read++);
          for (const id of ids) {
            if (id < 0) {
              bad = stopped = true;
              break;
            }
            out.push(id);
            if (options.stop?.(id, out.length - 1) === true || out.length === count) {
              stopped = true;
              break;
            }
          }
        }
        stats.greedyLaunches += launched;
        this.session = null;
        // Held: `first` and every id but the last (returned, not run); after a bad row, the token that produced it.
        const ran = bad ? [first, ...out] : [first, ...out.slice(0, -1)];
        stats.greedyRolledBack += launched * K - ran.length;
        session.settle(ran);
        stats.decodeTokens += out.length;
        stats.decodeMs += performance.now() - t0;
        if (bad) throw new RuntimeError("bad-logits", "no token has a finite logit", { session: session.id });
        if (stopped || out.length === count) return out;
        session.feed([out[out.length - 1]!]);
      }
    }
    // One host step at a time: every executor without a device loop, and what a device loop leaves at the context's end.
    while (out.length < count) {
      const logits = session.step();
      const id = greedyArgmax(logits);
      if (id < 0) throw new RuntimeError("bad-logits", "no token has a finite logit", { session: session.id });
      out.push(id);
      if (options.stop?.(id, out.length - 1) === true || out.length === count) break;
      session.feed([id]);
    }
    return out;
  }

  /** The greedy loop of the single-token decode program (made once), or null when steps run one at a time. */
  loopOf(): GreedyLoop | null {
    if (this.loop !== undefined) return this.loop;
    const engine = this.engine;
    const mode = engine.options.greedyLoop ?? "auto";
    const K = engine.options.greedyTokensPerLaunch ?? 8;
    if (!Number.isSafeInteger(K) || K < 1)
      throw new RuntimeError("bad-config", `greedyTokensPerLaunch must be a positive integer, got ${K}`, {
        param: "greedyTokensPerLaunch",
        value: K,
      });
    this.loop = null;
    if (mode === "steps" || engine.pipeline !== null || engine.needsLane()) return null;
    const p = engine.decodeProgram(1);
    const opts = { logits: "logits", tokensPerLaunch: K, pageSize: engine.paged.pageSize };
    if (mode === "host-launches") this.loop = hostGreedyLoop(p, engine.state(), opts, () => this.session?.pages ?? []);
    else this.loop = engine.executor.greedyLoop?.(p, engine.state(), opts) ?? null;
    return this.loop;
  }

  /** Disposes the greedy loop (a later run makes a new one). */
  dispose(): void {
    this.loop?.dispose();
    this.loop = undefined;
  }
}
