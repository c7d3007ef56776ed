// Every fixtures/hf family on the wgpu backend (lavapipe in CI): see gpu-fixtures.ts.
import { fixtureSuite } from "./gpu-fixtures.js";

await fixtureSuite("wgpu");
