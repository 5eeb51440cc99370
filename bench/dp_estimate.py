#!/usr/bin/env python3
"""dp_estimate.py: the arithmetic behind bench/RESULTS.md's "Data-parallel scaling: an estimate".

The step time of `medium` and `base` trained data-parallel on H100 GPUs with a ring all-reduce
of the float32 gradients, at 8, 64 and 512 GPUs: an estimate from stated assumptions (the
constants below), not a measurement. Python 3 standard library only; prints markdown tables.

    python3 bench/dp_estimate.py
"""

import math

# ---- assumptions (each one is stated in RESULTS.md) ----------------------------------------
PEAK = {"fp32": 67e12, "tf32": 495e12, "bf16": 989e12}  # H100 SXM dense FLOP/s
ACHIEVED = 0.40                  # share of the peak a training step's FLOPs achieve
T_KERNEL = 10e-6                 # s a kernel when the step is launch/latency-bound
KERNELS_PER_LAYER = 35           # 14 forward + 21 backward (see kernels())
KERNELS_OUTSIDE = 15             # embedding, head, loss, zeroing, norm, AdamW
GPUS_PER_NODE = 8
NVLINK = 450e9                   # B/s per direction per GPU, NVLink 4 (18 links x 25 GB/s)
IB = 50e9                        # B/s per GPU across nodes: InfiniBand NDR 400 Gb/s, one NIC a GPU
ALPHA_NVLINK = 5e-6              # s per ring step inside a node
ALPHA_IB = 10e-6                 # s per ring step once the ring crosses nodes (slowest hop)
BACKWARD_SHARE = 2 / 3           # the backward's share of the compute (2 of every 3 gemms)
GPUS = (8, 64, 512)

# ---- the models (bench/bench_run.c's medium; base as GPT-style like the gpt rows) ----------
MODELS = {
    # V, T, d, heads, layers, d_ff, B per GPU, pre-LN + learned positions + causal
    "medium": dict(V=1024, T=128, d=256, h=8, L=6, d_ff=1024, B=16, gpt=False),
    "base": dict(V=8192, T=256, d=768, h=12, L=12, d_ff=3072, B=32, gpt=True),
}


def slot(n):
    """src/autograd/params.c starts every parameter on a 16-element boundary."""
    return (n + 15) // 16 * 16


def params(m, flat=False):
    """Parameters in src/nn/model.c's order; flat=True: the padded gradient buffer."""
    s = slot if flat else (lambda n: n)
    V, T, d, L, f = m["V"], m["T"], m["d"], m["L"], m["d_ff"]
    layer = (s(3 * d * d) + s(3 * d) + s(d * d) + s(d) + s(f * d) + s(f) + s(d * f) + s(d)
             + 4 * s(d))
    n = s(V * d) + L * layer + s(V * d) + s(V)   # embedding, layers, head (n_out = V)
    if m["gpt"]:
        n += s(T * d) + 2 * s(d)                 # learned positions, final LayerNorm
    return n


def matmul_params(m):
    """The weights a token goes through in gemms: Wqkv, Wo, W1, W2 per layer, and the head."""
    d, f = m["d"], m["d_ff"]
    return m["L"] * (4 * d * d + 2 * d * f) + m["V"] * d


def flops(m, B):
    """FLOPs of one training step on one GPU: bench_step's count (bench/README.md), 3x the
    forward gemms = 6 * P_matmul * tokens + attention 12 * L * B * d * S, with S = T^2 score
    entries per head (bidirectional) or T(T+1)/2 (causal, the useful half)."""
    T = m["T"]
    S = T * (T + 1) / 2 if m["gpt"] else T * T
    return 6 * matmul_params(m) * B * T + 12 * m["L"] * B * m["d"] * S


def kernels(m):
    """Kernels a step launches. Per layer, forward 14: 4 linears (gemm + bias) 8, attention 1,
    2 dropout-adds, 2 LayerNorms, the activation with its dropout 1; backward 21: 4 linears
    (dX, dW, db) 12, attention 2, dropout-adds 2, LayerNorms 3, activation 1, a residual
    gradient sum 1. Outside the layers about 15."""
    return KERNELS_PER_LAYER * m["L"] + KERNELS_OUTSIDE


