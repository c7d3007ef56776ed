// cpu + vulkan (lavapipe in CI): see blocks-split.ts.
import { splitSuite } from "./blocks-split.js";

await splitSuite("vulkan");
