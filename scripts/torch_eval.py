#!/usr/bin/python3
"""Load a ./train checkpoint into stock PyTorch modules and score the validation set.

    python3 scripts/torch_eval.py runs/tiny/checkpoints/epoch_008.safetensors [--valid FILE]

An example for users of docs/design.md: the model is nn.Embedding + positions + a stock
nn.TransformerEncoder + nn.Linear, filled by load_state_dict(strict=True) from the checkpoint;
the vocabulary, the labels and the config come from its __metadata__. It prints the validation
loss and accuracy (and on data.ambiguous's words) and, when the run's metrics.jsonl is beside
the checkpoints/ folder, the trainer's own evaluation line of that epoch to compare with.
Needs Debian's python3-torch (and numpy, which it brings); nothing else.
"""
import argparse
import json
import math
import os
import re
import struct
import sys

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("torch_eval.py: needs PyTorch and numpy (Debian: apt-get install python3-torch, "
             "then run it with /usr/bin/python3)")

PAD, UNK, MASK, IGNORE = 0, 1, 2, -100  # the trainer's special ids and ignore_index


def read_safetensors(path):
    """-> ({name: tensor}, metadata): 8-byte header length, JSON header, little-endian data."""
    dtypes = {"F32": np.float32, "F64": np.float64, "I32": np.int32, "I64": np.int64}
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, e in header.items():
        start, end = e["data_offsets"]
        a = np.frombuffer(raw[8 + n + start:8 + n + end], dtype=dtypes[e["dtype"]])
        tensors[name] = torch.from_numpy(a.reshape(e["shape"]).copy())
    return tensors, meta


class Model(nn.Module):
    """docs/design.md, "The model", with stock modules and the checkpoint's tensor names. The
    config's dropouts act in train mode only (bench/bench_torch.py trains this model): PyTorch
    1.13's layer has one dropout for residuals, FFN and attention weights, so each layer's
    attention module gets attn_dropout apart."""

    def __init__(self, m, vocab, n_out, seq_len):
        super().__init__()
        d, self.m = m["d_model"], m
        self.embed = nn.Embedding(vocab, d)
        if m["positional"] == "learned":
            self.pos_embed = nn.Embedding(m["max_len"], d)
        else:  # PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same)
            pos = torch.arange(m["max_len"], dtype=torch.float64)[:, None]
            angle = pos / 10000.0 ** ((torch.arange(d) // 2 * 2).double() / d)
            pe = torch.where(torch.arange(d) % 2 == 0, torch.sin(angle), torch.cos(angle))
            self.register_buffer("pe", pe.float(), persistent=False)
        pre, drop = m["norm"] == "pre", m["dropout"]
        self.drop = nn.Dropout(drop) if drop > 0 else nn.Identity()
        layer = nn.TransformerEncoderLayer(d, m["n_heads"], m["d_ff"], dropout=drop,
                                           activation=m["activation"], layer_norm_eps=1e-5,
                                           batch_first=True, norm_first=pre)
        self.encoder = nn.TransformerEncoder(layer, m["n_layers"],
                                             norm=nn.LayerNorm(d, eps=1e-5) if pre else None,
                                             enable_nested_tensor=False)
        for lay in self.encoder.layers:  # MultiheadAttention reads it at every call
            lay.self_attn.dropout = m["attn_dropout"]
        self.head = nn.Linear(d, n_out)
        causal = torch.full((seq_len, seq_len), float("-inf")).triu(1)
        self.causal = causal if m["causal"] else None

    def scale_queries(self):
        """Stock attention divides the scores by sqrt(d_k); the trainer's scale is
        1/(temperature sqrt(d_k)) ("sqrt_dk") or 1/temperature ("none"): multiply each layer's
        query projection (the first d rows of in_proj) by the ratio."""
        m, d = self.m, self.m["d_model"]
        dk = d // m["n_heads"]
        scale = 1.0 / m["attn_temperature"] / (math.sqrt(dk) if m["attn_scale"] == "sqrt_dk" else 1)
        with torch.no_grad():
            for layer in self.encoder.layers:
                layer.self_attn.in_proj_weight[:d] *= scale * math.sqrt(dk)
                layer.self_attn.in_proj_bias[:d] *= scale * math.sqrt(dk)

    def forward(self, tokens, pad):
        """tokens, pad [B,T] (pad True at padding, or None) -> hidden states [B,T,d]."""
        T = tokens.shape[1]
        x = self.embed(tokens) * (math.sqrt(self.m["d_model"]) if self.m["embed_scale"] else 1)
        x = x + (self.pos_embed.weight[:T] if self.m["positional"] == "learned" else self.pe[:T])
        return self.encoder(self.drop(x), mask=self.causal, src_key_padding_mask=pad)


def philox_uniforms(seed, stream, first, n):
    """The trainer's random stream (src/tensor/philox.h): element e is word e % 4 of the
    Philox4x32-10 block e / 4, key = seed, counter = (block, stream); uniform = top 24 bits."""
    e = np.arange(first, first + n, dtype=np.uint64)
    lo32 = np.uint64(0xFFFFFFFF)
    block = e >> np.uint64(2)
    c = [block & lo32, block >> np.uint64(32), np.full_like(e, stream & 0xFFFFFFFF),
         np.full_like(e, stream >> 32)]
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32)
    for _ in range(10):
        p0, p1 = np.uint64(0xD2511F53) * c[0], np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & lo32, (p0 >> np.uint64(32)) ^ c[3] ^ k1,
             p0 & lo32]
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & lo32, (k1 + np.uint64(0xBB67AE85)) & lo32
    words = np.choose((e & np.uint64(3)).astype(np.int64), c)
    return (words >> np.uint64(8)).astype(np.float64) / 16777216.0


