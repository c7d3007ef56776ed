"""Shared by make_fp8_static.py and make_fp8_dynamic.py: a safetensors reader, ml_dtypes' e4m3 rounding and the
float64 numpy llama3 forward (checked against transformers' float64 logits of hf/llama3 by each script)."""

import json
import struct

import ml_dtypes
import numpy as np

E4M3 = ml_dtypes.float8_e4m3fn
LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def read_st(file):
    """safetensors reader for F32, BF16 and F8_E4M3, widened to float64 (safetensors.numpy knows no bfloat16)."""
    with open(file, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8 : 8 + n])
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        raw = b[8 + n + v["data_offsets"][0] : 8 + n + v["data_offsets"][1]]
        if v["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif v["dtype"] == "F8_E4M3":
            a = np.frombuffer(raw, dtype=np.uint8).view(E4M3).astype(np.float64)
        elif v["dtype"] == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            raise ValueError(f"{k}: {v['dtype']}")
        out[k] = a.reshape(v["shape"])
    return out


def fp8(x):
    """e4m3fn value of x (float64 in, float64 out), saturated at ±448 first as vLLM's scaled_fp8_quant does."""
    return np.clip(x, -448.0, 448.0).astype(E4M3).astype(np.float64)


def forward(cfg, W, ids, act=None, observe=None):
    """float64 llama3 forward; `act(name, x)` transforms a linear's input (None: exact); `observe` sees it."""
    D, H, KV, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    T, eps, rp = len(ids), cfg["rms_norm_eps"], cfg["rope_parameters"]
    f32 = np.float32
    inv = []
    for j in range(hd // 2):
        # transformers computes the inverse frequencies (llama3 scaling) in float32 even for a float64 model.
        f = f32(1) / f32(f32(rp["rope_theta"]) ** f32(f32(2 * j) / f32(hd)))
        wl = 2 * np.pi / float(f)
        low = rp["original_max_position_embeddings"] / rp["low_freq_factor"]
        high = rp["original_max_position_embeddings"] / rp["high_freq_factor"]
        if wl < high:
            inv.append(f)
        elif wl > low:
            inv.append(f32(f / f32(rp["factor"])))
        else:
            sm = f32(f32(f32(rp["original_max_position_embeddings"]) / f32(wl)) - f32(rp["low_freq_factor"]))
            sm = f32(sm / f32(rp["high_freq_factor"] - rp["low_freq_factor"]))
            inv.append(f32(f32(f32(1) - sm) * f32(f / f32(rp["factor"]))) + f32(sm * f))
    ang = np.array([[f32(f32(t) * v) for v in inv] for t in range(T)], dtype=np.float32)
    cos, sin = np.cos(ang).astype(np.float64), np.sin(ang).astype(np.float64)

    def lin(x, name):
        if observe is not None:
            observe(name, x)
        if act is not None:
            x = act(name, x)
        return x @ W[name].T

    def norm(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    def rope(x):
        x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
        c, s = cos[:, None, :], sin[:, None, :]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)

    x = W["model.embed_tokens.weight"][ids]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        h = norm(x, W[p + "input_layernorm.weight"])
        q = rope(lin(h, p + "self_attn.q_proj.weight").reshape(T, H, hd))
        k = rope(lin(h, p + "self_attn.k_proj.weight").reshape(T, KV, hd))
        v = lin(h, p + "self_attn.v_proj.weight").reshape(T, KV, hd)
        k, v = np.repeat(k, H // KV, 1), np.repeat(v, H // KV, 1)
        s = np.einsum("thd,uhd->htu", q, k) / np.sqrt(hd) + mask
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        att = np.einsum("htu,uhd->thd", s, v).reshape(T, H * hd)
        x = x + lin(att, p + "self_attn.o_proj.weight")
        h = norm(x, W[p + "post_attention_layernorm.weight"])
        g, u = lin(h, p + "mlp.gate_proj.weight"), lin(h, p + "mlp.up_proj.weight")
        x = x + lin(g / (1 + np.exp(-g)) * u, p + "mlp.down_proj.weight")
    return norm(x, W["model.norm.weight"]) @ W.get("lm_head.weight", W["model.embed_tokens.weight"]).T


def greedy(cfg, W, prompt, n, act=None):
    ids = list(prompt)
    for _ in range(n):
        ids.append(int(np.argmax(forward(cfg, W, ids, act)[-1])))
    return ids[len(prompt) :]


def rel(a, ref):
    return float(np.abs(a - ref).max() / np.abs(ref).max())


