// The API routes: each request names its model (`model`), which routes it to that model's engine and scheduler,
// held (never unloaded) until the answer ends; /v1/models lists every served model, loaded or not (decision 2705).
import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { ApiError } from "../errors.js";
import { detokenize, embeddings, tokenize } from "./embeddings.js";
import type { PlacementSummary } from "./engine.js";
import { countTokens, planMessages } from "./messages.js";
import { respondMessages } from "./messages-respond.js";
import { countTokensBody, messagesBody, type CountTokensBody, type MessagesBody } from "./messages-schema.js";
import type { ModelLease, ModelPool } from "./model-pool.js";
import { planChat, planCompletion, type PlannedRequest } from "./requests.js";
import { respond } from "./respond.js";
import { chatRenderer, completionRenderer } from "./responses.js";
import {
  chatBody,
  completionBody,
  detokenizeBody,
  embeddingsBody,
  placeBody,
  tokenizeBody,
  type ChatBody,
  type CompletionBody,
  type DetokenizeBody,
  type EmbeddingsBody,
  type TokenizeBody,
} from "./schemas.js";

/** What the routes need from the server. */
export interface RouteContext {
  /** The served models. */
  readonly pool: ModelPool;
  /** Unix seconds the server was made (/v1/models `created`). */
  readonly created: number;
  /** Most generations a model's queue holds. */
  readonly maxQueue: number;
}

/** Adds the API routes (OpenAI's, Anthropic's, llama-server's tokenizer routes and the admin routes) to `app`. */
export function registerRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { pool, created, maxQueue } = ctx;
  const several = pool.models.length > 1;
  /**
   * Runs `fn` with the model `name` held (loaded first if needed); a route without a `model` field (/tokenize,
   * /detokenize, /admin/place) takes the only model, or needs one named when several are served.
   */
  const withModel = async <T>(name: string | undefined, fn: (m: ModelLease) => Promise<T>): Promise<T> => {
    if (name === undefined && several)
      throw new ApiError(
        400,
        "invalid_request",
        `model is required: this server serves ${pool.models.map((m) => `'${m.id}'`).join(", ")}`,
        "model",
      );
    const lease = await pool.acquire(name ?? pool.models[0]!.id);
    try {
      return await fn(lease);
    } finally {
      lease.release();
    }
  };
  /** A request with more generations than the queue holds can never run: a 400 naming n (or prompt), not a 429. */
  const fitsQueue = (plan: PlannedRequest, n: number | null | undefined): void => {
    const g = plan.generations.length;
    if (g <= maxQueue) return;
    const param = (n ?? 1) > 1 ? "n" : "prompt";
    throw new ApiError(
      400,
      "too_many_generations",
      `the request asks for ${g} generations (prompts x n) but this server queues at most ${maxQueue} at once; send fewer prompts or a smaller n`,
      param,
    );
  };
  const modelEntry = (id: string) => {
    const m = pool.models.find((x) => x.id === id)!;
    const engine = pool.loaded.find((x) => x.id === id)?.engine;
    const context = engine?.context ?? m.context;
    return {
      id,
      object: "model",
      created,
      owned_by: "poot",
      ...(context === undefined ? {} : { max_model_len: context }),
      ...(several ? { loaded: engine !== undefined } : {}),
    };
  };

  app.get("/v1/models", async () => ({ object: "list", data: pool.models.map((m) => modelEntry(m.id)) }));
  app.get<{ Params: { id: string } }>("/v1/models/:id", async (req) => modelEntry(pool.resolve(req.params.id).id));
  app.post<{ Body: CompletionBody }>("/v1/completions", { schema: { body: completionBody } }, async (req, reply) =>
    withModel(req.body.model, async ({ id, engine, scheduler }) => {
      const plan = await planCompletion(engine, req.body);
      fitsQueue(plan, req.body.n);
      const header = { id: `cmpl-${randomUUID()}`, created: Math.floor(Date.now() / 1000), model: id };
      await respond(
        scheduler,
        plan,
        completionRenderer(engine, header, req.body.logprobs ?? null, plan.echo, plan.echoLogprobs),
        reply,
      );
    }),
  );
  app.post<{ Body: ChatBody }>("/v1/chat/completions", { schema: { body: chatBody } }, async (req, reply) =>
    withModel(req.body.model, async ({ id, engine, scheduler }) => {
      const plan = await planChat(engine, req.body);
      fitsQueue(plan, req.body.n);
      const header = { id: `chatcmpl-${randomUUID()}`, created: Math.floor(Date.now() / 1000), model: id };
      await respond(scheduler, plan, chatRenderer(engine, header, plan.generations[0]!.logprobs, plan.output), reply);
    }),
  );
  app.post<{ Body: EmbeddingsBody }>("/v1/embeddings", { schema: { body: embeddingsBody } }, async (req) =>
    withModel(req.body.model, ({ id, engine }) => embeddings(engine, req.body, id)),
  );
  app.post<{ Body: MessagesBody }>("/v1/messages", { schema: { body: messagesBody } }, async (req, reply) =>
    withModel(req.body.model, async ({ id, engine, scheduler }) => {
      const plan = await planMessages(engine, req.body);
      await respondMessages(engine, scheduler, id, req.body, plan, reply);
    }),
  );
  app.post<{ Body: CountTokensBody }>("/v1/messages/count_tokens", { schema: { body: countTokensBody } }, async (req) =>
    withModel(req.body.model, ({ engine }) => countTokens(engine, req.body)),
  );
  app.post<{ Body: TokenizeBody }>("/tokenize", { schema: { body: tokenizeBody } }, async (req) =>
    withModel(req.body.model, ({ engine }) => tokenize(engine, req.body)),
  );
  app.post<{ Body: DetokenizeBody }>("/detokenize", { schema: { body: detokenizeBody } }, async (req) =>
    withModel(req.body.model, async ({ engine }) => detokenize(engine, req.body)),
  );

  // Admin (decision 1707): where the blocks are, and moving them between steps. Behind the same auth hook as the
  // API (an API key, when set, is required); a bad placement is a one-line 400 and moves nothing.
  const placementBody = (p: PlacementSummary) => ({
    place: p.place,
    units_per_token: p.unitsPerToken,
    handoffs_per_token: p.handoffsPerToken,
    weight_bytes_by_device: p.weightBytesByDevice,
    relocations: p.relocations,
  });
  const noBlocks = () =>
    new ApiError(
      400,
      "invalid_placement",
      "this server runs the model as one program: start poot serve with --place or --gpu-layers to relocate blocks",
      "place",
    );
  app.get<{ Querystring: { model?: string } }>("/admin/place", async (req) =>
    withModel(req.query.model, async ({ engine }) => {
      const p = (await engine.placement?.()) ?? null;
      if (p === null) throw noBlocks();
      return placementBody(p);
    }),
  );
  app.post<{ Body: { place: string; model?: string } }>("/admin/place", { schema: { body: placeBody } }, async (req) =>
    withModel(req.body.model, async ({ engine }) => {
      if (engine.relocate === undefined) throw noBlocks();
      // The engine moves blocks between steps: the scheduler's steps run on this thread (or answer in turn).
      const r = await engine.relocate(req.body.place);
      if ("error" in r) throw new ApiError(400, "invalid_placement", r.error, "place");
      return placementBody(r.placement);
    }),
  );
}
