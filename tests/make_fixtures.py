#!/usr/bin/python3
"""PyTorch reference fixtures for the whole-model parity tests (run by hand, never by `make test`).

    python3 tests/make_fixtures.py                    regenerate tests/fixtures/parity_*.safetensors
    python3 tests/make_fixtures.py --check-load DIR   load every DIR/*.safetensors (written by the C
                                                      code) into a stock PyTorch model, compare logits

Needs Debian's python3-torch (1.13) and nothing else: the model is built from stock modules
(nn.Embedding, nn.TransformerEncoder / TransformerEncoderLayer / MultiheadAttention, nn.LayerNorm,
nn.Linear) and the safetensors files are read and written by the small shared codec in
tests/safetensors_io.py (struct + json + numpy).
The model semantics and the tensor names are the contracts of docs/design.md sections 1 and 5.

Attention scale. Our model multiplies the scores by s = 1/(temperature*sqrt(dk)) ("sqrt_dk") or
s = 1/temperature ("none"); stock MultiheadAttention always uses 1/sqrt(dk). The stock model is run
on an *effective* copy whose query projection (first d rows of in_proj_weight, first d entries of
in_proj_bias) is multiplied by c = s*sqrt(dk); the gradients of the *stored* parameters are then the
effective gradients with those q rows multiplied by c (chain rule; verified below with autograd).

Every fixture is verified before it is written: an independent hand-written forward of
docs/design.md section 1 (stored parameters, true scale s, explicit masks) must give the same
logits, loss and attention maps as the stock model, the chain rule is checked with autograd, and
every gradient is checked against central finite differences of the hand-written loss.
"""
import os
import sys

try:
    import torch
