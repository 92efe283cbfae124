/* px_export_formats.c — the writers of build/export: Megatron-LM arguments,
 * a Megatron-Bridge / NeMo 2 YAML override, a torchtitan TOML job, a
 * DeepSpeed JSON config and an sbatch script (docs/export.md maps every
 * field). */
#include "px_export_formats.h"
#include "px_export_finetune.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "px_plan_check.h"

/* ---- shared facts of a plan ------------------------------------------ */

typedef struct {
    int64_t seq, gbatch, layers_per_chunk;
    int gpus, nodes, per_node; /* per_node 0: the GPUs do not fill whole nodes */
    bool uneven;               /* layers per stage differ (vpp 1) */
    int first_layers, last_layers;
    px_recompute recompute;    /* uniform choice */
    bool bf16;                 /* the profile's compute dtype */
} plan_facts;

static void facts_of(const px_plan *plan, plan_facts *f)
{
    const px_parallel *p = &plan->par;
    memset(f, 0, sizeof *f);
    f->seq = px_plan_seq_len(&plan->model, p);
    f->gbatch = px_parallel_global_batch(p);
    f->gpus = px_parallel_gpus(p);
    int gpn = plan->hw.gpus_per_node > 0 ? plan->hw.gpus_per_node : 1;
    f->nodes = (f->gpus + gpn - 1) / gpn;
    f->per_node = f->gpus < gpn ? f->gpus : f->gpus % gpn == 0 ? gpn : 0;
    f->layers_per_chunk = plan->model.n_layers / (p->pp * p->vpp);
    for (int i = 1; i < p->n_chunks; i++)
        f->uneven = f->uneven || p->layers_per_chunk[i] != p->layers_per_chunk[0];
    if (f->uneven) {
        f->first_layers = p->layers_per_chunk[0];
        f->last_layers = p->layers_per_chunk[p->n_chunks - 1];
    }
    f->recompute = p->n_layer_recompute > 0 ? (px_recompute)p->layer_recompute[0] : p->recompute;
    if (f->recompute >= PX_RECOMPUTE_COUNT)
        f->recompute = PX_RECOMPUTE_NONE;
    f->bf16 = plan->hw.dtype_bytes == 2;
}

/* A name safe inside comments, YAML and shell words: [A-Za-z0-9._-]. */
static void safe_name(const char *s, char *out, size_t n)
{
    size_t i = 0;
    for (; s[i] && i + 1 < n; i++)
        out[i] = isalnum((unsigned char)s[i]) || strchr("._-", s[i]) ? s[i] : '_';
    out[i] = '\0';
}

/* Megatron names a split by its first and last stage when the middle
 * stages hold equal counts (vpp 1); any other split is a layout string. */
static bool first_last_split(const px_parallel *p)
{
    if (p->vpp > 1)
        return false;
    for (int i = 2; i < p->n_chunks - 1; i++)
        if (p->layers_per_chunk[i] != p->layers_per_chunk[1])
            return false;
    return true;
}

static bool recompute_mixed(const px_parallel *p)
{
    for (int i = 1; i < p->n_layer_recompute; i++)
        if (p->layer_recompute[i] != p->layer_recompute[0])
            return true;
    return false;
}

/* Megatron's per-layer recompute (--recompute-method block
 * --recompute-num-layers N): full recompute of the first N layers of every
 * pipeline chunk, none for the rest.  Returns N, or -1 when the plan's
 * choices are not of that form. */
static int block_recompute_layers(const px_plan *plan)
{
    const px_parallel *p = &plan->par;
    int chunks = p->pp * p->vpp, first = 0, n = -1;
    for (int c = 0; c < chunks; c++) {
        int len = p->n_chunks > 0 ? p->layers_per_chunk[c]
                                  : (int)(plan->model.n_layers / chunks);
        int k = 0;
        while (k < len && first + k < p->n_layer_recompute &&
               p->layer_recompute[first + k] == PX_RECOMPUTE_FULL)
            k++;
        for (int i = k; i < len; i++)
            if (first + i >= p->n_layer_recompute ||
                p->layer_recompute[first + i] != PX_RECOMPUTE_NONE)
                return -1;
        if (n >= 0 && k != n)
            return -1;
        n = k;
        first += len;
    }
    return n;
}

