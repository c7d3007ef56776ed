#!/usr/bin/env python3
# Trains poot's demo model (a small LlamaForCausalLM with its own byte-level BPE tokenizer) on the
# committed corpus, and exports a standard Hugging Face folder plus reference logits, in one tar.xz.
"""Usage (GPU machine, from the repo root or anywhere):

    python3 tools/demo-model/train.py --budget-s 300 --out "$OUT/demo.tar.xz"

Needs torch, transformers and tokenizers; matplotlib is optional (loss.png). Reads
tools/demo-model/data/corpus.jsonl.xz (made by prepare_corpus.sh). The tarball is written as soon as
the weights are exported and rewritten at the end, so a late failure still leaves the model in it.
"""
import argparse
import hashlib
import json
import lzma
import math
import os
import random
import sys
import tarfile
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from chat_data import CHAT_TEMPLATE, SPECIALS, chat_prompt  # noqa: E402

LOG = []


def say(*parts):
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    LOG.append(line)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="path of the tar.xz to write (its folder is created)")
    ap.add_argument("--corpus", default=os.path.join(HERE, "data", "corpus.jsonl.xz"))
    ap.add_argument("--budget-s", type=float, default=300.0, help="wall-clock cap on the training loop")
    ap.add_argument("--max-epochs", type=float, default=24.0,
                    help="passes over the training tokens; with the time cap, sets the cosine schedule's length")
    ap.add_argument("--max-steps", type=int, default=0, help="hard step cap (0 = none; for dry runs)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=768)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup-steps", type=int, default=150)
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--dropout", type=float, default=0.1, help="residual-branch dropout (training only)")
    ap.add_argument("--val-frac", type=float, default=0.02)
    ap.add_argument("--chat-frac", type=float, default=0.5, help="share of documents wrapped as a chat turn")
    ap.add_argument("--eval-every-s", type=float, default=5.0)
    ap.add_argument("--max-docs", type=int, default=0, help="use only the first N documents (dry runs)")
    return ap.parse_args(argv)


def load_docs(path, max_docs):
    docs = []
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            docs.append(json.loads(line))
            if max_docs and len(docs) >= max_docs:
                break
    return docs


def is_val(text, frac):
    # Split by a hash of the text so the split does not depend on document order or the seed.
    h = int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:8], 16)
    return (h % 10000) < frac * 10000


def train_tokenizer(texts, vocab):
    from tokenizers import Tokenizer, Regex, decoders, models, pre_tokenizers, processors, trainers
    # Llama 3's split regex, then GPT-2 byte-level mapping: every byte string is encodable.
    split = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(split), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=list(SPECIALS), min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    # encode(text) with special tokens on prepends <|bos|>, the way Llama 3's tokenizer.json does.
    tok.post_processor = processors.TemplateProcessing(
        single="<|bos|> $A", pair="<|bos|> $A <|bos|> $B", special_tokens=[("<|bos|>", tok.token_to_id("<|bos|>"))])
    for i, s in enumerate(SPECIALS):
        assert tok.token_to_id(s) == i, (s, tok.token_to_id(s))
    return tok


def build_stream(tok, docs, rng, chat_frac):
    texts = []
    for d in docs:
        if rng.random() < chat_frac:
            texts.append("<|user|>" + chat_prompt(d["source"], rng) + "<|assistant|>" + d["text"])
        else:
            texts.append(d["text"])
    order = list(range(len(texts)))
    rng.shuffle(order)
    encs = tok.encode_batch([texts[i] for i in order], add_special_tokens=False)
    ids = []
    for e in encs:
        ids.append(0)  # <|bos|>
        ids.extend(e.ids)
        ids.append(1)  # <|eos|>
    return ids


# The device brings back files of at most 16 MiB; stay a little under it.
TAR_LIMIT = 16_000_000
BULKY = ("state_dict.pt", "reference.safetensors")


def write_tar(out_path, folder):
    """Writes `folder` as demo/ into out_path (atomically); bulky extras move beside it if it is too big."""
    import shutil
    tmp = out_path + ".tmp"
    skip = set()
    for attempt in range(2):
        with tarfile.open(tmp, "w:xz", preset=6) as t:
            t.add(folder, arcname="demo", filter=lambda ti: None if os.path.basename(ti.name) in skip else ti)
        size = os.path.getsize(tmp)
        if size <= TAR_LIMIT or attempt == 1:
            break
        say(f"tarball {size} bytes is over {TAR_LIMIT}: moving {BULKY} beside it")
        skip = set(BULKY)
        for b in BULKY:
            if os.path.exists(os.path.join(folder, b)):
                shutil.copy(os.path.join(folder, b), os.path.join(os.path.dirname(out_path), b))
    os.replace(tmp, out_path)
    say("tarball", out_path, os.path.getsize(out_path), "bytes")


