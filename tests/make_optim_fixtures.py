#!/usr/bin/python3
"""PyTorch reference trajectories for the optimizer tests (tests/test_optim.c); run by hand:

    /usr/bin/python3 tests/make_optim_fixtures.py      rewrites tests/fixtures/optim.safetensors

Needs Debian's python3-torch (1.13) and nothing else. Everything is computed in float64 by stock
torch.optim.AdamW, torch.optim.SGD and torch.nn.utils.clip_grad_norm_, from initial values and
gradients that are float32 numbers (so the float32 build starts from exactly the same inputs).

Three parameters, as the C test builds its tt_params table: "w" [3,4], "b" [5], "z" [2]. "z"
always has a zero gradient (a tensor of zeros, not None, so PyTorch still updates it: AdamW's
weight decay shrinks it); "b" has a zero gradient at step 3. Step k (1-based, k = 1..STEPS) runs
at learning rate lr[k-1], our cosine schedule with warm-up (optim.h's formula):
tt_schedule_lr(cosine, LR, k-1, WARMUP, STEPS).

Tensors (all F64):
    init.<p>                     parameter values before the first step
    grad.<k>.<p>                 gradient given at step k (the same for every optimizer)
    lr                           [STEPS] learning rate of each step
    adamw.<k>.<p>                AdamW parameters after step k
    adamw.exp_avg.<p>            AdamW state after the last step (first moment)
    adamw.exp_avg_sq.<p>         AdamW state after the last step (second moment)
    sgd_mom.<k>.<p>              SGD with momentum after step k
    sgd_mom.momentum_buffer.<p>  its momentum buffer after the last step
    sgd_plain.<k>.<p>            SGD with momentum 0 after step k
    clip.in.<p>                  gradients given to clip_grad_norm_ (same three parameters)
    clip.<case>.max_norm         [] max_norm of the case; <case> is
                                   "lo": below the norm, the gradients are scaled down
                                   "hi": above the norm, the gradients come back unchanged
    clip.<case>.norm             [] the total norm clip_grad_norm_ returned
    clip.<case>.out.<p>          the gradients after clip_grad_norm_
Metadata (strings, Python repr of the float): steps, lr (the schedule's base rate), warmup,
adamw.beta1, adamw.beta2, adamw.eps, adamw.weight_decay, sgd_mom.momentum,
sgd_mom.weight_decay, sgd_plain.weight_decay, and generator ("make_optim_fixtures.py, torch X").

The file is written by the small shared safetensors writer in tests/safetensors_io.py (tensors in
insertion order, metadata last) and read back and compared before the script returns.
"""
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # the shared codec lives next to this script
    sys.path.insert(0, HERE)
from safetensors_io import st_read, st_write  # noqa: E402

OUT = os.path.join(HERE, "fixtures", "optim.safetensors")