static px_status format_refuse(px_error *err, px_export_target t, const char *what)
{
    return PX_FAIL(err, PX_ERR_UNSUPPORTED, "%s cannot run this plan as exported: %s",
                   px_export_target_name(t), what);
}

px_status px_export_format_check(const px_plan *plan, px_export_target t, px_error *err)
{
    const px_parallel *p = &plan->par;
    plan_facts f;
    facts_of(plan, &f);
    px_status st = px_export_finetune_check(plan, t, err);
    if (st != PX_OK)
        return st;
    bool uneven = false;
    for (int i = 1; i < p->n_chunks; i++)
        uneven = uneven || p->layers_per_chunk[i] != p->layers_per_chunk[0];
    switch (t) {
    case PX_EXPORT_MEGATRON:
    case PX_EXPORT_NEMO:
        if (recompute_mixed(p) && block_recompute_layers(plan) < 0)
            return format_refuse(err, t, "a recompute choice per layer other than full "
                                         "recompute of the first N layers of every stage "
                                         "(--recompute-method block); plan with "
                                         "--partition uniform");
        return PX_OK;
    case PX_EXPORT_TORCHTITAN:
        if (recompute_mixed(p))
            return format_refuse(err, t, "a recompute choice per layer; plan with "
                                         "--partition uniform");
        if (p->pp > 1 && p->schedule == PX_SCHED_ZB_H1 && p->vpp < 2)
            return format_refuse(err, t, "zb-h1 with one chunk a stage (torchtitan's "
                                         "zero-bubble schedule, InterleavedZeroBubble, needs "
                                         "VPP >= 2)");
        return PX_OK;
    case PX_EXPORT_DEEPSPEED:
        if (p->pp > 1 && p->zero >= 2)
            return format_refuse(err, t, p->zero == 2 ? "ZeRO stage 2 with pipeline "
                                                        "parallelism (DeepSpeed's pipeline "
                                                        "engine runs ZeRO 0 and 1)"
                                                      : "ZeRO stage 3 with pipeline "
                                                        "parallelism (DeepSpeed's pipeline "
                                                        "engine runs ZeRO 0 and 1)");
        if (p->ep > 1)
            return format_refuse(err, t, "expert parallelism (no DeepSpeed config key: the "
                                         "MoE layers take ep_size in the model code, "
                                         "Megatron-DeepSpeed from the megatron export)");
        if (uneven)
            return format_refuse(err, t, "an uneven pipeline split (the config partitions "
                                         "uniformly); plan with --partition uniform");
        return PX_OK;
    default:
        return PX_OK;
    }
}

/* ---- Megatron-LM --------------------------------------------------------- */

static void arg(px_buf *b, const char *flag) { px_buf_printf(b, "%s\n", flag); }
static void arg_i(px_buf *b, const char *flag, int64_t v)
{
    px_buf_printf(b, "%s %lld\n", flag, (long long)v);
}

