"""The executor's side of the Hugging Face reference checks, without torch:
the tiny model configs, `plan` + `execute` runs on them, the dumped weights,
the gradients (AdamW's first moment after one step, or recovered through one
step) and the fp32 tolerances.  Used by hf_reference.py (against
transformers) and ci_reference.py (against the stored reference numbers).

Every run: a Hugging Face config.json in a temporary folder, `plan --model
DIR` with the layout fixed, then `execute --dtype fp32 --steps 1 --warmup 0`
on the same token file (global batch GB sequences of SEQ tokens)."""
import array, copy, json, math, os, struct, subprocess, sys

SEQ, GB, MB = 16, 4, 2          # tokens a sequence, sequences a step, micro-batch
INIT_STD = 0.125                # 1 / sqrt(hidden): attention logits of order 1,
                                # so RoPE, norms and routing all move the loss
LR, ADAM_EPS = 1e-3, 1e-8       # the update checked against torch.optim.AdamW
BETAS, WEIGHT_DECAY = (0.9, 0.95), 0.1   # AdamW; weight decay on the matrices only:
                                         # norms and biases ([n, 1] tensors) undecayed
REC_LR, REC_EPS = 1.0, 1.0      # the step that recovers gradients on a split
U32 = 2.0 ** -24                # fp32 unit roundoff
BACKEND = os.environ.get("PX_HFREF_BACKEND", "cpu")   # execute --backend

# Small instances: h 64, 4 heads (2 kv heads), 2 layers, vocabulary 128.
# The base configs write rope_theta 1e4, norm eps 1e-5 and rotate-half RoPE
# (the tiny presets' values); hf_reference.py's probes change one field to a
# released model's value.
_LLAMA = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 128,
          "max_position_embeddings": 64, "rope_theta": 10000.0, "rms_norm_eps": 1e-5,
          "tie_word_embeddings": False, "attention_bias": False}
_MOE = {"moe_intermediate_size": 32, "num_experts_per_tok": 2}
BASE = {
    "llama": dict(_LLAMA),
    "mistral": dict(_LLAMA, sliding_window=None),
    "qwen2": {k: v for k, v in dict(_LLAMA, use_sliding_window=False, sliding_window=None).items()
              if k != "attention_bias"},   # Qwen2's q/k/v always have biases
    "qwen3": dict(_LLAMA, head_dim=16, use_sliding_window=False, sliding_window=None),
    "qwen3_moe": dict(_LLAMA, **_MOE, head_dim=16, num_experts=4, norm_topk_prob=False,
                      decoder_sparse_step=1, mlp_only_layers=[]),
    "mixtral": dict(_LLAMA, num_local_experts=4, num_experts_per_tok=2, sliding_window=None),
    "deepseek_v3": dict(_LLAMA, **_MOE, num_key_value_heads=4, n_routed_experts=4,
                        n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=32,
                        kv_lora_rank=16, qk_nope_head_dim=16, qk_rope_head_dim=8,
                        v_head_dim=16, n_group=1, topk_group=1, rope_interleave=False,
                        num_nextn_predict_layers=0),
    "gpt_oss": dict(_LLAMA, head_dim=16, intermediate_size=32, num_local_experts=4,
                    num_experts_per_tok=2, sliding_window=128, attention_bias=True,
                    layer_types=["full_attention", "full_attention"]),
    # Phi-3: q, k, v and gate, up stacked in one matrix each; no padding row
    # (its default pad_token_id is outside a 128-token vocabulary)
    "phi3": {k: v for k, v in dict(_LLAMA, sliding_window=None, pad_token_id=None,
                                   bos_token_id=None, eos_token_id=None,
                                   resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0,
                                   hidden_act="silu").items() if k != "attention_bias"},
    # Gemma 2: GeGLU, (1 + w) norms, a scaled embedding, soft-capping
    "gemma2": dict(_LLAMA, head_dim=16, hidden_activation="gelu_pytorch_tanh",
                   query_pre_attn_scalar=16, sliding_window=None, tie_word_embeddings=True,
                   layer_types=["full_attention", "full_attention"]),
    "gemma": dict(_LLAMA, head_dim=16, hidden_activation="gelu_pytorch_tanh",
                  tie_word_embeddings=True),
    "gemma3_text": dict(_LLAMA, head_dim=16, hidden_activation="gelu_pytorch_tanh",
                        query_pre_attn_scalar=16, sliding_window=None, tie_word_embeddings=True,
                        layer_types=["full_attention", "full_attention"]),
    "gpt2": {"n_embd": 64, "n_layer": 2, "n_head": 4, "n_inner": 256, "vocab_size": 128,
             "n_positions": 64, "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True,
             "activation_function": "gelu_new", "resid_pdrop": 0.0, "embd_pdrop": 0.0,
             "attn_pdrop": 0.0},   # the executor has no dropout
}
def config(model_type, **changes):
    """The config.json of a case: the base of model_type with changes."""
    cfg = copy.deepcopy(BASE[model_type])
    cfg.update(changes)
    cfg["model_type"] = model_type
    return cfg


