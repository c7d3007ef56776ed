// The issue #26 packed formats on the vulkan backend (lavapipe in CI): see gpu-formats.ts.
import { formatSuite } from "./gpu-formats.js";

await formatSuite("vulkan");