static void megatron_model(const px_model *m, px_buf *b)
{
    arg_i(b, "--num-layers", m->n_layers);
    arg_i(b, "--hidden-size", m->hidden);
    arg_i(b, "--ffn-hidden-size", m->ffn);
    arg_i(b, "--num-attention-heads", m->n_heads);
    if (m->n_kv_heads > 0 && m->n_kv_heads < m->n_heads) {
        arg(b, "--group-query-attention");
        arg_i(b, "--num-query-groups", m->n_kv_heads);
    }
    if (m->head_dim > 0 && m->head_dim * m->n_heads != m->hidden)
        arg_i(b, "--kv-channels", m->head_dim);
    if (m->block == PX_BLOCK_LLAMA) {
        arg(b, "--normalization RMSNorm");
        arg(b, "--swiglu");
        arg(b, "--position-embedding-type rope");
        arg(b, m->qkv_bias ? "--add-qkv-bias" : "--disable-bias-linear");
    } else {
        arg(b, "--normalization LayerNorm");
        arg(b, "--position-embedding-type learned_absolute");
    }
    if (!m->tied_embeddings)
        arg(b, "--untie-embeddings-and-output-weights");
    if (m->qk_norm)
        arg(b, "--qk-layernorm");
    if (m->n_experts > 0) {
        arg_i(b, "--num-experts", m->n_experts);
        arg_i(b, "--moe-router-topk", m->top_k);
        arg_i(b, "--moe-ffn-hidden-size", m->moe_ffn);
        if (m->n_shared_experts > 0)
            arg_i(b, "--moe-shared-expert-intermediate-size", m->n_shared_experts * m->moe_ffn);
        if (m->first_dense_layers > 0)
            px_buf_printf(b, "--moe-layer-freq ([0]*%lld+[1]*%lld)\n",
                          (long long)m->first_dense_layers,
                          (long long)(m->n_layers - m->first_dense_layers));
        else if (m->moe_layer_freq > 1)
            arg_i(b, "--moe-layer-freq", m->moe_layer_freq);
    }
    if (m->attn == PX_ATTN_MLA) {
        arg(b, "--multi-latent-attention");
        if (m->q_lora_rank > 0)
            arg_i(b, "--q-lora-rank", m->q_lora_rank);
        arg_i(b, "--kv-lora-rank", m->kv_lora_rank);
        arg_i(b, "--qk-head-dim", m->qk_nope_head_dim);
        arg_i(b, "--qk-pos-emb-head-dim", m->qk_rope_head_dim);
        arg_i(b, "--v-head-dim", m->v_head_dim);
    }
    if (m->n_mtp_modules > 0)
        arg_i(b, "--mtp-num-layers", m->n_mtp_modules);
    arg(b, "--tokenizer-type NullTokenizer");
    arg_i(b, "--vocab-size", m->vocab);
    arg(b, "--make-vocab-size-divisible-by 128");
}

static void megatron_parallel(const px_plan *plan, const plan_facts *f, px_buf *b)
{
    const px_parallel *p = &plan->par;
    arg_i(b, "--tensor-model-parallel-size", p->tp);
    arg_i(b, "--pipeline-model-parallel-size", p->pp);
    if (p->vpp > 1)
        arg_i(b, "--num-virtual-stages-per-pipeline-rank", p->vpp);
    if (f->uneven && first_last_split(p)) {
        arg_i(b, "--decoder-first-pipeline-num-layers", f->first_layers);
        arg_i(b, "--decoder-last-pipeline-num-layers", f->last_layers);
    } else if (f->uneven) { /* E embedding, t a layer, L the loss; chunks in model order */
        px_buf_puts(b, "--pipeline-model-parallel-layout ");
        for (int c = 0; c < p->n_chunks; c++) {
            px_buf_puts(b, c ? "|" : "E");
            for (int l = 0; l < p->layers_per_chunk[c]; l++)
                px_buf_puts(b, "t");
        }
        px_buf_puts(b, "L\n");
    }
    arg_i(b, "--context-parallel-size", p->cp);
    if (p->cp > 1)
        arg(b, "--cp-comm-type p2p");
    arg_i(b, "--expert-model-parallel-size", p->ep);
    if (plan->model.n_experts > 0)
        arg_i(b, "--expert-tensor-parallel-size", p->etp);
    if (p->tp > 1 && p->sp)
        arg(b, "--sequence-parallel");
    arg_i(b, "--micro-batch-size", p->micro_batch);
    arg_i(b, "--global-batch-size", f->gbatch);
    arg_i(b, "--seq-length", f->seq);
    int64_t maxpos = plan->model.max_positions > f->seq ? plan->model.max_positions : f->seq;
    arg_i(b, "--max-position-embeddings", maxpos);
    if (p->zero >= 1)
        arg(b, "--use-distributed-optimizer");
    if (p->zero >= 2) { /* Megatron-FSDP: optim_grads = ZeRO-2, optim_grads_params = ZeRO-3 */
        arg(b, "--use-megatron-fsdp");
        arg(b, p->zero == 2 ? "--data-parallel-sharding-strategy optim_grads"
                            : "--data-parallel-sharding-strategy optim_grads_params");
        arg(b, "--no-gradient-accumulation-fusion");
        arg(b, "--ckpt-format fsdp_dtensor");
    }
    if (recompute_mixed(p)) { /* full on the first N layers of each chunk */
        arg(b, "--recompute-granularity full");
        arg(b, "--recompute-method block");
        arg_i(b, "--recompute-num-layers", block_recompute_layers(plan));
    } else if (f->recompute == PX_RECOMPUTE_SELECTIVE) {
        arg(b, "--recompute-granularity selective");
    } else if (f->recompute == PX_RECOMPUTE_FULL) {
        arg(b, "--recompute-granularity full");
        arg(b, "--recompute-method uniform");
        arg(b, "--recompute-num-layers 1");
    }
    if (p->dp_overlap && p->dp > 1) {
        arg(b, "--overlap-grad-reduce");
        if (p->zero >= 1)
            arg(b, "--overlap-param-gather");
    }
    if (p->tp_overlap && p->tp > 1 && p->sp)
        arg(b, "--tp-comm-overlap");
    if (!p->grad_fp32)
        arg(b, "--grad-reduce-in-bf16");
    if (p->flash_attention)
        arg(b, "--attention-backend flash");
    if (f->bf16)
        arg(b, "--bf16");
}