def main(argv=None):
    a = parse_args(argv)
    t_start = time.time()
    work = tempfile.mkdtemp(prefix="demo-model-")
    hf_dir = os.path.join(work, "hf")
    os.makedirs(hf_dir)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    summary = {"args": vars(a)}

    def flush_log():
        with open(os.path.join(work, "train.log"), "w") as f:
            f.write("\n".join(LOG) + "\n")
        with open(os.path.join(work, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)

    import torch
    import transformers
    say("torch", torch.__version__, "transformers", transformers.__version__, "python", sys.version.split()[0])
    dev = a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    summary["device"] = torch.cuda.get_device_name(0) if dev == "cuda" else "cpu"
    summary["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__}
    say("device", summary["device"])
    random.seed(a.seed)
    torch.manual_seed(a.seed)

    # ---------------------------------------------------------------- data + tokenizer
    docs = load_docs(a.corpus, a.max_docs)
    train_docs = [d for d in docs if not is_val(d["text"], a.val_frac)]
    val_docs = [d for d in docs if is_val(d["text"], a.val_frac)]
    say("documents", len(docs), "train", len(train_docs), "val", len(val_docs))
    t0 = time.time()
    tok = train_tokenizer([d["text"] for d in train_docs], a.vocab)
    say(f"tokenizer: vocab {tok.get_vocab_size()} trained in {time.time() - t0:.1f}s")
    rng = random.Random(a.seed)
    train_ids = build_stream(tok, train_docs, rng, a.chat_frac)
    val_ids = build_stream(tok, val_docs, random.Random(a.seed + 1), a.chat_frac)
    chars = sum(len(d["text"]) for d in train_docs)
    say(f"tokens: train {len(train_ids)} ({chars / len(train_ids):.2f} chars/token), val {len(val_ids)}")
    summary["data"] = {"documents": len(docs), "train_docs": len(train_docs), "val_docs": len(val_docs),
                       "train_tokens": len(train_ids), "val_tokens": len(val_ids), "train_chars": chars}
    train_t = torch.tensor(train_ids, dtype=torch.long, device=dev)
    val_t = torch.tensor(val_ids, dtype=torch.long, device=dev)

    # ---------------------------------------------------------------- model
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=a.hidden, intermediate_size=a.ffn,
        num_hidden_layers=a.layers, num_attention_heads=a.heads, num_key_value_heads=a.kv_heads,
        head_dim=a.hidden // a.heads, max_position_embeddings=a.ctx, rms_norm_eps=1e-5, rope_theta=10000.0,
        tie_word_embeddings=True, hidden_act="silu", initializer_range=0.02, attention_bias=False, mlp_bias=False,
        bos_token_id=0, eos_token_id=1, pad_token_id=None)
    model = LlamaForCausalLM(cfg).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    say(f"model: {n_params} parameters, attn {getattr(model.config, '_attn_implementation', '?')}")
    summary["parameters"] = n_params

    # Residual-branch dropout through hooks: regularizes without changing the exported architecture.
    import torch.nn.functional as F

    def drop_hook(mod, _inp, out):
        if not mod.training or a.dropout <= 0:
            return out
        if isinstance(out, tuple):
            return (F.dropout(out[0], a.dropout, True),) + tuple(out[1:])
        return F.dropout(out, a.dropout, True)
    for layer in model.model.layers:
        layer.self_attn.register_forward_hook(drop_hook)
        layer.mlp.register_forward_hook(drop_hook)

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt_kw = {"fused": True} if dev == "cuda" else {}
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8, **opt_kw)
    use_amp = dev == "cuda"
    if dev == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    V = cfg.vocab_size
    gen = torch.Generator(device=dev).manual_seed(a.seed)
    offs = torch.arange(a.ctx + 1, device=dev)

    def loss_of(x, y):
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_amp):
            logits = model(input_ids=x, use_cache=False).logits
        return F.cross_entropy(logits.float().reshape(-1, V), y.reshape(-1))

    @torch.no_grad()
    def evaluate():
        model.eval()
        n = (len(val_t) - 1) // a.ctx
        tot, cnt = 0.0, 0
        for s in range(0, n, a.batch):
            rows = torch.arange(s, min(n, s + a.batch), device=dev)
            w = val_t[rows[:, None] * a.ctx + offs]
            l = loss_of(w[:, :-1], w[:, 1:])
            tot += l.item() * len(rows)
            cnt += len(rows)
        model.train()
        return tot / max(cnt, 1)

    # ---------------------------------------------------------------- training loop
    tokens_per_step = a.batch * a.ctx
    epoch_steps = len(train_ids) / tokens_per_step
    max_tokens = a.max_epochs * len(train_ids)
    say(f"batch {a.batch}x{a.ctx} = {tokens_per_step} tokens/step, {epoch_steps:.1f} steps/epoch, "
        f"cap {a.max_epochs} epochs or {a.budget_s}s")
    rows = []  # step, seconds, tokens, lr, train_loss, val_loss
    best = {"val": float("inf"), "step": -1, "state": None}
    model.train()
    step, seen, acc, acc_n = 0, 0, 0.0, 0
    t_train = time.time()
    last_eval = t_train
    progress, lr = 0.0, 0.0
    # A failure mid-training (e.g. out of memory) still exports the best weights seen so far.
    try:
        while True:
            elapsed = time.time() - t_train
            progress = max(elapsed / a.budget_s, seen / max_tokens)
            if progress >= 1.0 or (a.max_steps and step >= a.max_steps):
                break
            cos = 0.5 * (1 + math.cos(math.pi * progress))
            lr = a.lr * (a.min_lr_frac + (1 - a.min_lr_frac) * cos) * min(1.0, (step + 1) / a.warmup_steps)
            for g in opt.param_groups:
                g["lr"] = lr
            starts = torch.randint(0, len(train_t) - a.ctx - 1, (a.batch,), device=dev, generator=gen)
            w = train_t[starts[:, None] + offs]
            loss = loss_of(w[:, :-1], w[:, 1:])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            seen += tokens_per_step
            acc += loss.detach()
            acc_n += 1
            if step % 50 == 0 or time.time() - last_eval >= a.eval_every_s:
                tl = (acc / acc_n).item()
                acc, acc_n = 0.0, 0
                vl = ""
                if time.time() - last_eval >= a.eval_every_s:
                    vl = evaluate()
                    last_eval = time.time()
                    if vl < best["val"]:
                        best = {"val": vl, "step": step, "state": {k: v.detach().clone() for k, v in model.state_dict().items()}}
                el = time.time() - t_train
                rows.append((step, round(el, 2), seen, lr, tl, vl))
                say(f"step {step} t {el:.1f}s epoch {seen / len(train_ids):.2f} lr {lr:.2e} train {tl:.4f}"
                    + (f" val {vl:.4f}" if vl != "" else "") + f" tok/s {seen / max(el, 1e-9):.0f}")
    except Exception:
        say("TRAINING STOPPED BY AN ERROR at step", step, traceback.format_exc())
        summary["training_error"] = traceback.format_exc()[-2000:]
    try:
        vl = evaluate()
    except Exception:
        say("FINAL EVALUATION FAILED", traceback.format_exc())
        vl = float("inf")
    el = time.time() - t_train
    rows.append((step, round(el, 2), seen, lr, (acc / max(acc_n, 1)).item() if acc_n else "", vl))
    say(f"done: {step} steps, {seen} tokens ({seen / len(train_ids):.2f} epochs) in {el:.1f}s, final val {vl:.4f}")
    if vl <= best["val"]:
        best = {"val": vl, "step": step, "state": None}
    if best["state"] is not None:
        model.load_state_dict(best["state"])
    say(f"kept the weights of step {best['step']} (val loss {best['val']:.4f})")
    summary["training"] = {"steps": step, "tokens": seen, "epochs": seen / len(train_ids), "seconds": el,
                           "final_val_loss": vl, "kept_step": best["step"], "kept_val_loss": best["val"],
                           "last_train_loss": next((r[4] for r in reversed(rows) if r[4] != ""), None),
                           "batch": a.batch, "ctx": a.ctx, "tokens_per_step": tokens_per_step}
    with open(os.path.join(work, "loss.csv"), "w") as f:
        f.write("step,seconds,tokens,lr,train_loss,val_loss\n")
        for r in rows:
            f.write(",".join(str(x) for x in r) + "\n")
    del best

    # ---------------------------------------------------------------- export (weights first)
    from export import export_folder, reference_check, samples, plot_loss
    model = model.float().cpu().eval()
    try:
        export_folder(model, tok, hf_dir, a.ctx, say)
        # The shipped weights are bf16; from here on the f32 model holds exactly those values.
        model = model.to(torch.bfloat16).float()
        summary["export"] = "ok"
    except Exception:
        say("EXPORT FAILED", traceback.format_exc())
        summary["export"] = "failed"
        torch.save(model.state_dict(), os.path.join(work, "state_dict.pt"))
    flush_log()
    write_tar(a.out, work)
    for name, fn in [("reference", lambda: reference_check(model, hf_dir, work, say, summary)),
                     ("samples", lambda: samples(hf_dir, work, say, summary)),
                     ("plot", lambda: plot_loss(rows, work, say))]:
        try:
            fn()
        except Exception:
            say(f"{name.upper()} FAILED", traceback.format_exc())
    summary["total_seconds"] = time.time() - t_start
    say(f"total {summary['total_seconds']:.1f}s")
    flush_log()
    write_tar(a.out, work)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        say("FAILED", traceback.format_exc())
        out = next((sys.argv[i + 1] for i, x in enumerate(sys.argv[:-1]) if x == "--out"), None)
        if out:
            with open(os.path.join(os.path.dirname(os.path.abspath(out)), "train-failed.log"), "w") as f:
                f.write("\n".join(LOG) + "\n")
        sys.exit(1)