SHAPES = {"w": (3, 4), "b": (5,), "z": (2,)}
STEPS = 6
LR, WARMUP = 0.05, 2
ADAMW = dict(betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
SGD_MOM = dict(momentum=0.9, weight_decay=0.05)
SGD_PLAIN = dict(momentum=0.0, weight_decay=0.05)

def schedule_lr(k):
    """optim.h's cosine schedule with linear warm-up, step k 0-based of STEPS."""
    if k < WARMUP:
        return LR * (k + 1) / WARMUP
    f = min(1.0, (k - WARMUP) / max(1, STEPS - WARMUP))
    return LR * 0.5 * (1 + math.cos(math.pi * f))


def f32_values(gen, shape, scale):
    """Normal values rounded to float32, returned as float64."""
    return (torch.randn(shape, generator=gen, dtype=torch.float64) * scale).float().double()


def make_inputs():
    gen = torch.Generator().manual_seed(1234)
    init = {p: f32_values(gen, s, 1.0) for p, s in SHAPES.items()}
    grads = []
    for k in range(1, STEPS + 1):
        g = {p: f32_values(gen, s, 0.5) for p, s in SHAPES.items()}
        g["z"].zero_()
        if k == 3:
            g["b"].zero_()
        g["w"][0, 0] = float(torch.tensor(1e-7 * k).float())  # where eps matters in AdamW
        grads.append(g)
    return init, grads


def run_optimizer(make_opt, init, grads, lrs):
    """-> (parameters after each step: list of dicts, optimizer)"""
    params = {p: torch.nn.Parameter(v.clone()) for p, v in init.items()}
    opt = make_opt(list(params.values()))
    traj = []
    for k, g in enumerate(grads):
        for p in params:
            params[p].grad = g[p].clone()
        for group in opt.param_groups:
            group["lr"] = lrs[k]
        opt.step()
        traj.append({p: params[p].detach().clone() for p in params})
    return traj, opt, params


def main():
    torch.set_default_dtype(torch.float64)
    init, grads = make_inputs()
    lrs = [schedule_lr(k) for k in range(STEPS)]
    t = {}
    for p in SHAPES:
        t["init." + p] = init[p]
    for k, g in enumerate(grads, 1):
        for p in SHAPES:
            t[f"grad.{k}.{p}"] = g[p]
    t["lr"] = torch.tensor(lrs)

    runs = {
        "adamw": lambda ps: torch.optim.AdamW(ps, lr=LR, foreach=False, **ADAMW),
        "sgd_mom": lambda ps: torch.optim.SGD(ps, lr=LR, foreach=False, **SGD_MOM),
        "sgd_plain": lambda ps: torch.optim.SGD(ps, lr=LR, foreach=False, **SGD_PLAIN),
    }
    for name, make in runs.items():
        traj, opt, params = run_optimizer(make, init, grads, lrs)
        for k, vals in enumerate(traj, 1):
            for p in SHAPES:
                t[f"{name}.{k}.{p}"] = vals[p]
        state_keys = {"adamw": ["exp_avg", "exp_avg_sq"], "sgd_mom": ["momentum_buffer"]}
        for key in state_keys.get(name, []):
            for p in SHAPES:
                t[f"{name}.{key}.{p}"] = opt.state[params[p]][key].detach().clone()
        if name == "adamw":
            assert all(int(opt.state[params[p]]["step"]) == STEPS for p in SHAPES)
    # z never gets a gradient: AdamW only decays it, by (1 - lr*wd) per step.
    expect_z = init["z"].clone()
    for lr in lrs:
        expect_z = expect_z * (1 - lr * ADAMW["weight_decay"])
    assert torch.allclose(t[f"adamw.{STEPS}.z"], expect_z, rtol=1e-14, atol=0)
    assert not torch.equal(t[f"adamw.{STEPS}.z"], init["z"])

    gen = torch.Generator().manual_seed(99)
    clip_in = {p: f32_values(gen, s, 1.0) for p, s in SHAPES.items()}
    clip_in["z"].zero_()
    total = math.sqrt(sum(float((g * g).sum()) for g in clip_in.values()))
    for p in SHAPES:
        t["clip.in." + p] = clip_in[p]
    for case, max_norm in (("lo", 0.5 * total), ("hi", 2.0 * total)):
        params = {p: torch.nn.Parameter(torch.zeros(s)) for p, s in SHAPES.items()}
        for p in SHAPES:
            params[p].grad = clip_in[p].clone()
        norm = torch.nn.utils.clip_grad_norm_(list(params.values()), max_norm)
        t[f"clip.{case}.max_norm"] = torch.tensor(max_norm)
        t[f"clip.{case}.norm"] = norm.detach().clone().reshape(())
        for p in SHAPES:
            t[f"clip.{case}.out.{p}"] = params[p].grad.clone()
            same = torch.equal(params[p].grad, clip_in[p])
            assert same == (case == "hi" or p == "z"), (case, p)

    meta = {"steps": str(STEPS), "lr": repr(LR), "warmup": str(WARMUP),
            "adamw.beta1": repr(ADAMW["betas"][0]), "adamw.beta2": repr(ADAMW["betas"][1]),
            "adamw.eps": repr(ADAMW["eps"]), "adamw.weight_decay": repr(ADAMW["weight_decay"]),
            "sgd_mom.momentum": repr(SGD_MOM["momentum"]),
            "sgd_mom.weight_decay": repr(SGD_MOM["weight_decay"]),
            "sgd_plain.weight_decay": repr(SGD_PLAIN["weight_decay"]),
            "generator": "make_optim_fixtures.py, torch " + torch.__version__}
    t = {k: v.to(torch.float64) for k, v in t.items()}
    st_write(OUT, t, meta, order="insertion", metadata_first=False)

    back, back_meta = st_read(OUT, require_padded_header=True)
    assert back_meta == meta and list(back) == list(t)
    for k, v in t.items():
        assert back[k].shape == v.shape and torch.equal(back[k], v), k
    print(f"wrote {os.path.relpath(OUT)}: {len(t)} tensors, {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    if not hasattr(torch.optim, "AdamW"):
        sys.exit("make_optim_fixtures.py: needs torch >= 1.2")
    main()
