#!/usr/bin/env python3
"""bench_torch.py: PyTorch's time and memory for the training step that bench_step.c times.

The model comes from the spec bench_step prints (one JSON line: `build/bench_step --config X
--spec`), never from a table of its own, built by scripts/torch_eval.py's Model from stock
modules (nn.Embedding, nn.Embedding positions when learned or a sinusoidal buffer, nn.Dropout,
nn.TransformerEncoder of nn.TransformerEncoderLayer with the spec's norm_first, activation and
dropout, PyTorch 1.13's one dropout for residuals, FFN and attention weights, the attention
module's set apart to attn_dropout, a final nn.LayerNorm for pre-LN, the causal mask as a float
-inf mask, the attention scale 1/(temperature sqrt(dk)) or 1/temperature folded into the query
rows of in_proj once at the start: the same work per step as stock), an nn.Linear head
(classify: after pooling the way the model does), F.cross_entropy, and torch.optim.AdamW or SGD
with the spec's settings, clip_grad_norm_ when grad_clip is set. A step is zero_grad, forward,
loss, backward, (clipping,) optimizer step, on the CPU in train mode, over a few batches of
random tokens with the spec's B, T, V and n_out, taken in turn. One
config per process, so that peak RSS (ru_maxrss) is that config's; prints a readable line,
what differs from ours, then one JSON line.

On a GPU (bench/gpu_bench.sh): --device cuda puts the model, the batches and the optimizer
there, each step ends with torch.cuda.synchronize(), and the peak device memory is
torch.cuda.max_memory_allocated() since a reset before the first step (tensors only: neither
the CUDA context nor the caching allocator's spare blocks; max_memory_reserved is printed too).
--precision highest|high sets torch.set_float32_matmul_precision and
torch.backends.cuda.matmul.allow_tf32 (high: TF32 tensor cores, as ours's matmul_precision).
--compile runs the forward pass, the head and the loss through torch.compile (the backward is
compiled with it, the optimizer stays eager); the compile happens in the warm-up steps (at
least 2), never timed, and a compile that fails prints "SKIP: torch.compile failed: ..." and a
JSON line whose median_ms is null (exit 0). --autocast bf16 runs the forward pass and the loss
under torch.autocast(dtype=torch.bfloat16), what a PyTorch user trains with on a GPU (matrix
products in bfloat16 with float32 accumulation, float32 parameters, gradients and optimizer
state), with or without --compile. Without these flags the script does what it did.

Debian's python3-torch lives under /usr/bin/python3; when `import torch` fails (a pyenv python3
on PATH) the script re-executes itself there, and prints "SKIP: PyTorch not installed" and exits
0 when there is no torch at all.

  python3 bench/bench_torch.py --config gpt-small --threads 2       # asks build/bench_step
  python3 bench/bench_torch.py --spec "$(build/bench_step --config configs/lm.json --spec)"
  OMP_WAIT_POLICY=PASSIVE python3 bench/bench_torch.py --spec spec.json --steps 30
  python3 bench/bench_torch.py --spec "$(build/cuda/bench_step --config base --set device=cuda \
      --spec)" --device cuda --precision high --compile --warmup 5 --steps 20
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings

SYSTEM_PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
BATCHES = 8  # random batches taken in turn, as bench_step's named configs have


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--spec", help="bench_step's spec: the JSON text, or a file holding it")
    src.add_argument("--config", help="a named config or a config file: its spec is asked of "
                     "bench_step (--bench-step)")
    p.add_argument("--bench-step", default=os.environ.get("BENCH_STEP") or
                   os.path.join(os.path.dirname(HERE), "build", "bench_step"))
    p.add_argument("--threads", type=int, help="default: the spec's threads")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda: the model, the data "
                   "and the optimizer there")
    p.add_argument("--precision", choices=("highest", "high"), help="float32 matmul precision "
                   "(default: torch's, highest); high lets cuBLAS use TF32 tensor cores")
    p.add_argument("--compile", action="store_true", help="torch.compile the forward pass and "
                   "the loss (compiled in the warm-up steps, never timed)")
    p.add_argument("--autocast", choices=("bf16",), help="the forward pass and the loss under "
                   "torch.autocast in bfloat16 (default: none, float32 throughout)")
    return p.parse_args()


def load_spec(args):
    """The spec as a dict; accepts the spec object or bench_step's {"spec": ...} line."""
    if args.config is not None:
        run = subprocess.run([args.bench_step, "--config", args.config, "--spec"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.stderr.write(run.stderr or f"bench_torch: {args.bench_step} failed\n")
            sys.exit(2)
        text = run.stdout
    elif args.spec.lstrip().startswith("{"):
        text = args.spec
    else:
        with open(args.spec, encoding="utf-8") as f:
            text = f.read()
    try:
        spec = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError) as e:
        sys.exit(f"bench_torch: the spec is not one line of JSON ({e}): {text[:200]!r}")
    return spec.get("spec", spec)


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


def differences(s, device):
    """What this side does not reproduce of ours, in words (timing-neutral or close to it)."""
    out = []
    if s.get("pad_share", 0) > 0:
        out.append(f"ours has the data's padding ({100 * s['pad_share']:.1f}% of the positions, "
                   "masked keys, ignored targets); PyTorch random tokens, no padding")
    if s["schedule"] != "constant" or s["warmup_steps"] > 0:
        out.append(f"ours follows the {s['schedule']} schedule (warm-up {s['warmup_steps']}); "
                   "PyTorch a constant lr")
    if s["device"] != device:
        where = "the CPU" if device == "cpu" else device
        out.append(f"ours runs on {s['device']}; PyTorch on {where}")
    return out


def build(s, device):
    """The model as scripts/torch_eval.py builds it from a config's model keys (the one
    stock-PyTorch form of ours: positions, norms, dropouts, the causal mask, the attention
    scale folded into the query rows), and the logits of a batch: per token, or classify's
    pooling (no padding: the mean over every token, or the first) then the head."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
    from torch_eval import Model

    keys = ("max_len", "positional", "norm", "activation", "causal", "dropout", "attn_dropout",
            "attn_scale", "attn_temperature", "embed_scale")
    m = {"d_model": s["d"], "n_heads": s["h"], "n_layers": s["L"], "d_ff": s["d_ff"],
         **{k: s[k] for k in keys}}
    model = Model(m, s["V"], s["n_out"], s["T"])
    model.scale_queries()
    model.to(device)
    if model.causal is not None:  # a plain attribute, not a buffer: .to leaves it behind
        model.causal = model.causal.to(device)

    def logits(tokens):
        h = model(tokens, None)
        if s["task"] == "classify":
            h = h[:, 0] if s.get("pool") == "first" else h.mean(1)
        return model.head(h)

    return model, logits


def batches(torch, s):
    """BATCHES pairs (tokens [B,T], targets) of random ids: targets [B,T] in [0, n_out), [B]
    for classify, and for mlm a target only where a token would be masked (else -100)."""
    g = torch.Generator().manual_seed(s["seed"])
    B, T, out = s["B"], s["T"], []
    for _ in range(BATCHES):
        tokens = torch.randint(3, max(s["V"], 4), (B, T), generator=g)
        shape = (B,) if s["task"] == "classify" else (B, T)
        targets = torch.randint(0, s["n_out"], shape, generator=g)
        if s["task"] == "mlm":
            keep = torch.rand((B, T), generator=g) < s["mask_prob"]
            targets = torch.where(keep, targets, torch.full_like(targets, -100))
        out.append((tokens, targets))
    return out


def set_precision(torch, precision):
    """PyTorch's float32 matmul precision, through its two legacy switches (which agree; the
    newer fp32_precision API must not be mixed with them). torch 2.9+ warns that they will be
    deprecated: that warning is left out."""
    warnings.filterwarnings("ignore", message=".*new API settings.*")
    torch.set_float32_matmul_precision(precision)
    torch.backends.cuda.matmul.allow_tf32 = precision == "high"


def compile_failed(s, args, e):
    """torch.compile could not build the step: a SKIP line, a JSON line without a time."""
    reason = (f"{type(e).__name__}: {e}".strip().splitlines() or ["?"])[0][:300]
    print(f"SKIP: torch.compile failed: {reason}")
    print(json.dumps({"impl": "torch", "config": s["name"], "device": args.device,
                      "compile": True, "median_ms": None, "skip": reason}))
    sys.exit(0)


def main():
    args = parse_args()
    s = load_spec(args)
    threads = args.threads or s.get("threads") or 2
    # OpenBLAS (PyTorch's BLAS in Debian) sizes its own pool from this, not from
    # torch.set_num_threads: without it --threads 1 would still run 2-thread gemms.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(threads))
    torch = import_torch()
    torch.set_num_threads(threads)
    torch.manual_seed(s["seed"])

    import torch.nn.functional as F

    device = args.device
    cuda = device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        sys.exit(f"bench_torch: --device {device}: torch {torch.__version__} sees no CUDA "
                 "device (a CPU-only build, or no GPU here)")
    if args.precision:
        set_precision(torch, args.precision)
    model, logits = build(s, device)
    model.train()
    params = list(model.parameters())
    if s["optimizer"] == "sgd":
        opt = torch.optim.SGD(params, lr=s["lr"], momentum=s["momentum"],
                              weight_decay=s["weight_decay"])
    else:
        opt = torch.optim.AdamW(params, lr=s["lr"], betas=(s["beta1"], s["beta2"]),
                                eps=s["eps"], weight_decay=s["weight_decay"])
    data = [(x.to(device), y.to(device)) for x, y in batches(torch, s)]

    def step_loss(tokens, targets):
        return F.cross_entropy(logits(tokens).reshape(-1, s["n_out"]), targets.reshape(-1))

    if args.autocast:
        plain_loss = step_loss

        def step_loss(tokens, targets):  # noqa: F811 (the same loss, under autocast)
            with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16):
                return plain_loss(tokens, targets)

    warmup = args.warmup
    if args.compile:
        warmup = max(warmup, 2)  # the first step compiles: it and one more are never timed
        try:
            step_loss = torch.compile(step_loss)
        except Exception as e:  # torch 1.x has no torch.compile
            compile_failed(s, args, e)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if cuda:
        torch.cuda.reset_peak_memory_stats()

    ms, losses = [], []
    for k in range(warmup + args.steps):
        tokens, targets = data[k % len(data)]
        t0 = time.perf_counter()
        opt.zero_grad()
        try:
            loss = step_loss(tokens, targets)
            loss.backward()
        except Exception as e:
            if not (args.compile and k == 0):
                raise
            compile_failed(s, args, e)
        if s["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(params, s["grad_clip"])
        opt.step()
        losses.append(loss.item())
        sync()
        ms.append((time.perf_counter() - t0) * 1e3)
    if not all(math.isfinite(x) for x in losses):
        print(f"bench_torch: {s['name']}: non-finite loss {losses}", file=sys.stderr)
        sys.exit(1)
    timed = ms[warmup:]
    med = statistics.median(timed)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kilobytes
    B, T = s["B"], s["T"]
    omp_wait = os.environ.get("OMP_WAIT_POLICY", "unset")
    differs = differences(s, device)
    # the GPU bench's flags: what they set, on the line and in the JSON (absent without them)
    gpu_keys, where, mem = {}, "", ""
    if cuda or args.precision or args.compile or args.autocast:
        precision = torch.get_float32_matmul_precision()
        gpu_keys = {"device": device, "precision": precision, "compile": args.compile,
                    "autocast": args.autocast, "first_step_ms": round(ms[0], 1)}
        name = f" ({torch.cuda.get_device_name()})" if cuda else ""
        auto = f", autocast {args.autocast}" if args.autocast else ""
        where = (f", {device}{name}, matmul precision {precision}{auto}, "
                 f"{'torch.compile' if args.compile else 'eager'}")
    if cuda:
        MB = 1048576.0
        gpu_keys["peak_device_mb"] = round(torch.cuda.max_memory_allocated() / MB, 1)
        gpu_keys["reserved_device_mb"] = round(torch.cuda.max_memory_reserved() / MB, 1)
        mem = (f", peak device memory {gpu_keys['peak_device_mb']:.1f} MB allocated "
               f"({gpu_keys['reserved_device_mb']:.1f} MB reserved)")
    print(f"bench_torch {s['name']}: torch {torch.__version__}, {torch.get_num_threads()} "
          f"threads, OMP_WAIT_POLICY={omp_wait}{where}: median {med:.2f} ms "
          f"(min {min(timed):.2f}), {B * T / (med * 1e-3):.0f} tok/s, peak RSS {rss_mb:.1f} MB"
          f"{mem}")
    if args.compile:
        print(f"  torch.compile: the first step (the compile) took {ms[0] / 1e3:.1f} s")
    for line in differs:
        print(f"  differs: {line}")
    print(json.dumps({
        "impl": "torch", "config": s["name"], "torch": torch.__version__,
        "threads": torch.get_num_threads(), "omp_wait_policy": omp_wait,
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "coretype": os.environ.get("OPENBLAS_CORETYPE") or "unset", "core": openblas_core(),
        "warmup": warmup, "steps": args.steps, "median_ms": round(med, 4),
        "min_ms": round(min(timed), 4), "mean_ms": round(statistics.fmean(timed), 4),
        "tokens_per_s": round(B * T / (med * 1e-3), 1), "peak_rss_mb": round(rss_mb, 2),
        "params": sum(p.numel() for p in params), "first_loss": round(losses[0], 6),
        "last_loss": round(losses[-1], 6), "differs": differs, **gpu_keys,
    }))


def openblas_core():
    """The kernel set of the OpenBLAS this process loaded (torch's BLAS), as
    openblas_get_corename names it, or None when no OpenBLAS is mapped."""
    import ctypes
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "libopenblas" in line})
    for path in paths:
        try:
            get = ctypes.CDLL(path).openblas_get_corename
        except (OSError, AttributeError):
            continue
        get.restype = ctypes.c_char_p
        return get().decode()
    return None


if __name__ == "__main__":
    main()