except ImportError:  # e.g. a pyenv python3 first on PATH: fall back to Debian's interpreter once
    if (os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != "/usr/bin/python3"
            and not os.environ.get("MAKE_FIXTURES_REEXEC")):
        os.environ["MAKE_FIXTURES_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit("make_fixtures.py: needs PyTorch (Debian: apt-get install python3-torch)")

import copy
import glob
import json
import math
import zlib

import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.stateless import functional_call

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # the shared codec lives next to this script
    sys.path.insert(0, HERE)
from safetensors_io import st_read, st_write  # noqa: E402

FIXTURE_DIR = os.path.join(HERE, "fixtures")
BATCH = 3
CONFIG_KEYS = ["vocab", "n_out", "d_model", "n_heads", "n_layers", "d_ff", "max_len", "activation",
               "norm", "positional", "embed_scale", "dropout", "attn_dropout", "attn_scale",
               "attn_temperature", "causal"]


# ---------------------------------------------------------------------------------------------
# Configurations. Together they cover: post/pre-LN, relu/gelu, causal or not, padding or not,
# learned/sinusoidal positions, sqrt_dk/none scale, temperature 1 and not 1, embed_scale on/off,
# 1, 2 and 4 heads, and causal+padding (post and pre).

def _cfg(name, seq_len, padding, **m):
    model = dict(vocab=13, n_out=5, d_model=8, n_heads=2, n_layers=2, d_ff=16, max_len=seq_len + 3,
                 activation="relu", norm="post", positional="sinusoidal", embed_scale=True,
                 dropout=0.0, attn_dropout=0.0, attn_scale="sqrt_dk", attn_temperature=1.0,
                 causal=False)
    for k, v in m.items():
        assert k in model, k
        model[k] = v
    model["attn_temperature"] = float(model["attn_temperature"])
    return dict(name=name, seq_len=seq_len, padding=padding, model=model)


CONFIGS = [
    _cfg("post_relu_pad_sin", 7, True),
    _cfg("pre_gelu_causal_learned_t05", 6, False, vocab=17, d_model=16, n_heads=4, d_ff=24,
         activation="gelu", norm="pre", positional="learned", embed_scale=False,
         attn_temperature=0.5, causal=True),
    _cfg("post_gelu_causal_pad_learned_h1", 5, True, vocab=15, n_heads=1, n_layers=1, d_ff=12,
         activation="gelu", positional="learned", causal=True),
    _cfg("pre_relu_pad_sin_none_t2", 8, True, vocab=19, d_model=12, n_layers=3, norm="pre",
         attn_scale="none", attn_temperature=2.0),
    _cfg("post_relu_causal_sin_none_h4", 9, False, vocab=14, n_heads=4, embed_scale=False,
         attn_scale="none", causal=True),
    _cfg("pre_gelu_causal_pad_sin_t2", 7, True, vocab=16, d_model=10, n_layers=1, d_ff=20,
         activation="gelu", norm="pre", embed_scale=False, attn_temperature=2.0, causal=True),
    _cfg("post_gelu_learned_none_t4_h1", 6, False, vocab=20, d_model=16, n_heads=1, d_ff=24,
         activation="gelu", positional="learned", attn_scale="none", attn_temperature=4.0),
    _cfg("pre_relu_pad_learned_h4", 6, True, vocab=18, d_model=12, n_heads=4, n_layers=1,
         norm="pre", positional="learned"),
]


# ---------------------------------------------------------------------------------------------
# The model: stock modules, state_dict names = docs/design.md section 5

def contract_names(m):
    names = ["embed.weight"]
    if m["positional"] == "learned":
        names.append("pos_embed.weight")
    for i in range(m["n_layers"]):
        p = f"encoder.layers.{i}."
        names += [p + "self_attn.in_proj_weight", p + "self_attn.in_proj_bias",
                  p + "self_attn.out_proj.weight", p + "self_attn.out_proj.bias",
                  p + "linear1.weight", p + "linear1.bias", p + "linear2.weight", p + "linear2.bias",
                  p + "norm1.weight", p + "norm1.bias", p + "norm2.weight", p + "norm2.bias"]
    if m["norm"] == "pre":
        names += ["encoder.norm.weight", "encoder.norm.bias"]
    return names + ["head.weight", "head.bias"]


def sinusoidal(max_len, d):
    pe = torch.zeros(max_len, d, dtype=torch.float64)
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    ang = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / d)
    pe[:, 0::2] = torch.sin(ang)
    pe[:, 1::2] = torch.cos(ang[:, : d // 2])
    return pe


class TinyTransformer(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m
        d = m["d_model"]
        assert d % m["n_heads"] == 0 and m["dropout"] == 0.0 and m["attn_dropout"] == 0.0
        self.embed = nn.Embedding(m["vocab"], d)
        if m["positional"] == "learned":
            self.pos_embed = nn.Embedding(m["max_len"], d)
        else:
            assert m["positional"] == "sinusoidal" and d % 2 == 0
            self.register_buffer("pe", sinusoidal(m["max_len"], d), persistent=False)
        pre = m["norm"] == "pre"
        layer = nn.TransformerEncoderLayer(d, m["n_heads"], m["d_ff"], dropout=0.0,
                                           activation=m["activation"], layer_norm_eps=1e-5,
                                           batch_first=True, norm_first=pre)
        self.encoder = nn.TransformerEncoder(layer, m["n_layers"],
                                             norm=nn.LayerNorm(d, eps=1e-5) if pre else None,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(d, m["n_out"])

    def positions(self, T):
        return self.pos_embed.weight[:T] if self.m["positional"] == "learned" else self.pe[:T]

    def forward(self, tokens, pad_mask):
        T = tokens.shape[1]
        scale = math.sqrt(self.m["d_model"]) if self.m["embed_scale"] else 1.0
        x = self.embed(tokens) * scale + self.positions(T)
        mask = causal_mask(T, x.dtype) if self.m["causal"] else None
        x = self.encoder(x, mask=mask, src_key_padding_mask=pad_mask)
        return self.head(x)


def causal_mask(T, dtype):
    # float mask in the model's dtype: MHA adds it with baddbmm, so float32 vs float64 would fail
    return torch.triu(torch.full((T, T), float("-inf"), dtype=dtype), diagonal=1)


def q_factor(m):
    """c = s*sqrt(dk): effective q projection = stored one times c."""
    dk = m["d_model"] // m["n_heads"]
    t = m["attn_temperature"]
    s = 1.0 / (t * math.sqrt(dk)) if m["attn_scale"] == "sqrt_dk" else 1.0 / t
    assert m["attn_scale"] in ("sqrt_dk", "none")
    return s, s * math.sqrt(dk)


def q_scale_vector(m, name, like):
    """Elementwise factor that turns a stored parameter into the effective one (None if 1)."""
    if not (name.endswith("self_attn.in_proj_weight") or name.endswith("self_attn.in_proj_bias")):
        return None
    _, c = q_factor(m)
    v = torch.ones_like(like)
    v[: m["d_model"]] = c
    return v


def effective_copy(model):
    eff = copy.deepcopy(model)
    with torch.no_grad():
        for name, p in eff.named_parameters():
            v = q_scale_vector(model.m, name, p)
            if v is not None:
                p.mul_(v)
    return eff


def build_model(m, params):
    """Stock model in float64 (train mode: dropout is 0 and this keeps PyTorch 1.13 off the
    inference fast paths); params: dict of stored tensors, loaded with strict=True."""
    model = TinyTransformer(m).double().train()
    model.load_state_dict(params, strict=True)
    return model


# ---------------------------------------------------------------------------------------------
# Independent hand-written forward of docs/design.md section 1 (stored parameters, true scale s)

def ref_forward(P, m, tokens, pad):
    """P: dict name -> float64 tensor (stored values). pad: bool [B,T] or None.
    -> logits [B,T,n_out], list of attention maps [B,H,T,T]."""
    B, T = tokens.shape
    d, H = m["d_model"], m["n_heads"]
    dk = d // H
    s, _ = q_factor(m)

    def ln(x, w, b):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + 1e-5) * w + b

    def act(x):
        if m["activation"] == "relu":
            return torch.clamp(x, min=0.0)
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))

    masked = torch.zeros(B, 1, T, T, dtype=torch.bool)
    if m["causal"]:
        masked |= torch.ones(T, T, dtype=torch.bool).triu(1)[None, None]
    if pad is not None:
        masked |= pad[:, None, None, :]

    pos = P["pos_embed.weight"][:T] if m["positional"] == "learned" else sinusoidal(m["max_len"], d)[:T]
    x = P["embed.weight"][tokens] * (math.sqrt(d) if m["embed_scale"] else 1.0) + pos
    attns = []
    for i in range(m["n_layers"]):
        p = f"encoder.layers.{i}."

        def sa(h):
            qkv = h @ P[p + "self_attn.in_proj_weight"].T + P[p + "self_attn.in_proj_bias"]
            q, k, v = (t.reshape(B, T, H, dk).transpose(1, 2) for t in qkv.split(d, dim=-1))
            sc = (q @ k.transpose(-1, -2)) * s
            sc = sc.masked_fill(masked, float("-inf"))
            a = torch.softmax(sc, dim=-1)
            attns.append(a)
            ctx = (a @ v).transpose(1, 2).reshape(B, T, d)
            return ctx @ P[p + "self_attn.out_proj.weight"].T + P[p + "self_attn.out_proj.bias"]

        def ff(h):
            h = act(h @ P[p + "linear1.weight"].T + P[p + "linear1.bias"])
            return h @ P[p + "linear2.weight"].T + P[p + "linear2.bias"]

        n1 = lambda h: ln(h, P[p + "norm1.weight"], P[p + "norm1.bias"])
        n2 = lambda h: ln(h, P[p + "norm2.weight"], P[p + "norm2.bias"])
        if m["norm"] == "post":
            x = n1(x + sa(x))
            x = n2(x + ff(x))
        else:
            x = x + sa(n1(x))
            x = x + ff(n2(x))
    if m["norm"] == "pre":
        x = ln(x, P["encoder.norm.weight"], P["encoder.norm.bias"])
    return x @ P["head.weight"].T + P["head.bias"], attns


def ref_loss(logits, targets):
    n_out = logits.shape[-1]
    lg = logits.reshape(-1, n_out)
    tg = targets.reshape(-1)
    keep = tg != -100
    lse = torch.logsumexp(lg[keep], dim=-1)
    picked = lg[keep].gather(1, tg[keep][:, None])[:, 0]
    return (lse - picked).mean()


# ---------------------------------------------------------------------------------------------
# Fixture generation

def make_params(m, names, gen):
    shapes = {k: tuple(v.shape) for k, v in TinyTransformer(m).state_dict().items()}
    params = {}
    for name in names:
        shp = shapes[name]
        z = torch.randn(shp, generator=gen, dtype=torch.float64)
        if name.startswith("embed.") or name.startswith("pos_embed."):
            v = 0.5 * z
        elif ".norm" in name and name.endswith(".weight"):   # LayerNorm gains
            v = 1.0 + 0.2 * z
        elif ".norm" in name and name.endswith(".bias"):
            v = 0.2 * z
        else:                                                  # linear weights and biases
            v = 0.3 * z
        params[name] = v.to(torch.float32)                     # stored values are float32
    return params


def make_inputs(fx, gen):
    m, B, T = fx["model"], BATCH, fx["seq_len"]
    tokens = torch.randint(0, m["vocab"], (B, T), generator=gen, dtype=torch.int64)
    targets = torch.randint(0, m["n_out"], (B, T), generator=gen, dtype=torch.int64)
    pad = torch.zeros(B, T, dtype=torch.bool)
    if fx["padding"]:
        for b in range(B):
            L = max(1, T - 2 * b)
            pad[b, L:] = True
    tokens[pad] = 0
    targets[pad] = -100
    free = (~pad).reshape(-1).nonzero()[:, 0]
    extra = free[torch.randint(0, len(free), (1,), generator=gen)]
    targets.view(-1)[extra] = -100
    return tokens, targets, pad


def run_stock(eff, tokens, pad, targets):
    """Forward + backward of the effective stock model; captures each layer's self_attn input,
    output and each layer's input/output for the attention maps and the consistency checks."""
    cap = {}
    hooks = []
    for i, layer in enumerate(eff.encoder.layers):
        hooks.append(layer.self_attn.register_forward_pre_hook(
            lambda mod, args, i=i: cap.__setitem__(("sa_in", i), args[0].detach())))
        hooks.append(layer.self_attn.register_forward_hook(
            lambda mod, args, out, i=i: cap.__setitem__(("sa_out", i), out[0].detach())))
        hooks.append(layer.register_forward_hook(
            lambda mod, args, out, i=i: cap.__setitem__(("layer", i), (args[0].detach(), out.detach()))))
    eff.zero_grad(set_to_none=True)
    logits = eff(tokens, pad)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)
    loss.backward()
    for h in hooks:
        h.remove()
    return logits.detach(), loss.detach(), cap