def split_words(text):
    """Words are separated by spaces and tabs, nothing else (data.h)."""
    return [w for w in re.split("[ \t]", text) if w]


def read_examples(path, cfg, words, labels):
    """The validation file as (ids, tags) pairs, parsed as the trainer does (data.h)."""
    task, seq_len = cfg["data"]["task"], cfg["data"]["seq_len"]
    word_id = {w: i for i, w in enumerate(words)}
    label_id = {w: i for i, w in enumerate(labels)}
    out = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n").removesuffix("\r")
            if not line.strip(" \t"):
                continue
            text, tags = line, []
            if task == "tag":
                text, tag_text = line.split("\t")
                tags = split_words(tag_text)
            elif task == "classify":
                label, text = line.split("\t")
                tags = split_words(label)
            ids = [word_id.get(w, UNK) for w in split_words(text)]
            if len(ids) > seq_len:  # the trainer refuses this unless data.truncate is set
                ids, tags = ids[:seq_len], tags[:seq_len] if task == "tag" else tags
            unknown = [t for t in tags if t not in label_id]
            if unknown:
                sys.exit(f"{path}:{lineno}: {unknown[0]!r} is not one of the checkpoint's labels")
            out.append((ids, [label_id[t] for t in tags]))
    return out


def batch(examples, cfg, mask_rng_first):
    """tokens, targets, pad of one batch: rows padded to data.seq_len (the trainer's T)."""
    task, T, B = cfg["data"]["task"], cfg["data"]["seq_len"], len(examples)
    tokens = torch.full((B, T), PAD, dtype=torch.long)
    pad = torch.ones(B, T, dtype=torch.bool)
    targets = torch.full((B,) if task == "classify" else (B, T), IGNORE, dtype=torch.long)
    for r, (ids, tags) in enumerate(examples):
        inp = ids[:-1] if task == "lm" and len(ids) > 1 else ids  # lm: predict the next word
        tokens[r, :len(inp)] = torch.tensor(inp)
        pad[r, :len(inp)] = False
        if task == "tag":
            targets[r, :len(tags)] = torch.tensor(tags)
        elif task == "classify":
            targets[r] = tags[0]
        elif task == "lm":
            targets[r, :len(ids) - 1] = torch.tensor(ids[1:])
        else:  # mlm: the validation masks, Philox stream 4, element r*T + t of the batch's draw
            u = philox_uniforms(cfg["seed"], 4, mask_rng_first + r * T, len(inp))
            for t in np.nonzero(u < cfg["data"]["mask_prob"])[0]:
                targets[r, t], tokens[r, t] = tokens[r, t], MASK
    return tokens, targets, pad


