/* px_export_torchtitan.c — a plan as a torchtitan job (TOML,
 * docs/export.md). */
#include "px_export_formats.h"

#include <string.h>

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
    px_export_safe_name(m->name, flavor, n);
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
    px_export_facts_of(plan, &f);
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