def compute_s(m, B, prec):
    """max(FLOPs / achieved rate, kernels x T_KERNEL): whichever bounds the step."""
    return max(flops(m, B) / (ACHIEVED * PEAK[prec]), kernels(m) * T_KERNEL)


def bound(m, B, prec):
    """The precision's name, marked when the kernel floor, not the FLOPs, sets the compute."""
    floor = flops(m, B) / (ACHIEVED * PEAK[prec]) < kernels(m) * T_KERNEL
    return prec + (" (floor)" if floor else "")


def ring_s(N, nbytes):
    """Flat ring: 2(N-1) steps, each moving nbytes/N over the slowest link of the ring."""
    bw, alpha = (NVLINK, ALPHA_NVLINK) if N <= GPUS_PER_NODE else (IB, ALPHA_IB)
    return 2 * (N - 1) / N * nbytes / bw + 2 * (N - 1) * alpha, 2 * (N - 1) * alpha


def hier_s(N, nbytes):
    """Hierarchical: reduce-scatter in the node (NVLink), an all-reduce of each GPU's 1/8 share
    over its own NIC across the M nodes (8 rings at once), all-gather in the node."""
    g = min(N, GPUS_PER_NODE)
    M = N // g
    inside = 2 * ((g - 1) / g * nbytes / NVLINK + (g - 1) * ALPHA_NVLINK)
    across = (2 * (M - 1) / M * (nbytes / g) / IB + 2 * (M - 1) * ALPHA_IB) if M > 1 else 0
    latency = 2 * (g - 1) * ALPHA_NVLINK + 2 * (M - 1) * ALPHA_IB
    return inside + across, latency


def ms(s):
    return f"{s * 1e3:.2f}"


