// Every fixtures/hf family on the rocm backend: see gpu-fixtures.ts. Runs where a HIP runtime and a supported AMD GPU
// (gfx90a, gfx942, gfx1100) exist; skipped with the reason elsewhere. It has never run: no AMD GPU is reachable here.
import { fixtureSuite } from "./gpu-fixtures.js";

await fixtureSuite("rocm");