def attention_maps(eff, cap, tokens, pad):
    m = eff.m
    T = tokens.shape[1]
    mask = causal_mask(T, torch.float64) if m["causal"] else None
    maps = []
    with torch.no_grad():
        for i, layer in enumerate(eff.encoder.layers):
            x = cap[("sa_in", i)]
            out, w = layer.self_attn(x, x, x, attn_mask=mask, key_padding_mask=pad,
                                     need_weights=True, average_attn_weights=False)
            assert torch.allclose(out, cap[("sa_out", i)], rtol=0, atol=1e-12), "need_weights output differs"
            maps.append(w)
            # the layer output recomputed from the captured attention output (post/pre-LN order)
            xin, xout = cap[("layer", i)]
            sa = cap[("sa_out", i)]
            if m["norm"] == "post":
                h = layer.norm1(xin + sa)
                y = layer.norm2(h + layer.linear2(layer.activation(layer.linear1(h))))
            else:
                h = xin + sa
                y = h + layer.linear2(layer.activation(layer.linear1(layer.norm2(h))))
            assert torch.allclose(y, xout, rtol=0, atol=1e-12), f"layer {i} recomputation differs"
            # the attention output recomputed from the weights
            d, H = m["d_model"], m["n_heads"]
            B = x.shape[0]
            v = F.linear(x, layer.self_attn.in_proj_weight[2 * d:], layer.self_attn.in_proj_bias[2 * d:])
            v = v.reshape(B, T, H, d // H).transpose(1, 2)
            ctx = (w @ v).transpose(1, 2).reshape(B, T, d)
            o = layer.self_attn.out_proj(ctx)
            assert torch.allclose(o, sa, rtol=0, atol=1e-12), f"layer {i}: attention weights do not explain output"
    return maps


def check_chain_rule(model, grads, tokens, pad, targets):
    """autograd through W_eff = W * c from leaves W must equal the grads we derived by hand."""
    m = model.m
    leaves = {n: p.detach().clone().requires_grad_(True) for n, p in model.named_parameters()}
    eff = {}
    for n, w in leaves.items():
        v = q_scale_vector(m, n, w)
        eff[n] = w * v if v is not None else w
    logits = functional_call(model, eff, (tokens, pad))
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)
    g = torch.autograd.grad(loss, list(leaves.values()))
    for (n, _), gi in zip(leaves.items(), g):
        assert torch.allclose(gi, grads[n], rtol=1e-10, atol=1e-13), f"chain rule mismatch for {n}"


