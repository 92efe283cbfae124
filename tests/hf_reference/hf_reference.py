#!/usr/bin/env python3
"""The executor's first training step beside Hugging Face transformers (fp32).

Usage: hf_reference.py BUILD_DIR [--markdown FILE] [--write-data DIR] [--only NAME]

For every model type `plan` reads from a Hugging Face config.json, a tiny
instance (px_run.BASE) runs one step of `execute` (fp32); its initial weights
(`--dump-weights` at `--lr 0`) go into the transformers model of the same
config, which computes the loss and the gradients on the same tokens; then
- loss: relative difference within px_run.tolerances' loss bound;
- gradients (the executor's AdamW first moment after the step on one rank,
  recovered through one AdamW step on a split): every element within the
  gradient bound times its layer's largest gradient;
- update: torch.optim.AdamW's step (no weight decay on norms and biases)
  from the same weights with transformers' gradients against the
  executor's updated weights, within what the gradient bound lets an AdamW
  update move (px_run.update_bound).
Probes change one architecture field of a base config to a released model's
value.  A case listed in NOT_CARRIED is expected to differ (what the
executor does not carry) and is reported as a known difference; one in
REFUSED_BY_NAME may be refused naming the field; any other difference
fails.  --write-data keeps the reference numbers of the
cases in DATA_CASES for ci_reference.py (no torch).  Exits 1 on a failure."""
import math, os, sys, tempfile, time

import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import px_run  # noqa: E402

torch.set_num_threads(1)

# (case name, model type, config changes, layout); probes name their field.
CASES = [
    ("llama", "llama", {}, px_run.ONE_RANK),
    ("llama tied", "llama", {"tie_word_embeddings": True}, px_run.ONE_RANK),
    ("mistral", "mistral", {}, px_run.ONE_RANK),
    ("qwen2", "qwen2", {}, px_run.ONE_RANK),
    ("qwen3", "qwen3", {}, px_run.ONE_RANK),
    ("qwen3_moe", "qwen3_moe", {}, px_run.ONE_RANK),
    ("deepseek_v3", "deepseek_v3", {}, px_run.ONE_RANK),
    ("gpt2", "gpt2", {}, px_run.ONE_RANK),
    ("mixtral", "mixtral", {}, px_run.ONE_RANK),
    ("gpt_oss", "gpt_oss", {}, px_run.ONE_RANK),
    ("phi3", "phi3", {}, px_run.ONE_RANK),
    ("gemma", "gemma", {}, px_run.ONE_RANK),
    ("gemma2", "gemma2", {}, px_run.ONE_RANK),
    ("gemma3_text", "gemma3_text", {}, px_run.ONE_RANK),
    # the presets that have a transformers architecture, at their own sizes
    # (models/*.json: the same model as plan --model NAME)
    ("preset tiny-llama", "llama", {"intermediate_size": 176, "vocab_size": 256},
     px_run.ONE_RANK),
    ("preset llama-4l-h512", "llama",
     {"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
      "num_key_value_heads": 4, "intermediate_size": 1408, "vocab_size": 4096}, px_run.ONE_RANK),
    ("preset tiny-gpt", "gpt2", {"n_inner": 256, "vocab_size": 256}, px_run.ONE_RANK),
    # probes: one field at a released model's value
    ("llama rope_theta 5e5", "llama", {"rope_theta": 500000.0}, px_run.ONE_RANK),
    ("llama rms_norm_eps 1e-6", "llama", {"rms_norm_eps": 1e-6}, px_run.ONE_RANK),
    ("llama rope_scaling llama3", "llama",
     {"rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8}},
     px_run.ONE_RANK),
    ("qwen3_moe norm_topk_prob", "qwen3_moe", {"norm_topk_prob": True}, px_run.ONE_RANK),
    ("deepseek_v3 rope_interleave", "deepseek_v3", {"rope_interleave": True}, px_run.ONE_RANK),
    ("deepseek_v3 n_group 2", "deepseek_v3", {"n_group": 2, "topk_group": 1}, px_run.ONE_RANK),
    ("deepseek_v3 rms_norm_eps 1e-6", "deepseek_v3", {"rms_norm_eps": 1e-6}, px_run.ONE_RANK),
    ("gpt2 layer_norm_epsilon 1e-6", "gpt2", {"layer_norm_epsilon": 1e-6}, px_run.ONE_RANK),
    ("llama attention_bias", "llama", {"attention_bias": True}, px_run.ONE_RANK),
    ("mistral sliding_window 8", "mistral", {"sliding_window": 8}, px_run.ONE_RANK),
    ("qwen3 rope_scaling yarn", "qwen3",
     {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8}},
     px_run.ONE_RANK),
    # the two split layouts, every type the executor runs on both
    ("llama rope_theta 5e5 rms_norm_eps 1e-6", "llama",
     {"rope_theta": 500000.0, "rms_norm_eps": 1e-6}, px_run.SPLIT_TPPPDP),
    ("qwen3_moe norm_topk_prob", "qwen3_moe", {"norm_topk_prob": True}, px_run.SPLIT_EPCP),
    ("deepseek_v3", "deepseek_v3", {}, px_run.SPLIT_EPCP),
] + [(t, t, {}, layout)
     for t in ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral", "deepseek_v3",
               "gpt2", "phi3")
     for layout in (px_run.SPLIT_TPPPDP,
                    px_run.SPLIT_EPCP if t in ("qwen3_moe", "mixtral") else px_run.SPLIT_CP)
     if (t, layout) != ("deepseek_v3", px_run.SPLIT_EPCP)]

