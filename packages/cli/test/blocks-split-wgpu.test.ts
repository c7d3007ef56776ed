// cpu + wgpu (Dawn on lavapipe in CI): see blocks-split.ts.
import { splitSuite } from "./blocks-split.js";

await splitSuite("wgpu");