def describe():
    print("## Models\n")
    print("| model | P | flat buffer (elements) | gradient MB (float32) | B per GPU | tokens "
          "| P_matmul | GFLOP per step per GPU (gemm + attention) | kernels per step |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, m in MODELS.items():
        B, T = m["B"], m["T"]
        gemm = 6 * matmul_params(m) * B * T
        print(f"| {name} | {params(m):,} | {params(m, True):,} | {params(m, True) * 4 / 1e6:.2f} "
              f"| {B} | {B * T:,} | {matmul_params(m):,} | {flops(m, B) / 1e9:.1f} "
              f"({gemm / 1e9:.1f} + {(flops(m, B) - gemm) / 1e9:.1f}) | {kernels(m)} |")
    print("\n## Compute per step on one H100 (40% of the dense peak, or the kernel floor)\n")
    print("| model | FP32 67 TF/s | TF32 495 TF/s | BF16 989 TF/s | kernel floor |")
    print("|---|---:|---:|---:|---:|")
    for name, m in MODELS.items():
        t = [flops(m, m["B"]) / (ACHIEVED * PEAK[p]) for p in ("fp32", "tf32", "bf16")]
        print(f"| {name} | {ms(t[0])} ms | {ms(t[1])} ms | {ms(t[2])} ms "
              f"| {kernels(m)} x {T_KERNEL * 1e6:.0f} us = {ms(kernels(m) * T_KERNEL)} ms |")


ROWS = (("medium", "tf32"), ("base", "tf32"), ("base", "bf16"), ("base", "fp32"))


def weak(algo, title):
    print(f"\n## Weak scaling (B per GPU fixed), {title}\n")
    print("| model | precision | GPUs | global batch | compute ms | comm ms (of it latency) "
          "| step ms | comm share | efficiency | overlapped: hidden ms | step ms | efficiency |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, prec in ROWS:
        m = MODELS[name]
        nbytes = params(m, True) * 4
        c = compute_s(m, m["B"], prec)
        for N in GPUS:
            comm, lat = algo(N, nbytes)
            step = c + comm
            hidden = min(comm, BACKWARD_SHARE * c)
            print(f"| {name} | {bound(m, m['B'], prec)} | {N} | {N * m['B']:,} | {ms(c)} "
                  f"| {ms(comm)} ({ms(lat)}) | {ms(step)} | {comm / step:.0%} | {c / step:.0%} "
                  f"| {ms(hidden)} | {ms(step - hidden)} | {c / (step - hidden):.0%} |")


def crossover():
    print("\n## Where the flat ring's comm equals the compute (across nodes, N > 8)\n")
    for name, prec in ROWS:
        m = MODELS[name]
        nbytes = params(m, True) * 4
        c = compute_s(m, m["B"], prec)
        # 2(N-1)/N * b/IB + 2(N-1) * alpha = c, solved for N by bisection (increasing in N)
        f = lambda N: ring_s(N, nbytes)[0] - c  # noqa: E731
        if f(GPUS_PER_NODE + 1) > 0:
            print(f"- {name} {prec}: comm {ms(ring_s(9, nbytes)[0])} ms > compute {ms(c)} ms "
                  f"as soon as the ring leaves the node")
            continue
        lo, hi = GPUS_PER_NODE + 1, 1 << 20
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        print(f"- {name} {prec}: compute {ms(c)} ms, comm {ms(ring_s(hi, nbytes)[0])} ms at "
              f"N = {hi}")


def latency_bound():
    print("\n## Where the flat ring's latency term equals its bandwidth term (across nodes)\n")
    for name, m in MODELS.items():
        nbytes = params(m, True) * 4
        # 2(N-1) alpha = 2(N-1)/N * nbytes / IB  <=>  N = nbytes / (IB * alpha)
        print(f"- {name}: N = {nbytes / (IB * ALPHA_IB):.0f} "
              f"({nbytes / 1e6:.1f} MB / ({IB / 1e9:.0f} GB/s x {ALPHA_IB * 1e6:.0f} us))")


def hierarchical():
    print("\n## The all-reduce alone: flat ring against hierarchical and tree (ms)\n")
    print("| model | GPUs | flat ring (latency) | hierarchical (latency) | tree latency term "
          "2 log2(N) alpha |")
    print("|---|---:|---:|---:|---:|")
    for name, m in MODELS.items():
        nbytes = params(m, True) * 4
        for N in GPUS:
            r, rl = ring_s(N, nbytes)
            h, hl = hier_s(N, nbytes)
            alpha = ALPHA_NVLINK if N <= GPUS_PER_NODE else ALPHA_IB
            print(f"| {name} | {N} | {ms(r)} ({ms(rl)}) | {ms(h)} ({ms(hl)}) "
                  f"| {ms(2 * math.log2(N) * alpha)} |")


def strong():
    print("\n## Strong scaling (global batch fixed), flat ring, TF32\n")
    print("| model | global batch | GPUs | B per GPU | compute ms | comm ms | step ms "
          "| overlapped step ms | speed-up over 1 GPU (overlapped) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, G, gpus in (("medium", 16, (1, 8, 16)), ("base", 512, (1, 8, 64, 512))):
        m = MODELS[name]
        nbytes = params(m, True) * 4
        one = compute_s(m, G, "tf32")
        for N in gpus:
            c = compute_s(m, G // N, "tf32")
            comm = ring_s(N, nbytes)[0] if N > 1 else 0
            ov = c + comm - min(comm, BACKWARD_SHARE * c)
            mark = " (floor)" if bound(m, G // N, "tf32").endswith("(floor)") else ""
            print(f"| {name} | {G} | {N} | {G // N} | {ms(c)}{mark} | {ms(comm)} | {ms(c + comm)} "
                  f"| {ms(ov)} | {one / (c + comm):.1f}x ({one / ov:.1f}x) |")


if __name__ == "__main__":
    describe()
    weak(ring_s, "flat ring all-reduce")
    crossover()
    latency_bound()
    hierarchical()
    weak(hier_s, "hierarchical all-reduce (NVLink inside the node, 8 NICs across)")
    strong()