# Differences expected: the fields (or fixed behaviours of a type) the
# executor runs but does not carry (none now).  A case here that agrees is
# reported so.
NOT_CARRIED = {}

# Cases the executor may refuse instead, naming the field (a refusal that
# does not name it fails).
REFUSED_BY_NAME = {"mistral sliding_window 8": "sliding_window", "qwen3 rope_scaling yarn": "yarn",
                   "gpt_oss": "attention_sinks", "gemma": "mlp_act", "gemma2": "mlp_act",
                   "gemma3_text": "mlp_act"}

# Cases whose reference numbers ci_reference.py keeps (tests/hf_reference/data).
DATA_CASES = ["llama", "qwen3_moe", "deepseek_v3", "gpt2"]

GLOBAL = {"embed": 1, "pos": 2, "norm_w": 3, "norm_b": 4, "head": 5}
K = {"ln1_w": 0, "ln1_b": 1, "wq": 2, "wk": 3, "wv": 4, "bq": 5, "bk": 6, "bv": 7, "wo": 8,
     "bo": 9, "ln2_w": 10, "ln2_b": 11, "gate": 12, "up": 13, "fc": 14, "b_fc": 15, "down": 16,
     "b_down": 17, "router": 18, "exp_w1": 19, "exp_w2": 20,
     "mla_wq_a": 2, "mla_wq_b": 3, "mla_wkv_a": 4, "mla_wkv_b": 5, "mla_q_norm": 6,
     "mla_kv_norm": 7, "k_norm": 30, "q_norm": 31, "sh_gate": 29, "sh_up": 28, "sh_down": 27}


def lid(layer, kind):
    return 100 + 32 * layer + K[kind]


def as_torch(t):
    R, C, a = t
    return torch.frombuffer(bytearray(a.tobytes()), dtype=torch.float32).reshape(R, C)