px_status px_export_megatron(const px_plan *plan, const px_export_opts *o, px_buf *b,
                             px_error *err)
{
    (void)o;
    (void)err;
    plan_facts f;
    facts_of(plan, &f);
    char name[64], hw[64];
    safe_name(plan->model.name, name, sizeof name);
    safe_name(plan->hw.name, hw, sizeof hw);
    int per_node = f.per_node ? f.per_node : plan->hw.gpus_per_node;
    px_buf_printf(b,
                  "# Megatron-LM pretrain_gpt.py arguments: %s on %d GPUs (%s), %d node(s) of %d,\n"
                  "# from a Parallax plan (docs/export.md; Megatron-LM core_r0.13 and later).\n"
                  "# Add the data, optimizer and schedule arguments (--data-path, --lr,\n"
                  "# --train-iters, ...) and your tokenizer in place of NullTokenizer.\n"
                  "# Launch on each node:\n"
                  "#   torchrun --nnodes %d --nproc-per-node %d --rdzv-backend c10d "
                  "--rdzv-endpoint $MASTER_ADDR:29500 \\\n"
                  "#     pretrain_gpt.py $(grep -v '^#' THIS_FILE)\n"
                  "# or under Slurm, one task a GPU:\n"
                  "#   srun --nodes %d --ntasks-per-node %d --gpus-per-node %d \\\n"
                  "#     python pretrain_gpt.py $(grep -v '^#' THIS_FILE)\n",
                  name, f.gpus, hw, f.nodes, per_node, f.nodes, per_node, f.nodes, per_node,
                  per_node);
    megatron_parallel(plan, &f, b);
    megatron_model(&plan->model, b);
    px_export_finetune_megatron(plan, b);
    return PX_OK;
}

/* ---- Megatron-Bridge / NeMo 2 (YAML) ------------------------------------- */

static void y_i(px_buf *b, const char *key, int64_t v)
{
    px_buf_printf(b, "  %s: %lld\n", key, (long long)v);
}
static void y_b(px_buf *b, const char *key, bool v)
{
    px_buf_printf(b, "  %s: %s\n", key, v ? "true" : "false");
}

