// /v1/embeddings, /tokenize and /detokenize: embeddings pool the model's final hidden state (after the final
// norm, the LM head's input) over the input's tokens, mean by default, L2-normalized unless `normalize: false`;
// the tokenizer endpoints take and give llama-server's shapes.
import { ApiError } from "../errors.js";
import type { ServeEngine } from "./engine.js";
import type { DetokenizeBody, EmbeddingsBody, TokenizeBody } from "./schemas.js";

/** The ids of each embeddings input (texts tokenized with BOS as the tokenizer adds it), each checked. */
async function inputsOf(engine: ServeEngine, input: EmbeddingsBody["input"]): Promise<number[][]> {
  const lists: number[][] =
    typeof input === "string"
      ? [await engine.encode(input, true)]
      : typeof input[0] === "string"
        ? await Promise.all((input as string[]).map((t) => engine.encode(t, true)))
        : typeof input[0] === "number"
          ? [input as number[]]
          : (input as number[][]);
  lists.forEach((ids, i) => {
    const param =
      lists.length === 1 && (typeof input === "string" || typeof input[0] === "number") ? "input" : `input[${i}]`;
    if (ids.length === 0) throw new ApiError(400, "invalid_value", `${param} has no tokens`, param);
    if (ids.length > engine.context)
      throw new ApiError(
        400,
        "context_length_exceeded",
        `This model's maximum context length is ${engine.context} tokens, but ${param} has ${ids.length} tokens.`,
        param,
      );
    const bad = ids.find((id) => id >= engine.vocabSize);
    if (bad !== undefined)
      throw new ApiError(
        400,
        "invalid_value",
        `${param} holds token id ${bad}, outside the vocabulary [0, ${engine.vocabSize})`,
        param,
      );
  });
  return lists;
}

/** Mean (or last-token) pooling of hidden rows [T, D], L2-normalized when asked (a zero vector stays zero). */
export function pool(rows: Float32Array, d: number, pooling: "mean" | "last", normalize: boolean): Float64Array {
  const t = rows.length / d;
  const out = new Float64Array(d);
  if (pooling === "last") for (let j = 0; j < d; j++) out[j] = rows[(t - 1) * d + j]!;
  else {
    for (let i = 0; i < t; i++) for (let j = 0; j < d; j++) out[j]! += rows[i * d + j]!;
    for (let j = 0; j < d; j++) out[j]! /= t;
  }
  if (normalize) {
    const norm = Math.sqrt(out.reduce((a, x) => a + x * x, 0));
    if (norm > 0) for (let j = 0; j < d; j++) out[j]! /= norm;
  }
  return out;
}

/** The /v1/embeddings response for `body`: one embedding per input, floats or base64 of little-endian float32. */
export async function embeddings(engine: ServeEngine, body: EmbeddingsBody, model: string): Promise<unknown> {
  if (body.dimensions !== undefined && body.dimensions !== engine.hiddenSize)
    throw new ApiError(
      400,
      "invalid_value",
      `dimensions must be this model's hidden size ${engine.hiddenSize} (it does not shorten embeddings), got ${body.dimensions}`,
      "dimensions",
    );
  const inputs = await inputsOf(engine, body.input);
  const d = engine.hiddenSize;
  const data: unknown[] = [];
  let tokens = 0;
  for (const [index, ids] of inputs.entries()) {
    tokens += ids.length;
    const v = pool(await engine.hidden(ids), d, body.pooling ?? "mean", body.normalize !== false);
    const embedding =
      body.encoding_format === "base64" ? Buffer.from(Float32Array.from(v).buffer).toString("base64") : Array.from(v);
    data.push({ object: "embedding", index, embedding });
  }
  return { object: "list", data, model, usage: { prompt_tokens: tokens, total_tokens: tokens } };
}

/** /tokenize: `{tokens: ids}`, or with `with_pieces` `{tokens: [{id, piece}]}` (each piece the token decoded alone). */
export async function tokenize(engine: ServeEngine, body: TokenizeBody): Promise<unknown> {
  const ids = await engine.encode(body.content, body.add_special === true);
  return { tokens: body.with_pieces === true ? ids.map((id) => ({ id, piece: engine.tokenText(id) })) : ids };
}

/** /detokenize: `{content}`, the text of the ids; an id outside the vocabulary is a 400 naming it. */
export function detokenize(engine: ServeEngine, body: DetokenizeBody): unknown {
  body.tokens.forEach((id, i) => {
    if (id >= engine.vocabSize)
      throw new ApiError(
        400,
        "invalid_value",
        `tokens[${i}] is ${id}, outside the vocabulary [0, ${engine.vocabSize})`,
        `tokens[${i}]`,
      );
  });
  return { content: engine.textOf(body.tokens) };
}