# Layouts: (label, ranks, plan flags).  The split layouts fix every dimension.
ONE_RANK = ("1 rank", 1, [])
SPLIT_TPPPDP = ("TP2 PP2 DP2 ZeRO-3", 8, ["--tp", "2", "--pp", "2", "--dp", "2", "--zero", "3",
                                         "--micro-batch", "1", "--micro-batches", "2",
                                         "--schedule", "1f1b"])
SPLIT_CP = ("CP2 DP2", 4, ["--cp", "2", "--dp", "2", "--tp", "1", "--pp", "1",
                           "--micro-batch", "1", "--micro-batches", "2"])  # a dense model's
SPLIT_EPCP = ("EP2 CP2", 2, ["--ep", "2", "--cp", "2", "--tp", "1", "--pp", "1", "--dp", "1",
                             "--micro-batch", "2", "--micro-batches", "2"])


def tokens(vocab, seed=7):
    """GB windows of SEQ + 1 ids (a fixed LCG: the same on every machine)."""
    x, ids = seed, []
    for _ in range(GB * SEQ + 1):
        x = (x * 1103515245 + 12345) % 2 ** 31
        ids.append((x >> 8) % vocab)
    return ids


class ExecError(Exception):
    pass


def _run(args, env=None):
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    if r.returncode:
        raise ExecError(f"{os.path.basename(args[0])} exited {r.returncode}: "
                        f"{(r.stderr.strip() or r.stdout.strip()).splitlines()[-1:]}")
    return r.stdout


def read_dump(folder):
    """Full tensors {tensor_id: (rows, cols, array('f'))} from every rank's
    rank<R>.bin / .tsv slices; a tensor some rank does not cover raises."""
    full, seen = {}, {}
    ranks = sorted(f for f in os.listdir(folder) if f.endswith(".tsv"))
    for tsv in ranks:
        buf = array.array("f")
        with open(os.path.join(folder, tsv[:-4] + ".bin"), "rb") as f:
            buf.frombytes(f.read())
        if sys.byteorder != "little":
            buf.byteswap()
        for line in open(os.path.join(folder, tsv)):
            tid, R, C, r0, nr, c0, nc, off = map(int, line.split())
            if tid not in full:
                full[tid] = (R, C, array.array("f", bytes(4 * R * C)))
                seen[tid] = bytearray(R * C)
            t = full[tid][2]
            for r in range(nr):
                dst = (r0 + r) * C + c0
                src = off + r * nc
                t[dst:dst + nc] = buf[src:src + nc]
                seen[tid][dst:dst + nc] = b"\1" * nc
    for tid, s in seen.items():
        if 0 in s:
            raise ExecError(f"{folder}: tensor {tid}: some elements are on no rank")
    return full