static void nemo_model(const px_plan *plan, const plan_facts *f, px_buf *b)
{
    const px_parallel *p = &plan->par;
    const px_model *m = &plan->model;
    px_buf_puts(b, "model:\n");
    y_i(b, "tensor_model_parallel_size", p->tp);
    y_i(b, "pipeline_model_parallel_size", p->pp);
    if (p->vpp > 1)
        y_i(b, "virtual_pipeline_model_parallel_size", p->vpp);
    else
        px_buf_puts(b, "  virtual_pipeline_model_parallel_size: null\n");
    if (f->uneven && first_last_split(p)) {
        y_i(b, "num_layers_in_first_pipeline_stage", f->first_layers);
        y_i(b, "num_layers_in_last_pipeline_stage", f->last_layers);
    } else if (f->uneven) { /* as Megatron's --pipeline-model-parallel-layout */
        px_buf_puts(b, "  pipeline_model_parallel_layout: \"");
        for (int c = 0; c < p->n_chunks; c++) {
            px_buf_puts(b, c ? "|" : "E");
            for (int l = 0; l < p->layers_per_chunk[c]; l++)
                px_buf_puts(b, "t");
        }
        px_buf_puts(b, "L\"\n");
    }
    y_i(b, "context_parallel_size", p->cp);
    y_i(b, "expert_model_parallel_size", p->ep);
    y_i(b, "expert_tensor_parallel_size", p->etp);
    y_b(b, "sequence_parallel", p->tp > 1 && p->sp);
    y_i(b, "num_layers", m->n_layers);
    y_i(b, "hidden_size", m->hidden);
    y_i(b, "ffn_hidden_size", m->ffn);
    y_i(b, "num_attention_heads", m->n_heads);
    y_i(b, "num_query_groups", m->n_kv_heads > 0 ? m->n_kv_heads : m->n_heads);
    if (m->head_dim > 0)
        y_i(b, "kv_channels", m->head_dim);
    y_i(b, "seq_length", f->seq);
    y_i(b, "vocab_size", m->vocab);
    if (m->n_experts > 0) {
        y_i(b, "num_moe_experts", m->n_experts);
        y_i(b, "moe_router_topk", m->top_k);
        y_i(b, "moe_ffn_hidden_size", m->moe_ffn);
    }
    if (recompute_mixed(p))
        px_buf_printf(b, "  recompute_granularity: full\n  recompute_method: block\n"
                         "  recompute_num_layers: %d\n", block_recompute_layers(plan));
    else if (f->recompute == PX_RECOMPUTE_SELECTIVE)
        px_buf_puts(b, "  recompute_granularity: selective\n");
    else if (f->recompute == PX_RECOMPUTE_FULL)
        px_buf_puts(b, "  recompute_granularity: full\n  recompute_method: uniform\n"
                       "  recompute_num_layers: 1\n");
    else
        px_buf_puts(b, "  recompute_granularity: null\n");
    y_b(b, "bf16", f->bf16);
}

