// Several models in one server (decision 2705): each loaded on its first request, one engine (and scheduler) per
// loaded model, unloaded least-recently-used when a load needs room under the memory budget, never under a request.
import { ApiError } from "../errors.js";
import type { BatchEngine, RemoteServeEngine } from "./engine.js";
import type { ServeScheduler } from "./scheduler-api.js";

/** A loaded model's engine and how to free it. */
export interface LoadedEngine {
  /** The engine: stepped on this thread ({@link BatchEngine}) or on its own worker ({@link RemoteServeEngine}). */
  readonly engine: BatchEngine | RemoteServeEngine;
  /** Frees the engine (and its executors or worker thread). */
  free(): Promise<void>;
}

/** One model a server serves: its id, aliases, the bytes it is charged, and how to load it. */
export interface ServedModel {
  /** The id clients name in `model` and `/v1/models` lists. */
  readonly id: string;
  /** Other names that route to this model (not listed by `/v1/models`). */
  readonly aliases?: readonly string[];
  /** Bytes charged against the memory budget while loaded (its weights as stored; decision 2705). */
  readonly bytes: number;
  /** KV capacity per sequence when known before loading (listed as `max_model_len` while unloaded). */
  readonly context?: number;
  /** Most sequences in one decode step of its scheduler (default: the server's `maxBatch`). */
  readonly maxBatch?: number;
  /** Loads the engine; a worker-backed load runs off the event loop. Rejects with a one-line message. */
  load(): Promise<LoadedEngine>;
}

/** A model in memory: its engine and scheduler. The same object for the whole time it stays loaded. */
export interface ModelInstance {
  /** The model's id. */
  readonly id: string;
  /** Its engine. */
  readonly engine: BatchEngine | RemoteServeEngine;
  /** Its scheduler. */
  readonly scheduler: ServeScheduler;
}

/** A model held for one request: not unloaded until `release()`. */
export interface ModelLease extends ModelInstance {
  /** Lets the model be unloaded again (idempotent). */
  release(): void;
}

/** What the pool reports: loads, unloads and load times (the /metrics model counters). */
export interface ModelPoolObserver {
  /** A model finished loading in `seconds`. */
  loaded(id: string, seconds: number): void;
  /** A model is about to be unloaded (its counters are read one last time). */
  unloading(instance: ModelInstance): void;
}

/** Options of {@link ModelPool}. */
export interface ModelPoolOptions {
  /** The models, in `/v1/models` order. */
  readonly models: readonly ServedModel[];
  /** Most bytes of loaded models at once (null = no limit). */
  readonly memoryBytes: number | null;
  /** Most ms a request waits for budget held by other models' requests before a 503 (0 = no limit). */
  readonly waitMs: number;
  /** Makes a loaded model's scheduler. */
  readonly scheduler: (model: ServedModel, engine: BatchEngine | RemoteServeEngine) => ServeScheduler;
  /** Receives loads and unloads. */
  readonly observer?: ModelPoolObserver;
}

interface Slot {
  readonly model: ServedModel;
  instance: (ModelInstance & { readonly free: () => Promise<void> }) | null;
  /** Requests holding it. */
  users: number;
  lastUsed: number;
  /** Being unloaded: no new lease. */
  leaving: boolean;
}

/** The served models, loaded on demand and unloaded least-recently-used under a memory budget. */
export class ModelPool {
  private readonly slots: Slot[];
  private readonly byName = new Map<string, Slot>();
  /** Loads and unloads run one at a time, in arrival order. */
  private chain: Promise<void> = Promise.resolve();
  /** Woken whenever a lease ends (a request waiting for budget looks again). */
  private released: (() => void)[] = [];
  private tick = 0;
  private closed = false;
  /** Set when the server drains: new leases get a 503, leases held run to their end. */
  draining = false;

  constructor(private readonly options: ModelPoolOptions) {
    this.slots = options.models.map((model) => ({ model, instance: null, users: 0, lastUsed: 0, leaving: false }));
    for (const slot of this.slots)
      for (const name of [slot.model.id, ...(slot.model.aliases ?? [])]) this.byName.set(name, slot);
  }

  /** The served models, in order. */
  get models(): readonly ServedModel[] {
    return this.options.models;
  }

  /** The models in memory now. */
  get loaded(): ModelInstance[] {
    return this.slots.flatMap((s) => (s.instance === null ? [] : [s.instance]));
  }

  /** Bytes charged for the models in memory now. */
  get usedBytes(): number {
    return this.slots.reduce((n, s) => n + (s.instance === null ? 0 : s.model.bytes), 0);
  }

  /** The model `name` (an id or an alias) names; a 404 `model_not_found` listing the served ids otherwise. */
  resolve(name: string): ServedModel {
    const slot = this.byName.get(name);
    if (slot !== undefined) return slot.model;
    const ids = this.options.models.map((m) => `'${m.id}'`).join(", ");
    throw new ApiError(
      404,
      "model_not_found",
      `The model '${name}' does not exist: this server serves ${ids}`,
      "model",
    );
  }

  /** Whether the model `id` is in memory. */
  isLoaded(id: string): boolean {
    return this.byName.get(id)?.instance !== null;
  }

