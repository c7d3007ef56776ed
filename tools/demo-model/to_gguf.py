#!/usr/bin/env python3
# Converts the exported demo model folder (LlamaForCausalLM, bf16 safetensors, byte-level BPE
# tokenizer.json) into a BF16 GGUF with llama.cpp's own writer (the `gguf` package), then reads it back.
"""Usage: python3 to_gguf.py HF_DIR OUT.gguf

Needs numpy and gguf (pip install gguf numpy). Follows llama.cpp's convert_hf_to_gguf.py for the
llama architecture: tensor names, the Q/K row permutation, 1-D norm weights in F32, tokenizer.ggml.*
keys (model gpt2, pre llama-bpe, tokens, token types, merges, bos/eos, chat template). Tied
embeddings: no output.weight, llama.cpp reuses token_embd.
"""
import json
import os
import struct
import sys

import numpy as np


def read_safetensors(path):
    """Name -> (dtype string, shape, raw little-endian array): bf16 stays as uint16 bits."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            a, b = info["data_offsets"]
            f.seek(base + a)
            raw = f.read(b - a)
            dt = {"BF16": np.uint16, "F32": np.float32, "F16": np.float16}[info["dtype"]]
            out[name] = (info["dtype"], info["shape"], np.frombuffer(raw, dtype=dt).reshape(info["shape"]))
    return out


def bf16_bits_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def permute(w, n_head, n_head_kv):
    # llama.cpp's LlamaModel.permute: HF stores rotary halves [x0..x(d/2-1), y0..]; GGUF interleaves pairs.
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


HF_TO_GGUF = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def gguf_name(hf):
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    parts = hf.split(".")
    assert parts[0] == "model" and parts[1] == "layers", hf
    return f"blk.{parts[2]}." + HF_TO_GGUF[".".join(parts[3:])]


def convert(hf_dir, out_path):
    import gguf
    cfg = json.load(open(os.path.join(hf_dir, "config.json")))
    tok = json.load(open(os.path.join(hf_dir, "tokenizer.json")))
    tcfg = json.load(open(os.path.join(hf_dir, "tokenizer_config.json")))
    assert cfg["architectures"] == ["LlamaForCausalLM"], cfg["architectures"]
    assert cfg.get("rope_parameters", {}).get("rope_type", "default") == "default", "only plain RoPE"
    n_head, n_kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // n_head
    theta = cfg.get("rope_parameters", {}).get("rope_theta", cfg.get("rope_theta", 10000.0))

    w = gguf.GGUFWriter(out_path, "llama")
    w.add_name("poot-demo")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_rope_dimension_count(head_dim)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(float(theta))
    w.add_vocab_size(cfg["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)

    vocab = tok["model"]["vocab"]
    V = cfg["vocab_size"]
    tokens = [None] * V
    for t, i in vocab.items():
        tokens[i] = t
    specials = {a["id"] for a in tok.get("added_tokens", []) if a.get("special")}
    for a in tok.get("added_tokens", []):
        tokens[a["id"]] = a["content"]
    assert all(t is not None for t in tokens), "vocabulary ids are not contiguous"
    types = [gguf.TokenType.CONTROL if i in specials else gguf.TokenType.NORMAL for i in range(V)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(cfg["bos_token_id"])
    w.add_eos_token_id(cfg["eos_token_id"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(tcfg["chat_template"])

    tensors = read_safetensors(os.path.join(hf_dir, "model.safetensors"))
    written = {}
    for name in sorted(tensors, key=lambda n: (n.count("layers"), n)):
        dtype, shape, arr = tensors[name]
        if name == "lm_head.weight" and cfg.get("tie_word_embeddings"):
            continue
        g = gguf_name(name)
        if name.endswith("q_proj.weight"):
            arr = permute(arr, n_head, n_head)
        elif name.endswith("k_proj.weight"):
            arr = permute(arr, n_head, n_kv)
        arr = np.ascontiguousarray(arr)
        if len(shape) == 1:
            # llama.cpp keeps norm vectors in F32; bf16 -> f32 is exact.
            data = bf16_bits_to_f32(arr) if dtype == "BF16" else arr.astype(np.float32)
            w.add_tensor(g, data)
        elif dtype == "BF16":
            w.add_tensor(g, arr, raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            w.add_tensor(g, arr.astype(np.float32))
        written[g] = (name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return written


def verify(out_path, written):
    """Reads the file back with gguf's reader and compares every tensor's bytes to what was written."""
    import gguf
    r = gguf.GGUFReader(out_path)
    seen = 0
    for t in r.tensors:
        _hf, arr = written[t.name]
        got = np.asarray(t.data)
        want = arr if t.tensor_type == gguf.GGMLQuantizationType.BF16 else (
            bf16_bits_to_f32(arr) if arr.dtype == np.uint16 else arr)
        assert got.tobytes() == np.ascontiguousarray(want).tobytes(), t.name
        seen += 1
    assert seen == len(written), (seen, len(written))
    return seen


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    wr = convert(sys.argv[1], sys.argv[2])
    n = verify(sys.argv[2], wr)
    print(f"wrote {sys.argv[2]}: {os.path.getsize(sys.argv[2])} bytes, {n} tensors verified by read-back")