def check_finite_differences(P, m, tokens, pad, targets, grads, gen):
    """For every parameter a random direction v: (L(P+eps v) - L(P-eps v))/2eps vs <grad, v>,
    with L the hand-written loss. Returns the worst relative error."""
    eps, worst = 1e-6, 0.0
    for n in sorted(P):
        v = torch.randn(P[n].shape, generator=gen, dtype=torch.float64)
        Pp, Pm = dict(P), dict(P)
        Pp[n], Pm[n] = P[n] + eps * v, P[n] - eps * v
        lp = ref_loss(ref_forward(Pp, m, tokens, pad)[0], targets).item()
        lm = ref_loss(ref_forward(Pm, m, tokens, pad)[0], targets).item()
        fd = (lp - lm) / (2 * eps)
        an = (grads[n] * v).sum().item()
        err = abs(fd - an) / max(1e-3, abs(an))
        assert abs(fd - an) <= 1e-7 + 1e-6 * abs(an), f"finite difference mismatch for {n}: {fd} vs {an}"
        worst = max(worst, err)
    return worst


def generate(fx):
    m = fx["model"]
    names = contract_names(m)
    shapes = TinyTransformer(m).state_dict()
    assert list(shapes.keys()) == names, f"state_dict keys {list(shapes.keys())} != contract {names}"
    gen = torch.Generator().manual_seed(zlib.crc32(fx["name"].encode()))
    params = make_params(m, names, gen)
    tokens, targets, pad = make_inputs(fx, gen)
    pad_arg = pad if fx["padding"] else None

    model = build_model(m, params)
    for n, p in model.state_dict().items():  # float64 model holds exactly the float32 values
        assert torch.equal(p, params[n].double())
    eff = effective_copy(model)
    logits, loss, cap = run_stock(eff, tokens, pad_arg, targets)
    grads = {}
    for n, p in eff.named_parameters():
        g = p.grad.detach().clone()
        v = q_scale_vector(m, n, g)
        grads[n] = g * v if v is not None else g
    maps = attention_maps(eff, cap, tokens, pad_arg)

    # --- verification ---
    for t in [logits, loss, *maps, *grads.values()]:
        assert not torch.isnan(t).any() and torch.isfinite(t).all(), "NaN/inf in a reference"
    P = {n: p.double() for n, p in params.items()}
    rl, ra = ref_forward(P, m, tokens, pad_arg)
    assert torch.allclose(rl, logits, rtol=1e-10, atol=1e-12), "stock logits != hand-written forward"
    assert abs(ref_loss(rl, targets).item() - loss.item()) < 1e-12, "loss mismatch"
    T = fx["seq_len"]
    for i, (a, w) in enumerate(zip(ra, maps)):
        assert w.shape == (BATCH, m["n_heads"], T, T)
        assert torch.allclose(a, w, rtol=0, atol=1e-12), f"attention map {i} mismatch"
        assert torch.allclose(w.sum(-1), torch.ones_like(w.sum(-1)), atol=1e-12), "rows do not sum to 1"
        if m["causal"]:
            assert (w.masked_select(torch.ones(T, T, dtype=torch.bool).triu(1)) == 0).all()
        if fx["padding"]:
            assert (w.masked_select(pad[:, None, None, :].expand_as(w)) == 0).all()
    check_chain_rule(model, grads, tokens, pad_arg, targets)
    fd_err = check_finite_differences(P, m, tokens, pad_arg, targets, grads, gen)
    for n, g in grads.items():
        assert g.abs().max() > 1e-6, f"gradient of {n} is trivial"
    # sharpness: mean over layers, heads and query rows with >= 2 visible keys of the row maximum
    rowmax = torch.cat([w.max(-1).values[(w > 0).sum(-1) >= 2] for w in maps])
    sharp = rowmax.mean().item()

    tensors = {}
    for n in names:
        tensors["param." + n] = params[n]
        tensors["grad." + n] = grads[n]
    tensors["input.tokens"] = tokens.to(torch.int32)
    tensors["input.targets"] = targets.to(torch.int32)
    tensors["input.pad_mask"] = pad.to(torch.int32)
    tensors["output.logits"] = logits
    tensors["output.loss"] = loss.reshape(1)
    for i, w in enumerate(maps):
        tensors[f"output.attn.{i}"] = w.contiguous()
    meta = {"config": json.dumps({k: m[k] for k in CONFIG_KEYS}), "name": fx["name"],
            "batch": str(BATCH), "seq_len": str(T), "padding": "true" if fx["padding"] else "false",
            "torch": torch.__version__}
    path = os.path.join(FIXTURE_DIR, f"parity_{fx['name']}.safetensors")
    st_write(path, tensors, meta)
    back, bmeta = st_read(path)  # round trip
    assert bmeta == meta and set(back) == set(tensors)
    for n, t in tensors.items():
        assert back[n].dtype == t.dtype and torch.equal(back[n], t.detach()), n
    return path, loss.item(), fd_err, sharp