def read_first_moment(ckpt, dump):
    """One rank, no ZeRO: the gradient of every tensor, exactly, from the
    checkpoint's AdamW first moment m = (1 - beta1) g after the first step
    (laid out as the weights: the dump's offsets)."""
    it = open(os.path.join(ckpt, "latest")).read().strip()
    raw = open(os.path.join(ckpt, it, "rank00000.bin"), "rb").read()
    hdr = struct.unpack("=8sII7q", raw[:72])
    n_w, n_m, wbytes, master = hdr[5], hdr[6], hdr[7], hdr[8]
    off = 72 + n_w * wbytes + (n_m * 4 if master else 0)
    m = array.array("f")
    m.frombytes(raw[off:off + 4 * n_m])
    one_minus_b1 = struct.unpack("f", struct.pack("f", 1.0 - struct.unpack(
        "f", struct.pack("f", BETAS[0]))[0]))[0]   # (1.0f - 0.9f) as the kernel has it
    grads = {}
    for line in open(os.path.join(dump, "rank0.tsv")):
        tid, R, C, r0, nr, c0, nc, o = map(int, line.split())
        if (nr, nc) != (R, C):
            raise ExecError("first moment: a one-rank run holds whole tensors")
        grads[tid] = (R, C, array.array("f", (x / one_minus_b1 for x in m[o:o + R * C])))
    return grads