  /** Adds a model already loaded by the caller (a single-model server's engine); it is never unloaded. */
  adopt(id: string, loaded: LoadedEngine): void {
    const slot = this.byName.get(id)!;
    slot.instance = this.instanceOf(slot, loaded);
    slot.users = Number.POSITIVE_INFINITY;
  }

  /**
   * Holds the model `name` for a request, loading it first when it is not in memory (after unloading idle models
   * least-recently-used until it fits the budget). 404 for an unknown name; 503 when the budget stays held by other
   * models' requests past the wait, while shutting down, or when the load fails.
   */
  async acquire(name: string): Promise<ModelLease> {
    const slot = this.byName.get(name) ?? this.byName.get(this.resolve(name).id)!;
    if (this.closed || this.draining) throw new ApiError(503, "server_shutting_down", "the server is shutting down");
    if (slot.instance === null || slot.leaving || this.failed(slot)) {
      const deadline = this.options.waitMs > 0 ? Date.now() + this.options.waitMs : Number.POSITIVE_INFINITY;
      // Serialized: the room check, the evictions and the load see one consistent pool.
      const run = this.chain.then(() => this.bringUp(slot, deadline));
      this.chain = run.catch(() => {});
      await run;
    } else slot.users++;
    slot.lastUsed = ++this.tick;
    const instance = slot.instance!;
    let held = true;
    return {
      ...instance,
      release: () => {
        if (!held) return;
        held = false;
        slot.users--;
        for (const wake of this.released.splice(0)) wake();
      },
    };
  }

  /** Refuses new leases, then unloads every model it loaded (adopted ones stay their owner's). */
  async close(): Promise<void> {
    this.closed = true;
    await this.chain;
    for (const slot of this.slots)
      if (slot.instance !== null && slot.users !== Number.POSITIVE_INFINITY) await this.unload(slot);
  }

  /** Whether `slot`'s engine failed (its worker died) and nothing holds it: the next request reloads it. */
  private failed(slot: Slot): boolean {
    return slot.instance !== null && slot.users === 0 && slot.instance.scheduler.refusing === "failed";
  }

  /** Loads `slot` (or finds it loaded) and counts the caller as a user, evicting or waiting for room first. */
  private async bringUp(slot: Slot, deadline: number): Promise<void> {
    if (this.failed(slot)) await this.unload(slot);
    if (slot.instance !== null) {
      slot.users++;
      return;
    }
    const budget = this.options.memoryBytes;
    while (budget !== null && this.usedBytes + slot.model.bytes > budget) {
      const idle = this.slots
        .filter((s) => s.instance !== null && s.users === 0)
        .sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (idle !== undefined) await this.unload(idle);
      else await this.waitForRelease(slot.model, deadline);
    }
    const t0 = performance.now();
    let loaded: LoadedEngine;
    try {
      loaded = await slot.model.load();
    } catch (err) {
      throw new ApiError(
        503,
        "model_load_failed",
        `the model '${slot.model.id}' failed to load: ${(err as Error).message}`,
      );
    }
    slot.instance = this.instanceOf(slot, loaded);
    slot.users++;
    this.options.observer?.loaded(slot.model.id, (performance.now() - t0) / 1000);
  }

  private instanceOf(slot: Slot, loaded: LoadedEngine): NonNullable<Slot["instance"]> {
    return {
      id: slot.model.id,
      engine: loaded.engine,
      scheduler: this.options.scheduler(slot.model, loaded.engine),
      free: () => loaded.free(),
    };
  }

  private async unload(slot: Slot): Promise<void> {
    const instance = slot.instance!;
    slot.leaving = true;
    this.options.observer?.unloading(instance);
    instance.scheduler.shutdown();
    try {
      await instance.free();
    } finally {
      slot.instance = null;
      slot.leaving = false;
    }
  }

  /** Resolves when a lease ends; a 503 with Retry-After when `deadline` passes first. */
  private waitForRelease(model: ServedModel, deadline: number): Promise<void> {
    if (this.closed) return Promise.reject(new ApiError(503, "server_shutting_down", "the server is shutting down"));
    const left = deadline - Date.now();
    const busy = this.slots.filter((s) => s.instance !== null && s.users > 0);
    const tooBig = (): ApiError => {
      // The earliest a running model is expected to finish its queue, from its scheduler's drain rate.
      const after = Math.max(1, Math.min(...busy.map((s) => s.instance!.scheduler.retryAfterSeconds(1))));
      return new ApiError(
        503,
        "model_busy",
        `the model '${model.id}' cannot be loaded now: the memory budget is held by models serving requests (${busy.map((s) => `'${s.model.id}'`).join(", ")}); retry later`,
        "model",
        { "retry-after": String(Number.isFinite(after) ? after : 1) },
      );
    };
    if (left <= 0) return Promise.reject(tooBig());
    return new Promise((resolve, reject) => {
      const timer = Number.isFinite(left) ? setTimeout(() => reject(tooBig()), left) : null;
      this.released.push(() => {
        if (timer !== null) clearTimeout(timer);
        resolve();
      });
    });
  }
}