def hf_map(cfg, n_layers):
    """[(hf parameter name, function of get(tensor id) -> torch tensor)]:
    the executor's tensors in transformers' names and shapes."""
    t = cfg["model_type"]
    if t == "gpt2":
        return gpt2_map(n_layers)
    m = [("model.embed_tokens.weight", lambda g: g(GLOBAL["embed"])),
         ("model.norm.weight", lambda g: g(GLOBAL["norm_w"]).flatten())]
    if not cfg.get("tie_word_embeddings", False):
        m.append(("lm_head.weight", lambda g: g(GLOBAL["head"])))
    E = cfg.get("num_experts", cfg.get("num_local_experts", cfg.get("n_routed_experts", 0)))
    dense = cfg.get("first_k_dense_replace", 0 if E else n_layers)
    for i in range(n_layers):
        p = f"model.layers.{i}."
        L = lambda kind, i=i: lid(i, kind)
        m += [(p + "input_layernorm.weight", lambda g, L=L: g(L("ln1_w")).flatten()),
              (p + "post_attention_layernorm.weight", lambda g, L=L: g(L("ln2_w")).flatten()),
              (p + "self_attn.o_proj.weight", lambda g, L=L: g(L("wo")))]
        if t == "deepseek_v3":
            for hf, kind, vec in [("q_a_proj", "mla_wq_a", 0), ("q_b_proj", "mla_wq_b", 0),
                                  ("kv_a_proj_with_mqa", "mla_wkv_a", 0),
                                  ("kv_b_proj", "mla_wkv_b", 0),
                                  ("q_a_layernorm", "mla_q_norm", 1),
                                  ("kv_a_layernorm", "mla_kv_norm", 1)]:
                m.append((p + f"self_attn.{hf}.weight",
                          lambda g, L=L, kind=kind, vec=vec: g(L(kind)).flatten() if vec
                          else g(L(kind))))
        elif t == "phi3":  # fused: qkv_proj = [q; k; v], gate_up_proj = [gate; up]
            m.append((p + "self_attn.qkv_proj.weight",
                      lambda g, L=L: torch.cat([g(L("wq")), g(L("wk")), g(L("wv"))], 0)))
            m.append((p + "mlp.gate_up_proj.weight",
                      lambda g, L=L: torch.cat([g(L("gate")), g(L("up"))], 0)))
            m.append((p + "mlp.down_proj.weight", lambda g, L=L: g(L("down"))))
            continue
        else:
            # transformers' biases: Qwen2 on q, k, v always; Mistral and
            # Mixtral never; the others on q, k, v and o with attention_bias
            qkv_b = t == "qwen2" or (cfg.get("attention_bias") and t not in ("mistral", "mixtral"))
            for x in "qkv":
                m.append((p + f"self_attn.{x}_proj.weight", lambda g, L=L, x=x: g(L("w" + x))))
                if qkv_b:
                    m.append((p + f"self_attn.{x}_proj.bias",
                              lambda g, L=L, x=x: g(L("b" + x)).flatten()))
            if qkv_b and t != "qwen2":
                m.append((p + "self_attn.o_proj.bias", lambda g, L=L: g(L("bo")).flatten()))
        if t in ("qwen3", "qwen3_moe"):
            m += [(p + "self_attn.q_norm.weight", lambda g, L=L: g(L("q_norm")).flatten()),
                  (p + "self_attn.k_norm.weight", lambda g, L=L: g(L("k_norm")).flatten())]
        if i < dense:
            for hf, kind in [("gate_proj", "gate"), ("up_proj", "up"), ("down_proj", "down")]:
                m.append((p + f"mlp.{hf}.weight", lambda g, L=L, kind=kind: g(L(kind))))
            continue
        m += moe_map(t, p, L, E, cfg)
    return m


