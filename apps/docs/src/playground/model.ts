// The demo model and its tokenizer, fetched from the site (public/generated/demo, copied at build time).

import { LoadedModel, Tokenizer, parseHFConfig, safetensorsFromBytes } from "@poot/models";

/** The model and tokenizer the playground runs. */
export interface DemoModel {
  readonly model: LoadedModel;
  readonly tokenizer: Tokenizer;
}

async function get(base: URL, name: string): Promise<Response> {
  const r = await fetch(new URL(name, base));
  if (!r.ok) throw new Error(`GET ${new URL(name, base).pathname}: HTTP ${r.status}`);
  return r;
}

/** Fetches the demo model's config, weights and tokenizer from `base` (the folder URL) and opens them. */
export async function loadDemo(base: URL): Promise<DemoModel> {
  const config = parseHFConfig(await (await get(base, "config.json")).json(), "config.json");
  const bytes = new Uint8Array(await (await get(base, "model.safetensors")).arrayBuffer());
  const tokenizer = new Tokenizer(
    await (await get(base, "tokenizer.json")).json(),
    (await (await get(base, "tokenizer_config.json")).json()) as Record<string, unknown>,
  );
  return { model: LoadedModel.fromCheckpoint(config, safetensorsFromBytes(bytes, "model.safetensors")), tokenizer };
}