px_status px_export_nemo(const px_plan *plan, px_buf *b, px_error *err)
{
    (void)err;
    const px_parallel *p = &plan->par;
    plan_facts f;
    facts_of(plan, &f);
    char name[64];
    safe_name(plan->model.name, name, sizeof name);
    px_buf_printf(b, "# Megatron-Bridge / NeMo 2 recipe override: %s on %d GPUs (%d node(s)),\n"
                     "# from a Parallax plan (docs/export.md; Megatron-Bridge 0.1 / NeMo 25.09\n"
                     "# and later).  Apply on top of the model's recipe, e.g.\n"
                     "#   python run_recipe.py --config-file THIS_FILE\n",
                  name, f.gpus, f.nodes);
    nemo_model(plan, &f, b);
    px_buf_puts(b, "train:\n");
    y_i(b, "global_batch_size", f.gbatch);
    y_i(b, "micro_batch_size", p->micro_batch);
    px_buf_puts(b, "dataset:\n");
    y_i(b, "sequence_length", f.seq);
    px_buf_puts(b, "ddp:\n");
    y_b(b, "use_distributed_optimizer", p->zero >= 1);
    y_b(b, "overlap_grad_reduce", p->dp_overlap && p->dp > 1);
    y_b(b, "overlap_param_gather", p->dp_overlap && p->dp > 1 && p->zero >= 1);
    y_b(b, "grad_reduce_in_fp32", p->grad_fp32);
    if (p->zero >= 2) {
        y_b(b, "use_megatron_fsdp", true);
        px_buf_printf(b, "  data_parallel_sharding_strategy: %s\n",
                      p->zero == 2 ? "optim_grads" : "optim_grads_params");
    }
    px_buf_puts(b, "optimizer:\n");
    y_b(b, "use_distributed_optimizer", p->zero >= 1);
    y_b(b, "bf16", f.bf16);
    px_buf_puts(b, "comm_overlap:\n");
    y_b(b, "tp_comm_overlap", p->tp_overlap && p->tp > 1 && p->sp);
    px_export_finetune_nemo(plan, b);
    return PX_OK;
}

/* ---- torchtitan (TOML) ----------------------------------------------------- */

static const char *titan_schedule(const px_parallel *p)
{
    switch (p->schedule) {
    case PX_SCHED_GPIPE: return "GPipe";
    case PX_SCHED_INTERLEAVED: return "Interleaved1F1B";
    case PX_SCHED_ZB_H1: return "InterleavedZeroBubble";
    default: return "1F1B";
    }
}

/* torchtitan's model family and, for the presets it ships, its flavour. */
static void titan_model(const px_model *m, const char **family, char *flavor, size_t n)
{
    *family = m->attn == PX_ATTN_MLA ? "deepseek_v3"
              : m->qk_norm           ? "qwen3"
              : m->n_experts > 0     ? "llama4"
                                     : "llama3";
    static const char *const known[][2] = {{"llama3-8b", "8B"}, {"llama3-70b", "70B"},
                                           {"llama3-405b", "405B"}, {"deepseek-v3", "671B"}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(m->name, known[i][0])) {
            snprintf(flavor, n, "%s", known[i][1]);
            return;
        }
    safe_name(m->name, flavor, n);
}

/* An uneven split as the modules of each model part, in model order:
 * embedding on the first, final norm and output on the last. */
static void titan_split(const px_plan *plan, px_buf *b)
{
    const px_parallel *p = &plan->par;
    px_buf_puts(b, "module_fqns_per_model_part = [\n");
    int layer = 0;
    for (int c = 0; c < p->n_chunks; c++) {
        px_buf_puts(b, "  [");
        bool first = true;
        if (c == 0) {
            px_buf_puts(b, "\"tok_embeddings\"");
            first = false;
        }
        for (int l = 0; l < p->layers_per_chunk[c]; l++, layer++) {
            px_buf_printf(b, "%s\"layers.%d\"", first ? "" : ", ", layer);
            first = false;
        }
        if (c == p->n_chunks - 1)
            px_buf_printf(b, "%s\"norm\", \"output\"", first ? "" : ", ");
        px_buf_puts(b, c == p->n_chunks - 1 ? "]\n" : "],\n");
    }
    px_buf_puts(b, "]\n");
}

