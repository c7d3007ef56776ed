// llama.cpp's row order of Q and K projection weights for the `llama` architecture in GGUF files.
// convert_hf_to_gguf interleaves the two rotary halves of each head; these helpers map between the orders.

/**
 * For a Q or K weight with `nHead` heads of `headDim` rows each: `order[g]` is the HF (PyTorch) row stored
 * at GGUF row `g`. GGUF row h·hd + 2j + t holds HF row h·hd + t·hd/2 + j (t ∈ {0,1}, j < hd/2).
 */
export function llamaQKRowOrder(nHead: number, headDim: number): Int32Array {
  const half = headDim / 2;
  const order = new Int32Array(nHead * headDim);
  for (let h = 0; h < nHead; h++) {
    for (let j = 0; j < half; j++) {
      for (let t = 0; t < 2; t++) order[h * headDim + 2 * j + t] = h * headDim + t * half + j;
    }
  }
  return order;
}

/**
 * Reorders the rows of a GGUF `llama` Q/K weight (row-major [nHead·headDim, cols], any element type,
 * including packed rows of `rowBytes` bytes) back to Hugging Face order.
 */
export function unpermuteLlamaQK<T extends Float32Array | Uint8Array>(
  data: T,
  nHead: number,
  headDim: number,
  rowLength: number,
): T {
  const order = llamaQKRowOrder(nHead, headDim);
  const out = new (data.constructor as { new (n: number): T })(data.length);
  for (let g = 0; g < order.length; g++)
    out.set(data.subarray(g * rowLength, (g + 1) * rowLength), order[g]! * rowLength);
  return out;
}
