# Export side of the demo model's training run: writes the Hugging Face folder (bf16 weights), reloads
# it with transformers to record reference logits, generates samples and draws the loss curve.
"""Imported by train.py; each function is called inside its own try block there."""
import copy
import json
import os

from chat_data import CHAT_TEMPLATE, SPECIALS

# Fixed prompts whose logits are recorded for poot's check against transformers.
REF_PROMPT = "The old man looked at the sea and said"
REF_CHAT = [{"role": "user", "content": "Tell me a fortune about computers."}]
GREEDY_TOKENS = 24
SAMPLE_PROMPTS = ["The meaning of life is", "In the beginning", "A programmer walks into a bar", "Love is"]
SAMPLE_CHATS = ["Tell me a fortune about computers.", "Say something about cats.",
                "Read Psalms chapter 23.", "Give me a fortune cookie."]
GEN = {"do_sample": True, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "max_new_tokens": 120}


def export_folder(model, tok, hf_dir, ctx, say):
    """Writes config, bf16 safetensors, generation config and tokenizer files into `hf_dir`."""
    import torch
    from transformers import GenerationConfig
    # bf16 storage halves the file (the issue caps it at 20 MB); poot widens bf16 to f32 on read, and the
    # reference logits below come from these very bf16 values, so the check is exact-input.
    m = copy.deepcopy(model).to(torch.bfloat16)
    m.config.dtype = torch.bfloat16
    m.save_pretrained(hf_dir)
    gc = GenerationConfig(bos_token_id=0, eos_token_id=1, pad_token_id=1, **GEN)
    gc.save_pretrained(hf_dir)
    tok.save(os.path.join(hf_dir, "tokenizer.json"))
    tc = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": SPECIALS[0], "eos_token": SPECIALS[1], "pad_token": SPECIALS[1], "unk_token": None,
        "add_bos_token": True, "add_eos_token": False, "clean_up_tokenization_spaces": False,
        "model_max_length": ctx, "chat_template": CHAT_TEMPLATE,
        "added_tokens_decoder": {str(i): {"content": s, "lstrip": False, "rstrip": False, "normalized": False,
                                          "single_word": False, "special": True} for i, s in enumerate(SPECIALS)},
    }
    with open(os.path.join(hf_dir, "tokenizer_config.json"), "w") as f:
        json.dump(tc, f, indent=1, ensure_ascii=False)
    # save_pretrained may also write chat_template.jinja or special_tokens_map.json; the template lives in
    # tokenizer_config.json only, so a loader reading either file sees one source of truth.
    for extra in ("chat_template.jinja", "chat_template.json"):
        p = os.path.join(hf_dir, extra)
        if os.path.exists(p):
            os.remove(p)
    for name in sorted(os.listdir(hf_dir)):
        say("exported", name, os.path.getsize(os.path.join(hf_dir, name)), "bytes")


def _rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


