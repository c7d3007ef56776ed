// prepack: copies the repository's models/demo (the files the loaders read) into model/ so the tarball carries
// the model; model/ is ignored by git (the repository keeps one copy, in models/demo).
import { cpSync, mkdirSync, rmSync } from "node:fs";

const FILES = [
  "config.json",
  "generation_config.json",
  "model.safetensors",
  "tokenizer.json",
  "tokenizer_config.json",
  "reference.json",
  "README.md",
];
const from = new URL("../../models/demo/", import.meta.url);
const to = new URL("./model/", import.meta.url);
rmSync(to, { recursive: true, force: true });
mkdirSync(to);
for (const f of FILES) cpSync(new URL(f, from), new URL(f, to));