def evaluate(model, cfg, examples, ambiguous_ids):
    """Loss (mean over every target), accuracy, accuracy on the ambiguous words, and the
    counts of right answers and of targets behind the two accuracies."""
    task, B, T = cfg["data"]["task"], cfg["train"]["batch_size"], cfg["data"]["seq_len"]
    draw = (B * T + 3) // 4 * 4  # mlm uniforms per batch: B*T rounded up to a Philox block
    loss, hits, count, amb_hits, amb_count = 0.0, 0, 0, 0, 0
    for first in range(0, len(examples), B):
        tokens, targets, pad = batch(examples[first:first + B], cfg, first // B * draw)
        h = model(tokens, pad)
        if task == "classify":
            if cfg["model"]["pool"] == "first":
                h = h[:, 0]
            else:  # the mean over the real tokens
                keep = (~pad).float()[:, :, None]
                h = (h * keep).sum(1) / keep.sum(1)
        logits = model.head(h).reshape(-1, model.head.out_features)
        tgt = targets.reshape(-1)
        real = tgt != IGNORE
        loss += F.cross_entropy(logits[real], tgt[real], reduction="sum").item()
        hit = logits.argmax(-1) == tgt
        hits += int(hit[real].sum())
        count += int(real.sum())
        if task == "tag":
            amb = real & torch.isin(tokens.reshape(-1), ambiguous_ids)
            amb_hits += int(hit[amb].sum())
            amb_count += int(amb.sum())
    return {"valid_loss": loss / count, "valid_acc": hits / count,
            "valid_acc_ambiguous": amb_hits / amb_count if amb_count else None,
            "counts": (hits, count, amb_hits, amb_count)}


def trainer_line(checkpoint, epoch):
    """The trainer's evaluation line of this epoch in the run's metrics.jsonl, if there."""
    path = os.path.join(os.path.dirname(os.path.abspath(checkpoint)), "..", "metrics.jsonl")
    if not os.path.exists(path):
        return None
    lines = [json.loads(s) for s in open(path) if s.strip()]
    found = [m for m in lines if m.get("epoch") == epoch and "valid_loss" in m]
    return found[-1] if found else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint", help="a checkpoints/epoch_NNN.safetensors of ./train")
    ap.add_argument("--valid", help="the data to score (default: data.valid of its config)")
    args = ap.parse_args()
    tensors, meta = read_safetensors(args.checkpoint)
    cfg = json.loads(meta["config"])
    words, labels = json.loads(meta["vocabulary"]), json.loads(meta["labels"])
    task = cfg["data"]["task"]
    n_out = len(labels) if task in ("tag", "classify") else len(words)

    model = Model(cfg["model"], len(words), n_out, cfg["data"]["seq_len"])
    # parameters only: optim.* entries are the optimizer's state, for --resume
    model.load_state_dict({k: v for k, v in tensors.items() if not k.startswith("optim.")},
                          strict=True)
    model.scale_queries()
    model.eval()

    valid = args.valid or cfg["data"]["valid"]
    examples = read_examples(valid, cfg, words, labels)
    ambiguous = torch.tensor([words.index(w) for w in cfg["data"]["ambiguous"]], dtype=torch.long)
    with torch.no_grad():
        ours = evaluate(model, cfg, examples, ambiguous)

    shown = valid if os.path.relpath(valid).startswith("..") else os.path.relpath(valid)
    print(f"{args.checkpoint}: task {task}, epoch {meta['epoch']}, step {meta['step']}, "
          f"{len(examples)} examples of {shown}")
    theirs = None if args.valid else trainer_line(args.checkpoint, int(meta["epoch"]))
    print(f"{'':22}{'PyTorch':>14}" + (f"{'./train':>14}{'difference':>14}" if theirs else ""))
    for key in ("valid_loss", "valid_acc", "valid_acc_ambiguous"):
        if ours[key] is None:
            continue
        row = f"{key:22}{ours[key]:14.9f}"
        if theirs and key in theirs:  # metrics.jsonl has 9 significant digits
            row += f"{theirs[key]:14.9f}{ours[key] - theirs[key]:14.2e}"
        print(row)
    hits, count, amb_hits, amb_count = ours["counts"]
    print(f"right: {hits} of {count} targets" +
          (f", {amb_hits} of {amb_count} on the ambiguous words" if amb_count else ""))


if __name__ == "__main__":
    sys.exit(main())
