#!/usr/bin/env python3
"""bench_torch.py: PyTorch's time and memory for the training step that bench_step.c times.

The same three configs with stock modules (nn.Embedding, a sinusoidal buffer, nn.Dropout,
nn.TransformerEncoder of post-LN ReLU nn.TransformerEncoderLayer with dropout 0.1, which in
PyTorch 1.13 also drops attention weights, an nn.Linear head, F.cross_entropy) and
torch.optim.AdamW (lr 1e-3, weight decay 0.01), on the CPU in train mode. A step is zero_grad,
forward, loss, backward, optimizer step. One config per process, so that peak RSS
(ru_maxrss) is that config's; prints a readable line and then one JSON line.

Debian's python3-torch lives under /usr/bin/python3; when `import torch` fails (a pyenv python3
on PATH) the script re-executes itself there, and prints "SKIP: PyTorch not installed" and exits
0 when there is no torch at all.

  python3 bench/bench_torch.py --config tiny --threads 2
  OMP_WAIT_POLICY=PASSIVE python3 bench/bench_torch.py --config medium
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

CONFIGS = {  # V, T, d, h, L, d_ff, B: the same as bench_step.c
    "tiny": (64, 16, 64, 4, 2, 256, 32),
    "small": (256, 64, 128, 4, 4, 512, 32),
    "medium": (1024, 128, 256, 8, 6, 1024, 16),
}
SYSTEM_PYTHON = "/usr/bin/python3"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, choices=sorted(CONFIGS))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=30)
    return p.parse_args()


def import_torch():
    try:
        import torch  # noqa: F401
        return torch
    except ImportError:
        pass
    if (os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON)
            and os.path.exists(SYSTEM_PYTHON) and not os.environ.get("BENCH_TORCH_REEXEC")):
        os.environ["BENCH_TORCH_REEXEC"] = "1"
        sys.stdout.flush()
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
    print("SKIP: PyTorch not installed")
    sys.exit(0)


def main():
    args = parse_args()
    # OpenBLAS (PyTorch's BLAS in Debian) sizes its own pool from this, not from
    # torch.set_num_threads: without it --threads 1 would still run 2-thread gemms.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))
    torch = import_torch()
    from torch import nn
    import torch.nn.functional as F

    V, T, d, h, L, d_ff, B = CONFIGS[args.config]
    torch.set_num_threads(args.threads)
    torch.manual_seed(1234)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(V, d)
            pos = torch.arange(T, dtype=torch.float32).unsqueeze(1)
            div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
            pe = torch.zeros(T, d)
            pe[:, 0::2] = torch.sin(pos * div)
            pe[:, 1::2] = torch.cos(pos * div)
            self.register_buffer("pe", pe)
            self.drop = nn.Dropout(0.1)
            layer = nn.TransformerEncoderLayer(d, h, d_ff, dropout=0.1, activation="relu",
                                               batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, L, enable_nested_tensor=False)
            self.head = nn.Linear(d, V)

        def forward(self, tokens):
            x = self.drop(self.embed(tokens) + self.pe[: tokens.shape[1]])
            return self.head(self.encoder(x))

    model = Model()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    g = torch.Generator().manual_seed(1234)
    tokens = torch.randint(0, V, (B, T), generator=g)
    targets = torch.randint(0, V, (B, T), generator=g)

    ms, losses = [], []
    for _ in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
        ms.append((time.perf_counter() - t0) * 1e3)
    if not all(math.isfinite(x) for x in losses):
        print(f"bench_torch: {args.config}: non-finite loss {losses}", file=sys.stderr)
        sys.exit(1)
    timed = ms[args.warmup:]
    med = statistics.median(timed)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kilobytes
    params = sum(p.numel() for p in model.parameters())
    omp_wait = os.environ.get("OMP_WAIT_POLICY", "unset")
    print(f"bench_torch {args.config}: torch {torch.__version__}, {torch.get_num_threads()} "
          f"threads, OMP_WAIT_POLICY={omp_wait}: median {med:.2f} ms (min {min(timed):.2f}), "
          f"{B * T / (med * 1e-3):.0f} tok/s, peak RSS {rss_mb:.1f} MB")
    print(json.dumps({
        "impl": "torch", "config": args.config, "torch": torch.__version__,
        "threads": torch.get_num_threads(), "omp_wait_policy": omp_wait,
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "coretype": os.environ.get("OPENBLAS_CORETYPE") or "unset",
        "warmup": args.warmup, "steps": args.steps, "median_ms": round(med, 4),
        "min_ms": round(min(timed), 4), "mean_ms": round(statistics.fmean(timed), 4),
        "tokens_per_s": round(B * T / (med * 1e-3), 1), "peak_rss_mb": round(rss_mb, 2),
        "params": params, "first_loss": round(losses[0], 6), "last_loss": round(losses[-1], 6),
    }))


if __name__ == "__main__":
    main()
