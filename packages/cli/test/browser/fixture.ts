// What the browser page computes for one fixture family, fetched from the test's server: the model (config.json +
// model.safetensors) and the ids to feed (reference.json). The comparison with the reference happens in Node.

import { LoadedModel, parseHFConfig, safetensorsFromBytes } from "@poot/models";

/** The fixture as the page sees it. */
export interface PageFixture {
  readonly model: LoadedModel;
  readonly promptIds: number[];
  readonly greedyIds: number[];
}

/** What a backend run posts back: logits rows (row r = logits after the first r + 1 tokens fed) and greedy ids. */
export interface PageRun {
  readonly backend: "cpu" | "wgpu";
  readonly device: string;
  /** Rows of logits, each `[V]`, and the token position each belongs to. */
  readonly rows: { readonly position: number; readonly logits: Float32Array }[];
  /** argmax of the rows after the prompt and after each fed greedy id. */
  readonly ids: number[];
}

/** Fetches `/fixture/*` and opens the model from its bytes. */
export async function loadFixture(): Promise<PageFixture> {
  const get = async (name: string): Promise<Response> => {
    const r = await fetch(`/fixture/${name}`);
    if (!r.ok) throw new Error(`GET /fixture/${name}: ${r.status}`);
    return r;
  };
  const config = parseHFConfig(await (await get("config.json")).json(), "config.json");
  const bytes = new Uint8Array(await (await get("model.safetensors")).arrayBuffer());
  const ref = (await (await get("reference.json")).json()) as { prompt_ids: number[]; greedy_ids: number[] };
  return {
    model: LoadedModel.fromCheckpoint(config, safetensorsFromBytes(bytes, "model.safetensors")),
    promptIds: ref.prompt_ids,
    greedyIds: ref.greedy_ids,
  };
}

/** Index of the largest value. */
export function argmax(a: Float32Array): number {
  let b = 0;
  for (let i = 1; i < a.length; i++) if (a[i]! > a[b]!) b = i;
  return b;
}
