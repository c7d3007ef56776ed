#!/usr/bin/env node
// pootc: kernel DSL sources -> .kir.json assets. Usage: pootc SRC_DIR --out ASSETS_DIR [--check]
import { pootcMain } from "../dist/pootc.js";

pootcMain(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