def summary(fx):
    m = fx["model"]
    return (f"{m['norm']}-LN {m['activation']} {'causal' if m['causal'] else 'bidir'} "
            f"{'pad' if fx['padding'] else 'nopad'} {m['positional'][:3]} {m['attn_scale']} "
            f"t={m['attn_temperature']:g} es={'y' if m['embed_scale'] else 'n'} "
            f"V={m['vocab']} d={m['d_model']} H={m['n_heads']} L={m['n_layers']} ff={m['d_ff']} "
            f"T={fx['seq_len']}")


def generate_all():
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    names = [fx["name"] for fx in CONFIGS]
    assert len(set(names)) == len(names)
    print(f"torch {torch.__version__}; writing {len(CONFIGS)} fixtures to {FIXTURE_DIR}")
    for old in sorted(glob.glob(os.path.join(FIXTURE_DIR, "parity_*.safetensors"))):
        if os.path.basename(old)[len("parity_"):-len(".safetensors")] not in names:
            print(f"removing stale {old}")
            os.remove(old)
    print(f"{'name':34s} {'config':88s} {'loss':>10s} {'bytes':>6s} {'fd_err':>8s} {'attn_max':>8s}")
    for fx in CONFIGS:
        path, loss, fd_err, sharp = generate(fx)
        print(f"{fx['name']:34s} {summary(fx):88s} {loss:10.6f} {os.path.getsize(path):6d} "
              f"{fd_err:8.1e} {sharp:8.3f}")