px_status px_export_torchtitan(const px_plan *plan, px_buf *b, px_error *err)
{
    (void)err;
    const px_parallel *p = &plan->par;
    const px_model *m = &plan->model;
    plan_facts f;
    facts_of(plan, &f);
    const char *family;
    char flavor[64];
    titan_model(m, &family, flavor, sizeof flavor);
    px_buf_printf(b, "# torchtitan job: %s on %d GPUs (%d node(s)), from a Parallax plan\n"
                     "# (docs/export.md; torchtitan 0.2 and later).  Launch with\n"
                     "#   torchrun --nnodes %d --nproc-per-node %d -m torchtitan.train "
                     "--job.config_file THIS_FILE\n"
                     "# The model flavour must have these dimensions (torchtitan's model args):\n"
                     "#   n_layers = %lld, dim = %lld, n_heads = %lld, n_kv_heads = %lld, "
                     "ffn_dim = %lld, vocab_size = %lld\n",
                  flavor, f.gpus, f.nodes, f.nodes,
                  f.per_node ? f.per_node : plan->hw.gpus_per_node, (long long)m->n_layers,
                  (long long)m->hidden, (long long)m->n_heads,
                  (long long)(m->n_kv_heads > 0 ? m->n_kv_heads : m->n_heads),
                  (long long)m->ffn, (long long)m->vocab);
    px_buf_printf(b, "\n[job]\ndescription = \"%s on %d GPUs, from a Parallax plan\"\n", flavor,
                  f.gpus);
    px_buf_printf(b, "\n[model]\nname = \"%s\"\nflavor = \"%s\"\n", family, flavor);
    px_buf_printf(b, "\n[training]\nlocal_batch_size = %lld\nglobal_batch_size = %lld\n"
                     "seq_len = %lld\nmixed_precision_param = \"%s\"\n"
                     "mixed_precision_reduce = \"%s\"\n",
                  (long long)(p->micro_batch * p->n_micro), (long long)f.gbatch,
                  (long long)f.seq, f.bf16 ? "bfloat16" : "float32",
                  p->grad_fp32 ? "float32" : "bfloat16");
    bool shard = p->zero >= 2; /* ZeRO-0: replicate (DDP); 2: FSDP, no reshard; 3: FSDP */
    px_buf_printf(b, "\n[parallelism]\ndata_parallel_replicate_degree = %d\n"
                     "data_parallel_shard_degree = %d\nfsdp_reshard_after_forward = \"%s\"\n"
                     "tensor_parallel_degree = %d\nenable_async_tensor_parallel = %s\n"
                     "pipeline_parallel_degree = %d\n",
                  shard ? 1 : p->dp, shard ? p->dp : 1, p->zero == 2 ? "never" : "default",
                  p->tp, p->tp_overlap && p->tp > 1 ? "true" : "false", p->pp);
    if (p->pp > 1) {
        px_buf_printf(b, "pipeline_parallel_schedule = \"%s\"\n"
                         "pipeline_parallel_microbatch_size = %lld\n",
                      titan_schedule(p), (long long)p->micro_batch);
        if (f.uneven)
            titan_split(plan, b);
        else
            px_buf_printf(b, "pipeline_parallel_layers_per_stage = %lld\n",
                          (long long)f.layers_per_chunk);
    }
    px_buf_printf(b, "context_parallel_degree = %d\n", p->cp);
    if (p->cp > 1)
        px_buf_puts(b, "context_parallel_rotate_method = \"alltoall\"\n"); /* the ring */
    px_buf_printf(b, "expert_parallel_degree = %d\nexpert_tensor_parallel_degree = %d\n", p->ep,
                  p->etp);
    px_buf_printf(b, "\n[activation_checkpoint]\nmode = \"%s\"\n",
                  px_recompute_name(f.recompute));
    if (f.recompute == PX_RECOMPUTE_SELECTIVE)
        px_buf_puts(b, "selective_ac_option = \"op\"\n");
    return PX_OK;
}

/* ---- DeepSpeed (JSON) ------------------------------------------------------ */