def moe_map(t, p, L, E, cfg):
    """An MoE layer's router, routed experts ([E 2 fe, h] gate|up and
    [E h, fe] down in the executor) and DeepSeek's shared expert."""
    router = "mlp.router.weight" if t == "gpt_oss" else "mlp.gate.weight"
    m = [(p + router, lambda g: g(L("router")))]
    if t == "gpt_oss":  # [E, h, 2 fe], gate and up interleaved; down [E, fe, h]
        def w1(g):
            a = g(L("exp_w1")).reshape(E, 2, -1, g(L("exp_w1")).shape[1])
            return torch.stack((a[:, 0], a[:, 1]), dim=2).reshape(E, -1, a.shape[-1]).transpose(1, 2)
        m += [(p + "mlp.experts.gate_up_proj", w1),
              (p + "mlp.experts.down_proj",
               lambda g: g(L("exp_w2")).reshape(E, -1, g(L("exp_w2")).shape[1]).transpose(1, 2))]
        return m
    m += [(p + "mlp.experts.gate_up_proj",
           lambda g: g(L("exp_w1")).reshape(E, -1, g(L("exp_w1")).shape[1])),
          (p + "mlp.experts.down_proj",
           lambda g: g(L("exp_w2")).reshape(E, -1, g(L("exp_w2")).shape[1]))]
    if t == "deepseek_v3" and cfg.get("n_shared_experts", 0):
        for hf, kind in [("gate_proj", "sh_gate"), ("up_proj", "sh_up"), ("down_proj", "sh_down")]:
            m.append((p + f"mlp.shared_experts.{hf}.weight", lambda g, kind=kind: g(L(kind))))
    return m


def gpt2_map(n_layers):
    """GPT-2's Conv1D weights are [in, out]: the executor's [out, in] transposed."""
    m = [("transformer.wte.weight", lambda g: g(GLOBAL["embed"])),
         ("transformer.wpe.weight", lambda g: g(GLOBAL["pos"])),
         ("transformer.ln_f.weight", lambda g: g(GLOBAL["norm_w"]).flatten()),
         ("transformer.ln_f.bias", lambda g: g(GLOBAL["norm_b"]).flatten())]
    for i in range(n_layers):
        p = f"transformer.h.{i}."
        L = lambda kind, i=i: lid(i, kind)
        m += [(p + "ln_1.weight", lambda g, L=L: g(L("ln1_w")).flatten()),
              (p + "ln_1.bias", lambda g, L=L: g(L("ln1_b")).flatten()),
              (p + "ln_2.weight", lambda g, L=L: g(L("ln2_w")).flatten()),
              (p + "ln_2.bias", lambda g, L=L: g(L("ln2_b")).flatten()),
              (p + "attn.c_attn.weight",
               lambda g, L=L: torch.cat([g(L("wq")), g(L("wk")), g(L("wv"))]).T.contiguous()),
              (p + "attn.c_attn.bias",
               lambda g, L=L: torch.cat([g(L("bq")), g(L("bk")), g(L("bv"))]).flatten()),
              (p + "attn.c_proj.weight", lambda g, L=L: g(L("wo")).T.contiguous()),
              (p + "attn.c_proj.bias", lambda g, L=L: g(L("bo")).flatten()),
              (p + "mlp.c_fc.weight", lambda g, L=L: g(L("fc")).T.contiguous()),
              (p + "mlp.c_fc.bias", lambda g, L=L: g(L("b_fc")).flatten()),
              (p + "mlp.c_proj.weight", lambda g, L=L: g(L("down")).T.contiguous()),
              (p + "mlp.c_proj.bias", lambda g, L=L: g(L("b_down")).flatten())]
    return m


def to_hf(mapping, tensors, check_all=False):
    """The executor's tensors in transformers' names; check_all: every
    executor tensor must have a transformers counterpart."""
    used = set()

    def get(tid):
        used.add(tid)
        return as_torch(tensors[tid])
    out = {name: fn(get) for name, fn in mapping}
    if check_all and set(tensors) - used:
        raise RuntimeError(f"executor tensors with no transformers parameter: "
                           f"{sorted(set(tensors) - used)}")
    return out


def n_layers_of(cfg):
    return cfg.get("num_hidden_layers", cfg.get("n_layer"))