# ---------------------------------------------------------------------------------------------
# --check-load DIR

def check_load(d):
    files = sorted(glob.glob(os.path.join(d, "*.safetensors")))
    if not files:
        print(f"{d}: no *.safetensors files")
        return 1
    failed = 0
    for path in files:
        label = os.path.basename(path)
        try:
            tensors, meta = st_read(path)
            m = json.loads(meta["config"])
            missing = [k for k in CONFIG_KEYS if k not in m]
            if missing:
                raise ValueError(f"config lacks {missing}")
            m = {k: m[k] for k in CONFIG_KEYS}
            fx_path = os.path.join(FIXTURE_DIR, f"parity_{meta['fixture']}.safetensors")
            ref, rmeta = st_read(fx_path)
            if json.loads(rmeta["config"]) != m:
                raise ValueError(f"config differs from fixture {meta['fixture']}'s: {m}")
            ignored = sorted(n for n in tensors if n.startswith("optim."))
            state = {n: t for n, t in tensors.items() if not n.startswith("optim.")}
            model = build_model(m, state)   # load_state_dict(strict=True), names as written
            eff = effective_copy(model)
            pad = ref["input.pad_mask"].bool()
            with torch.no_grad():
                logits = eff(ref["input.tokens"].long(), pad if pad.any() else None)
            want = ref["output.logits"]
            diff = (logits - want).abs().max().item()
            rel = ((logits - want).norm() / want.norm()).item()
            ok = rel <= 1e-4
            note = f" (ignored {len(ignored)} optim.* tensors)" if ignored else ""
            print(f"{'ok  ' if ok else 'FAIL'} {label}: fixture {meta['fixture']}, "
                  f"max abs diff {diff:.3e}, rel {rel:.3e}{note}")
            failed += not ok
        except Exception as e:  # a load failure is a test failure, reported per file
            print(f"FAIL {label}: {type(e).__name__}: {e}")
            failed += 1
    print(f"{len(files) - failed}/{len(files)} files ok")
    return 1 if failed else 0


def main(argv):
    torch.set_num_threads(1)  # bitwise reproducible reductions
    if len(argv) == 2 and argv[0] == "--check-load":
        return check_load(argv[1])
    if argv:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    generate_all()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