px_status px_export_deepspeed(const px_plan *plan, px_buf *b, px_error *err)
{
    const px_parallel *p = &plan->par;
    plan_facts f;
    facts_of(plan, &f);
    json_t *root = json_pack(
        "{s:I, s:I, s:I, s:{s:i, s:b, s:b, s:b}, s:{s:b}, s:s, s:{s:i, s:s, s:i}, s:f, s:i, "
        "s:b}",
        "train_batch_size", (json_int_t)f.gbatch, "train_micro_batch_size_per_gpu",
        (json_int_t)p->micro_batch, "gradient_accumulation_steps", (json_int_t)p->n_micro,
        "zero_optimization", "stage", p->zero, "overlap_comm", p->dp_overlap,
        "contiguous_gradients", 1, "reduce_scatter", 1, "bf16", "enabled", f.bf16,
        "communication_data_type", p->grad_fp32 ? "fp32" : "bf16", "pipeline", "stages",
        p->pp, "partition", "uniform", "activation_checkpoint_interval",
        f.recompute == PX_RECOMPUTE_FULL ? 1 : 0, "gradient_clipping", 1.0, "steps_per_print",
        10, "wall_clock_breakdown", 0);
    if (!root)
        return PX_FAIL(err, PX_ERR_NOMEM, "deepspeed export: building the JSON failed");
    if (p->tp > 1)
        json_object_set_new(root, "tensor_parallel",
                            json_pack("{s:i}", "autotp_size", p->tp));
    if (p->cp > 1) /* Ulysses: heads <-> sequence all-to-all */
        json_object_set_new(root, "sequence_parallel_size", json_integer(p->cp));
    char *s = json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2));
    json_decref(root);
    if (!s)
        return PX_FAIL(err, PX_ERR_NOMEM, "deepspeed export: writing the JSON failed");
    px_buf_puts(b, s);
    px_buf_puts(b, "\n");
    free(s);
    return PX_OK;
}

/* ---- sbatch running Parallax's executor ------------------------------------ */

/* s as one single-quoted shell word ('\'' for each quote inside). */
static void sh_word(px_buf *b, const char *s)
{
    px_buf_puts(b, "'");
    for (; *s; s++) {
        if (*s == '\'')
            px_buf_puts(b, "'\\''");
        else {
            char c[2] = {*s, '\0'};
            px_buf_puts(b, c);
        }
    }
    px_buf_puts(b, "'");
}

px_status px_export_slurm(const px_plan *plan, const px_export_opts *o, px_buf *b,
                          px_error *err)
{
    (void)err;
    plan_facts f;
    facts_of(plan, &f);
    char name[64];
    safe_name(plan->model.name, name, sizeof name);
    bool gpu = plan->hw.dtype_bytes == 2; /* datasheet GPU profiles; calibrated CPUs are fp32 */
    px_buf_printf(b, "#!/bin/bash\n"
                     "# Runs a Parallax plan (%s on %d %s) with Parallax's own executor and\n"
                     "# writes measured vs predicted (compare reads the report).  docs/export.md\n"
                     "#SBATCH --job-name=parallax-%s\n"
                     "#SBATCH --nodes=%d\n",
                  name, f.gpus, gpu ? "GPUs" : "ranks", name, f.nodes);
    if (f.per_node)
        px_buf_printf(b, "#SBATCH --ntasks-per-node=%d\n", f.per_node);
    else
        px_buf_printf(b, "#SBATCH --ntasks=%d\n", f.gpus);
    if (gpu && f.per_node)
        px_buf_printf(b, "#SBATCH --gpus-per-node=%d\n", f.per_node);
    else if (gpu)
        px_buf_printf(b, "#SBATCH --gpus-per-task=1\n");
    px_buf_printf(b, "#SBATCH --exclusive\n#SBATCH --time=01:00:00\n"
                     "set -euo pipefail\n");
    px_buf_puts(b, "PLAN=${PARALLAX_PLAN:-");
    sh_word(b, o && o->plan_path ? o->plan_path : "plan.json");
    px_buf_puts(b, "}\nEXECUTE=${PARALLAX_EXECUTE:-");
    sh_word(b, o && o->execute_path ? o->execute_path : "build/execute");
    px_buf_printf(b, "}\nsrun --mpi=pmix \"$EXECUTE\" --plan \"$PLAN\" --backend %s --steps 10 "
                     "--warmup 2 \\\n"
                     "  --report \"parallax-report-${SLURM_JOB_ID:-local}.json\"\n",
                  gpu ? "cuda" : "cpu");
    return PX_OK;
}
