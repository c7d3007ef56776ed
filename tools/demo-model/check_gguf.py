#!/usr/bin/env python3
# Checks the demo GGUF against the transformers reference: a float64 numpy forward of the GGUF's weights
# with llama.cpp's conventions (interleaved RoPE pairs) must reproduce reference.safetensors' logits.
"""Usage: python3 check_gguf.py MODEL.gguf REFERENCE_DIR

REFERENCE_DIR holds reference.json and reference.safetensors written by train.py. Exits non-zero
when max |logit difference| / max |reference logit| exceeds 1e-6 (both sides are float64 forwards of
the same bf16 values, so only summation order differs) or the greedy argmax disagrees.
"""
import json
import os
import sys

import numpy as np

from to_gguf import bf16_bits_to_f32, read_safetensors


def load_gguf(path):
    import gguf
    r = gguf.GGUFReader(path)
    meta = {k: f.contents() for k, f in r.fields.items() if not k.startswith("tokenizer.ggml.")}
    ws = {}
    for t in r.tensors:
        d = np.asarray(t.data)
        if t.tensor_type == gguf.GGMLQuantizationType.BF16:
            # gguf's reader hands BF16 data back as raw bytes [rows, 2 * cols].
            d = bf16_bits_to_f32(np.ascontiguousarray(d).view(np.uint16))
        ws[t.name] = d.astype(np.float64)
    return meta, ws


def rope_interleaved(x, pos, base):
    # ggml's "normal" rope rotates adjacent pairs (x[2i], x[2i+1]) by pos * base^(-2i/d).
    d = x.shape[-1]
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = pos[:, None] * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


def forward(meta, ws, ids):
    p = "llama."
    L, nh, nkv = meta[p + "block_count"], meta[p + "attention.head_count"], meta[p + "attention.head_count_kv"]
    eps, base = meta[p + "attention.layer_norm_rms_epsilon"], meta[p + "rope.freq_base"]
    emb = ws["token_embd.weight"]
    T = len(ids)
    x = emb[ids]
    pos = np.arange(T, dtype=np.float64)

    def norm(v, w):
        return v / np.sqrt((v * v).mean(-1, keepdims=True) + eps) * w

    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(L):
        b = f"blk.{i}."
        h = norm(x, ws[b + "attn_norm.weight"])
        q = (h @ ws[b + "attn_q.weight"].T).reshape(T, nh, -1)
        k = (h @ ws[b + "attn_k.weight"].T).reshape(T, nkv, -1)
        v = (h @ ws[b + "attn_v.weight"].T).reshape(T, nkv, -1)
        hd = q.shape[-1]
        q, k = rope_interleaved(q, pos, base), rope_interleaved(k, pos, base)
        rep = nh // nkv
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
        s = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        o = np.einsum("hts,shd->thd", s, v).reshape(T, -1)
        x = x + o @ ws[b + "attn_output.weight"].T
        h = norm(x, ws[b + "ffn_norm.weight"])
        g = h @ ws[b + "ffn_gate.weight"].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ ws[b + "ffn_up.weight"].T)) @ ws[b + "ffn_down.weight"].T
    x = norm(x, ws["output_norm.weight"])
    out = ws.get("output.weight", emb)
    return x @ out.T


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    meta, ws = load_gguf(sys.argv[1])
    ref = json.load(open(os.path.join(sys.argv[2], "reference.json")))
    logits = read_safetensors(os.path.join(sys.argv[2], "reference.safetensors"))
    ok = True
    for key, ids in [("full_logits", ref["prompt_ids"] + ref["greedy_ids"]), ("chat_logits", ref["chat_ids"])]:
        want = logits[key][2].astype(np.float64)
        got = forward(meta, ws, np.array(ids))
        rel = float(np.abs(got - want).max() / np.abs(want).max())
        same = bool((got.argmax(-1) == want.argmax(-1)).all())
        print(f"{key}: {len(ids)} tokens, max|d|/max|ref| = {rel:.2e}, argmax identical: {same}")
        ok = ok and rel < 1e-6 and same
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
