// Dispatches per decode token on the vulkan backend equal `poot compile`'s prediction: see gpu-dispatches.ts.
import { dispatchSuite } from "./gpu-dispatches.js";

await dispatchSuite("vulkan");
