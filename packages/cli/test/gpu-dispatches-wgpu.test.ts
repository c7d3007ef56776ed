// Dispatches per decode token on the wgpu backend equal `poot compile`'s prediction: see gpu-dispatches.ts.
import { dispatchSuite } from "./gpu-dispatches.js";

await dispatchSuite("wgpu");