def execute(build, cfg, layout, work, want_recovery=False):
    """Runs plan + execute for one case; returns a dict: loss, p0 (initial
    weights), p1 (after one AdamW step at LR, ADAM_EPS), grads (one rank:
    the first moment; a split: recovered at REC_LR, REC_EPS) and the plan's
    model as the executor read it."""
    label, ranks, flags = layout
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "config.json"), "w") as f:
        json.dump(cfg, f)
    ids = tokens(cfg["vocab_size"])
    with open(os.path.join(work, "tokens.bin"), "wb") as f:
        f.write(struct.pack("<%dI" % len(ids), *ids))
    plan_flags = flags if flags else ["--micro-batch", str(MB), "--micro-batches", str(GB // MB),
                                      "--tp", "1", "--pp", "1", "--dp", "1", "--cp", "1"]
    _run([os.path.join(build, "plan"), "--model", work, "--gpus", str(ranks), "--seq", str(SEQ),
          "--global-batch", str(GB), "--no-milp", "--recompute", "none", *plan_flags,
          "-o", os.path.join(work, "plan.json")])
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    launch = [] if ranks == 1 else ["mpirun", "--oversubscribe", "-np", str(ranks)]

    def step(tag, lr, eps, extra=()):
        d = os.path.join(work, tag)
        _run([*launch, os.path.join(build, "execute"), "--plan", os.path.join(work, "plan.json"),
              "--dtype", "fp32", "--steps", "1", "--warmup", "0", "--init-std", repr(INIT_STD),
              "--data", os.path.join(work, "tokens.bin"), "--lr", repr(lr), "--adam-eps",
              repr(eps), "--adam-beta1", repr(BETAS[0]), "--adam-beta2", repr(BETAS[1]),
              "--weight-decay", repr(WEIGHT_DECAY), "--dump-weights", d + ".w",
              "--report", d + ".json", "--backend", BACKEND, *extra], env)
        return json.load(open(d + ".json"))["losses"][0], read_dump(d + ".w")

    ck = os.path.join(work, "ck")
    loss, p0 = step("lr0", 0.0, ADAM_EPS, ["--save", ck, "--save-interval", "1"] if ranks == 1 else [])
    _, p1 = step("step", LR, ADAM_EPS)
    out = {"loss": loss, "p0": p0, "p1": p1,
           "model": json.load(open(os.path.join(work, "plan.json")))["model"]}
    if ranks == 1:
        out["grads"] = read_first_moment(ck, os.path.join(work, "lr0.w"))
        out["grad_source"] = "first moment"
    else:
        _, pr = step("rec", REC_LR, REC_EPS)
        out["grads"], out["grad_slack"] = recover_grads(p0, pr)
        out["grad_source"] = "recovered"
    return out


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def ulp(x):
    """Spacing of fp32 numbers at |x|."""
    x = abs(x)
    if x < 2.0 ** -126:
        return 2.0 ** -149
    return 2.0 ** (math.floor(math.log2(x)) - 23)


def recover_grads(p0, p1):
    """Gradients from one AdamW step at REC_LR, REC_EPS (step 1: the update is
    lr (g / (|g| + eps) + wd p0), wd 0 on [n, 1] tensors): u = g / (|g| + eps), g = eps u / (1 - |u|).
    Also each element's slack: the fp32 rounding of that step (a few ulps of
    the weights, REC_LR = 1) carried through the inverse's slope
    eps / (1 - |u|)^2."""
    grads, slack = {}, {}
    for tid, (R, C, a) in p0.items():
        b = p1[tid][2]
        wd = WEIGHT_DECAY if C > 1 else 0.0
        g, s = array.array("f"), array.array("f")
        for x0, x1 in zip(a, b):
            u = (x0 - x1) / REC_LR - wd * x0
            u = max(-0.999999, min(0.999999, u))
            d = 1.0 - abs(u)
            g.append(REC_EPS * u / d)
            s.append(REC_EPS * 4 * (ulp(x0) + ulp(x1)) / REC_LR / (d * d))
        grads[tid], slack[tid] = (R, C, g), s
    return grads, slack


def reduction_length(cfg):
    """The longest sum in one step (a GEMM's inner dimension, a softmax over
    the vocabulary or the keys, the batch's tokens for a weight gradient)."""
    h = cfg.get("hidden_size", cfg.get("n_embd"))
    f = cfg.get("intermediate_size", cfg.get("n_inner") or 4 * h)
    return max(h, f, cfg["vocab_size"], SEQ, GB * SEQ)


def depth(cfg):
    """Roundings in sequence from input to loss: per layer 2 norms, the
    q/k/v (and MLA latent) projections, the two attention products, o, and
    the MLP's two GEMMs and its activation (about 10); the embedding, final
    norm, LM head and cross-entropy."""
    return 10 * cfg.get("num_hidden_layers", cfg.get("n_layer")) + 4


def tolerances(cfg):
    """fp32 bounds: the loss to D u sqrt(K) relative (D roundings in a row,
    each a sum of K terms with random-walk rounding, u = 2^-24); a gradient,
    twice as deep (forward, then backward), to 2 D u sqrt(K) of its tensor's
    layer's largest gradient (hf_reference.layer_scales)."""
    base = depth(cfg) * U32 * math.sqrt(reduction_length(cfg))
    return {"loss_rel": base, "grad_rel": 2 * base}


def layer_of_tid(tid):
    """The layer of an executor tensor id (None: embeddings, final norm, head)."""
    return (tid - 100) // 32 if tid >= 100 else None


def update_bound(g, w0, w1, dg, lr=LR, eps=ADAM_EPS):
    """How far one AdamW update of a weight can move when its gradient g is
    known to dg: lr times the change of g / (|g| + eps) over [|g| - dg,
    |g| + dg] (its slope eps / (|g| - dg + eps)^2; up to 2 when the sign is
    unknown), plus 4 ulps of the largest value the step handles (the weight
    before and after, the step itself up to lr)."""
    lo = abs(g) - dg
    du = 2.0 if lo <= 0 else dg * eps / ((lo + eps) * (lo + eps))
    return lr * du + 4 * 2.0 ** -23 * max(abs(w0), abs(w1), lr)


def write_json(path, record):
    """record as JSON, one line per tensor entry (small diffs), atomically."""
    tensors = record.get("tensors", {})
    head = {k: v for k, v in record.items() if k != "tensors"}
    text = json.dumps(head, indent=1)[:-2]
    if tensors:
        text += ',\n "tensors": {\n' + ",\n".join(
            f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in tensors.items()) + "\n }"
    text += "\n}\n"
    json.loads(text)
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