def reference_check(model, hf_dir, work, say, summary):
    """Reloads `hf_dir` with Auto classes (float32 and float64, eager attention, CPU) and records logits."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tk = AutoTokenizer.from_pretrained(hf_dir)
    ids = tk(REF_PROMPT)["input_ids"]
    chat_text = tk.apply_chat_template(REF_CHAT, add_generation_prompt=True, tokenize=False)
    chat_ids = tk(chat_text, add_special_tokens=False)["input_ids"]
    say("reference prompt ids", ids, "chat text", repr(chat_text), "chat ids", chat_ids)
    assert ids[0] == 0 and chat_ids[0] == 0 and chat_ids[-1] == 3, "bos / template tokens not where expected"
    m32 = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32, attn_implementation="eager").eval()
    x = torch.tensor([ids])
    xc = torch.tensor([chat_ids])
    with torch.no_grad():
        l32 = m32(x, use_cache=False).logits[0]
        mem = model.eval()(x, use_cache=False).logits[0]
        gen = m32.generate(x, max_new_tokens=GREEDY_TOKENS, do_sample=False, use_cache=True, pad_token_id=1)
        gen_c = m32.generate(xc, max_new_tokens=GREEDY_TOKENS, do_sample=False, use_cache=True, pad_token_id=1)
        m64 = m32.double()
        l64 = m64(x, use_cache=False).logits[0]
        full64 = m64(gen, use_cache=False).logits[0]
        chat64 = m64(xc, use_cache=False).logits[0]
    greedy = gen[0, len(ids):].tolist()
    greedy_c = gen_c[0, len(chat_ids):].tolist()
    # The KV-cache greedy path must agree with the one-pass float64 argmax (same weights, same ids).
    onepass = full64[len(ids) - 1:-1].argmax(-1).tolist()
    checks = {
        "reload_f32_vs_trained_model_rel": _rel(l32.double(), mem.double()),
        "f32_vs_f64_rel": _rel(l32.double(), l64),
        "greedy_matches_onepass_f64": onepass == greedy,
    }
    say("reference checks", checks)
    save_file({"prompt_logits": l64.float().contiguous(), "full_logits": full64.float().contiguous(),
               "chat_logits": chat64.float().contiguous()}, os.path.join(work, "reference.safetensors"))
    ref = {"prompt": REF_PROMPT, "prompt_ids": ids, "greedy_ids": greedy,
           "greedy_text": tk.decode(greedy), "chat_messages": REF_CHAT, "chat_text": chat_text,
           "chat_ids": chat_ids, "chat_greedy_ids": greedy_c, "chat_greedy_text": tk.decode(greedy_c),
           "checks": checks,
           "reference": "float64 CPU forward (eager attention) of model.safetensors (bf16 values widened)",
           "prompt_logits": "[T, V] logits of prompt_ids", "full_logits": "[T+G, V] logits of prompt + greedy",
           "chat_logits": "[Tc, V] logits of chat_ids"}
    with open(os.path.join(work, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1, ensure_ascii=False)
    say("greedy:", repr(REF_PROMPT + ref["greedy_text"]))
    say("chat greedy:", repr(ref["chat_greedy_text"]))
    summary["reference"] = checks


def samples(hf_dir, work, say, summary):
    """Samples continuations and chat replies from the exported folder (CPU, fixed seeds)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tk = AutoTokenizer.from_pretrained(hf_dir)
    m = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()
    out = []
    jobs = [("text", p, tk(p)["input_ids"]) for p in SAMPLE_PROMPTS]
    for c in SAMPLE_CHATS:
        t = tk.apply_chat_template([{"role": "user", "content": c}], add_generation_prompt=True, tokenize=False)
        jobs.append(("chat", c, tk(t, add_special_tokens=False)["input_ids"]))
    for i, (kind, prompt, ids) in enumerate(jobs):
        torch.manual_seed(1000 + i)
        with torch.no_grad():
            g = m.generate(torch.tensor([ids]), pad_token_id=1, eos_token_id=1, **GEN)
        text = tk.decode(g[0, len(ids):].tolist(), skip_special_tokens=True)
        out.append({"kind": kind, "prompt": prompt, "seed": 1000 + i, "completion": text})
        say(f"sample [{kind}] {prompt!r} -> {text!r}")
    with open(os.path.join(work, "samples.json"), "w") as f:
        json.dump({"generation": GEN, "samples": out}, f, indent=1, ensure_ascii=False)
    summary["samples"] = len(out)


def plot_loss(rows, work, say):
    """Draws train and validation loss against tokens seen (needs matplotlib; loss.csv is always written)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tr = [(r[2] / 1e6, r[4]) for r in rows if r[4] != ""]
    va = [(r[2] / 1e6, r[5]) for r in rows if r[5] != ""]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    ax.plot([p[0] for p in tr], [p[1] for p in tr], label="train (mean over interval)", lw=1)
    ax.plot([p[0] for p in va], [p[1] for p in va], "o-", label="validation", ms=3)
    ax.set_xlabel("tokens seen (millions)")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title("poot demo model: training loss")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(work, "loss.png"))
    say("wrote loss.png")


if __name__ == "__main__":
    # Redraws loss.png from a run's loss.csv: python3 export.py loss.csv OUT_FOLDER
    import csv
    import sys
    with open(sys.argv[1]) as f:
        rd = list(csv.DictReader(f))
    rows = [(int(r["step"]), float(r["seconds"]), int(r["tokens"]), float(r["lr"]),
             float(r["train_loss"]) if r["train_loss"] else "", float(r["val_loss"]) if r["val_loss"] else "")
            for r in rd]
    plot_loss(rows, sys.argv[2], print)