def hf_step(cfg, w0):
    """transformers' loss, gradients and one AdamW step from weights w0 (in
    its names); parameters the executor lacks keep neutral values (zero
    biases, sinks at -inf: no attention mass) and are not compared."""
    hf_cfg = transformers.AutoConfig.for_model(**{k: v for k, v in cfg.items()})
    hf_cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_cfg, dtype=torch.float32)
    model.eval()   # no dropout: the executor has none
    params = dict(model.named_parameters())
    missing = [n for n in w0 if n not in params]
    if missing:
        raise RuntimeError(f"no transformers parameter {missing[0]}")
    with torch.no_grad():
        for n, p in params.items():
            if n in w0:
                src = w0[n]
                if src.shape != p.shape:  # GPT-2's position table: the executor's rows first
                    p.zero_()
                    p[:src.shape[0]].copy_(src)
                else:
                    p.copy_(src)
            elif n.endswith("sinks"):
                p.fill_(-math.inf)
            else:
                p.zero_()
    ids = torch.tensor(px_run.tokens(cfg["vocab_size"]), dtype=torch.long)
    x = torch.stack([ids[g * px_run.SEQ:(g + 1) * px_run.SEQ] for g in range(px_run.GB)])
    y = torch.stack([ids[g * px_run.SEQ + 1:(g + 1) * px_run.SEQ + 1] for g in range(px_run.GB)])
    logits = model(input_ids=x).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()
    grads = {n: params[n].grad.detach().clone() for n in w0}
    # the HF Trainer's groups: no weight decay on norms and biases (1-D)
    groups = [{"params": [params[n] for n in w0 if params[n].dim() >= 2]},
              {"params": [params[n] for n in w0 if params[n].dim() < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=px_run.LR, betas=px_run.BETAS, eps=px_run.ADAM_EPS,
                            weight_decay=px_run.WEIGHT_DECAY)
    opt.step()
    w1 = {n: params[n].detach().clone() for n in w0}
    return loss.item(), grads, w1


def crop(a, like):
    return a[:like.shape[0]] if a.shape != like.shape else a


def layer_of_name(name):
    """The layer a transformers parameter belongs to (None: outside layers)."""
    parts = name.split(".")
    for i, p in enumerate(parts[:-1]):
        if p in ("layers", "h") and parts[i + 1].isdigit():
            return int(parts[i + 1])
    return None


def layer_scales(maxima, layer_of):
    """Each tensor's gradient scale: the largest gradient of its layer (a
    tensor outside the layers: its own).  Rounding errors are relative to
    the terms a gradient sums, which are of the layer's size even where
    they cancel (GPT-2's key bias: exactly zero, computed as ~1e-9)."""
    top = {}
    for n, m in maxima.items():
        k = layer_of(n)
        if k is not None:
            top[k] = max(top.get(k, 0.0), m)
    return {n: (top[layer_of(n)] if layer_of(n) is not None else m) or 1.0
            for n, m in maxima.items()}


def compare(cfg, ex, w0, hf_loss, hf_g, hf_w1, mapping):
    """Loss, gradient and update errors and whether each is in its bound."""
    tol = px_run.tolerances(cfg)
    loss_err = abs(ex["loss"] - hf_loss) / abs(hf_loss)
    g_ex = to_hf(mapping, ex["grads"])
    w1_ex = to_hf(mapping, ex["p1"])
    slack = {}
    if "grad_slack" in ex:  # a split's recovered gradients: each element's own slack
        slack = to_hf(mapping, {t: (R, C, ex["grad_slack"][t])
                                for t, (R, C, _) in ex["grads"].items()})
    grad_err, grad_ok, upd_err, upd_ok, worst = 0.0, True, 0.0, True, ""
    scales = layer_scales({n: float(g.abs().max()) for n, g in hf_g.items()}, layer_of_name)
    for n, g_ref in hf_g.items():
        ge = g_ex[n]
        g_ref = crop(g_ref, ge)
        scale = scales[n]
        d = (ge - g_ref).abs()
        allowed = tol["grad_rel"] * scale + (slack[n].to(torch.float64) if n in slack else 0.0)
        err = float(d.max()) / scale
        if err > grad_err:
            grad_err, worst = err, n
        grad_ok = grad_ok and bool((d <= allowed).all())
        w_ref = crop(hf_w1[n], w1_ex[n]).to(torch.float64)
        dg = tol["grad_rel"] * scale
        gr = g_ref.to(torch.float64).abs()
        lo = gr - dg
        slope = dg * px_run.ADAM_EPS / ((lo.clamp(min=0) + px_run.ADAM_EPS) ** 2)
        # rounding: a few ulps of the largest value the step handles (the
        # weight before and after, and the step itself, up to lr)
        big = torch.maximum(crop(w0[n], w_ref).to(torch.float64).abs(), w_ref.abs())
        bound = px_run.LR * torch.where(lo > 0, slope, torch.full_like(gr, 2.0)) \
            + 4 * 2.0 ** -23 * big.clamp(min=px_run.LR)   # px_run.update_bound
        du = (w1_ex[n].to(torch.float64) - w_ref).abs()
        upd_err = max(upd_err, float(du.max()) / px_run.LR)
        upd_ok = upd_ok and bool((du <= bound).all())
    return {"loss_rel_err": loss_err, "loss_ok": loss_err <= tol["loss_rel"],
            "grad_err": grad_err, "grad_ok": grad_ok, "grad_worst": worst,
            "update_err_lr": upd_err, "update_ok": upd_ok, "tol": tol}


def run_case(build, name, mtype, changes, layout, work):
    cfg = px_run.config(mtype, **changes)
    ex = px_run.execute(build, cfg, layout, work)
    mapping = hf_map(cfg, n_layers_of(cfg))
    w0 = to_hf(mapping, ex["p0"], check_all=True)
    hf_loss, hf_g, hf_w1 = hf_step(cfg, w0)
    r = compare(cfg, ex, w0, hf_loss, hf_g, hf_w1, mapping)
    r.update(name=name, model_type=cfg["model_type"], layout=layout[0], exec_loss=ex["loss"],
             hf_loss=hf_loss, grad_source=ex["grad_source"])
    agree = r["loss_ok"] and r["grad_ok"] and r["update_ok"]
    known = NOT_CARRIED.get(name)
    if agree:
        r["verdict"] = "agrees" + (f" (listed as not carried: {known})" if known else "")
    elif known:
        r["verdict"] = "known difference: " + known
    else:
        r["verdict"] = "FAIL"
    r["failed"] = not agree and not known
    return r, cfg, ex, hf_g, hf_w1, mapping


def exec_index(mapping, tensors):
    """For every transformers parameter, the executor's (tensor id, flat
    element index) of each element: the mapping applied to index tensors."""
    ids, base, tids = {}, 0, sorted(tensors)
    for tid in tids:
        R, C, _ = tensors[tid]
        ids[tid] = torch.arange(base, base + R * C, dtype=torch.float64).reshape(R, C)
        base += R * C
    starts = {tid: (int(ids[tid][0, 0]), tensors[tid][0] * tensors[tid][1]) for tid in tids}
    return {name: fn(lambda t: ids[t]).to(torch.int64) for name, fn in mapping}, starts


def data_record(r, cfg, ex, hf_g, hf_w1, mapping, picks=8):
    """What ci_reference.py needs, in the executor's tensor ids: the config,
    transformers' loss, and per tensor its largest gradient, its gradient's
    L2 norm, its layer's largest gradient (the scale of its bound) and, at `picks` elements (the largest gradients first, then
    spread over the tensor), transformers' gradient and updated weight."""
    index, starts = exec_index(mapping, ex["p0"])
    total = sum(n for _, n in starts.values())
    g_flat = torch.zeros(total, dtype=torch.float64)
    w_flat = torch.zeros(total, dtype=torch.float64)
    for n, idx in index.items():
        g_flat[idx.flatten()] = crop(hf_g[n], idx).flatten().double()
        w_flat[idx.flatten()] = crop(hf_w1[n], idx).flatten().double()
    tensors = {}
    scales = layer_scales({tid: float(g_flat[b:b + n].abs().max())
                           for tid, (b, n) in starts.items()}, px_run.layer_of_tid)
    for tid, (b, n) in starts.items():
        g, w = g_flat[b:b + n], w_flat[b:b + n]
        order = g.abs().argsort(descending=True)
        pick = sorted(set(order[:picks // 2].tolist()) |
                      set(range(0, n, max(1, n // (picks - picks // 2)))))[:picks]
        tensors[str(tid)] = {"n": n, "grad_max": float(g.abs().max()), "grad_scale": scales[tid],
                             "grad_norm": float(g.norm()), "index": pick,
                             "grad": [float(g[i]) for i in pick],
                             "updated": [float(w[i]) for i in pick]}
    return {"name": r["name"], "config": cfg, "layout": "1 rank", "loss": r["hf_loss"],
            "source": f"transformers {transformers.__version__}, torch {torch.__version__}, "
                      "fp32 (tests/hf_reference/hf_reference.py --write-data)",
            "tensors": tensors}


def table(rows):
    head = ("| case | model type | layout | loss (execute) | loss rel err | max grad err "
            "| max update err (lr) | verdict |\n| --- | --- | --- | --- | --- | --- | --- | --- |")
    lines = [head]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['model_type']} | {r['layout']} | - | - | - | - "
                         f"| {r['verdict']} |")
            continue
        lines.append(f"| {r['name']} | {r['model_type']} | {r['layout']} | {r['exec_loss']:.7f} "
                     f"| {r['loss_rel_err']:.1e} (≤ {r['tol']['loss_rel']:.1e}) "
                     f"| {r['grad_err']:.1e} (≤ {r['tol']['grad_rel']:.1e}) "
                     f"| {r['update_err_lr']:.1e} | {r['verdict']} |")
    return "\n".join(lines)


def main():
    build = sys.argv[1]
    md = sys.argv[sys.argv.index("--markdown") + 1] if "--markdown" in sys.argv else None
    data_dir = sys.argv[sys.argv.index("--write-data") + 1] if "--write-data" in sys.argv else None
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    rows, failed = [], 0
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="px-hfref-") as tmp:
        for i, (name, mtype, changes, layout) in enumerate(CASES):
            if only and only != name:
                continue
            work = os.path.join(tmp, f"case{i}")
            try:
                r, cfg, ex, hf_g, hf_w1, mapping = run_case(build, name, mtype, changes, layout, work)
            except (px_run.ExecError, RuntimeError, ValueError, KeyError) as e:
                known = NOT_CARRIED.get(name)
                named = REFUSED_BY_NAME.get(name)
                if named and isinstance(e, px_run.ExecError) and named in str(e):
                    verdict = "refused by name: " + str(e)
                else:
                    verdict = (f"known difference: {known}; " if known else "FAIL: ") + str(e)
                r = {"name": name, "model_type": mtype, "layout": layout[0], "error": str(e),
                     "verdict": verdict, "failed": verdict.startswith("FAIL")}
            rows.append(r)
            failed += r["failed"]
            print(f"{'FAIL' if r['failed'] else 'ok  '} {name} [{layout[0]}]: {r['verdict']}",
                  flush=True)
            if data_dir and name in DATA_CASES and layout is px_run.ONE_RANK and "error" not in r:
                os.makedirs(data_dir, exist_ok=True)
                path = os.path.join(data_dir, name.replace(" ", "_") + ".json")
                px_run.write_json(path, data_record(r, cfg, ex, hf_g, hf_w1, mapping))
    text = table(rows)
    print(text)
    print(f"# transformers {transformers.__version__}, torch {torch.__version__}; "
          f"{len(rows)} cases, {failed} failed, {time.time() - t0:.0f} s")
    if md:
        with open(md + ".tmp", "w") as f:
            f.write(text + "\n")
        os.replace(md + ".tmp", md)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
