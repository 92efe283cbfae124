/* px_export_torchtitan.c — a plan as a torchtitan 0.2.2 job (TOML read by
 * its ConfigManager, docs/export.md), and what such a job cannot say. */
#include "px_export_formats.h"

#include <stdio.h>
#include <string.h>

#include "px_plan_check.h"

/* The model flavours torchtitan 0.2.2 ships (torchtitan/models/<family>/
 * __init__.py, the *_args tables), by the dimensions a plan's model must
 * have: the job file names a flavour and cannot change its shape. */
typedef struct {
    const char *family, *flavor;
    int64_t layers, hidden, heads, kv_heads, ffn, vocab;
    int64_t experts, top_k, moe_ffn, shared, first_dense;
    bool qk_norm, mla;
} titan_flavor;

/* qwen3's train spec has pipelining_fn None in 0.2.2 (train.py raises
 * "does not support pipelining"); llama3 and deepseek_v3 use pipeline_llm. */
static bool titan_family_pipelines(const char *family)
{
    return strcmp(family, "qwen3") != 0;
}

static const titan_flavor flavors[] = {
    {"llama3", "8B", 32, 4096, 32, 8, 14336, 128256, 0, 0, 0, 0, 0, false, false},
    {"llama3", "70B", 80, 8192, 64, 8, 28672, 128256, 0, 0, 0, 0, 0, false, false},
    {"llama3", "405B", 126, 16384, 128, 8, 53248, 128256, 0, 0, 0, 0, 0, false, false},
    {"qwen3", "0.6B", 28, 1024, 16, 8, 3072, 151936, 0, 0, 0, 0, 0, true, false},
    {"qwen3", "1.7B", 28, 2048, 16, 8, 6144, 151936, 0, 0, 0, 0, 0, true, false},
    {"qwen3", "4B", 36, 2560, 32, 8, 9728, 151936, 0, 0, 0, 0, 0, true, false},
    {"qwen3", "8B", 36, 4096, 32, 8, 12288, 151936, 0, 0, 0, 0, 0, true, false},
    {"qwen3", "14B", 40, 5120, 40, 8, 17408, 151936, 0, 0, 0, 0, 0, true, false},
    {"qwen3", "32B", 64, 5120, 64, 8, 25600, 151936, 0, 0, 0, 0, 0, true, false},
    {"qwen3", "30B-A3B", 48, 2048, 32, 4, 6144, 151936, 128, 8, 768, 0, 0, true, false},
    {"qwen3", "235B-A22B", 94, 4096, 64, 4, 12288, 151936, 128, 8, 1536, 0, 0, true, false},
    {"deepseek_v3", "16B", 27, 2048, 16, 16, 10944, 102400, 64, 6, 1408, 2, 1, false, true},
    {"deepseek_v3", "236B", 60, 5120, 128, 128, 12288, 102400, 160, 6, 1536, 2, 1, false,
     true},
    {"deepseek_v3", "671B", 61, 7168, 128, 128, 18432, 129280, 256, 8, 2048, 1, 3, false, true},
};

static const titan_flavor *titan_flavor_of(const px_model *m)
{
    int64_t kv = m->n_kv_heads > 0 ? m->n_kv_heads : m->n_heads;
    for (size_t i = 0; i < sizeof flavors / sizeof flavors[0]; i++) {
        const titan_flavor *f = &flavors[i];
        if (f->layers == m->n_layers && f->hidden == m->hidden && f->heads == m->n_heads &&
            f->kv_heads == kv && f->ffn == m->ffn && f->vocab == m->vocab &&
            f->experts == m->n_experts && f->top_k == (m->n_experts ? m->top_k : 0) &&
            f->moe_ffn == (m->n_experts ? m->moe_ffn : 0) &&
            f->shared == (m->n_experts ? m->n_shared_experts : 0) &&
            f->first_dense == (m->n_experts ? m->first_dense_layers : 0) &&
            f->qk_norm == m->qk_norm && f->mla == (m->attn == PX_ATTN_MLA))
            return f;
    }
    return NULL;
}

/* The pipeline schedule class torchtitan names (pipeline_parallel_schedule),
 * or NULL when the plan's schedule has none at its VPP. */
static const char *titan_schedule(const px_parallel *p)
{
    if (p->vpp > 1)
        return p->schedule == PX_SCHED_ZB_H1   ? "InterleavedZeroBubble"
               : p->schedule == PX_SCHED_GPIPE || p->schedule == PX_SCHED_ZB_H2 ? NULL
                                                  : "Interleaved1F1B";
    return p->schedule == PX_SCHED_GPIPE ? "GPipe"
           : p->schedule == PX_SCHED_ZB_H1 || p->schedule == PX_SCHED_ZB_H2 ? NULL
                                                                           : "1F1B";
}

/* The data-parallel mesh: replicate x shard, with the FSDP mesh being
 * shard x cp (torchtitan folds CP into FSDP: parallel_dims.py). */
static void titan_dp(const px_parallel *p, int *replicate, int *shard)
{
    int ddp = p->dp * p->cp;
    if (p->zero == 0) {
        *replicate = p->dp, *shard = 1;
    } else if (p->zero >= 3 && p->shard_group > 0 && p->shard_group < ddp) {
        *replicate = ddp / p->shard_group, *shard = p->shard_group / p->cp;
    } else {
        *replicate = 1, *shard = p->dp;
    }
}

/* The float8 / MX converters: what torchtitan 0.2.2 cannot express of the
 * plan's GEMM precision. */
static bool titan_precision_refusal(const px_plan *plan, char *why, size_t n)
{
    const px_parallel *p = &plan->par;
    bool gathered = p->quantized_params && p->zero >= 2;
    switch (p->precision) {
    case PX_PREC_BF16:
    case PX_PREC_FP8_CS:
        break;
    case PX_PREC_FP8_ROWWISE:
    case PX_PREC_MXFP8:
        if (gathered)
            return px_export_because(why, n, "%s with quantised weight gathers (torchtitan gathers "
                                   "bf16 weights except under the tensorwise float8 recipe; "
                                   "quantized_params false is what it runs)",
                           px_precision_name(p->precision));
        break;
    default:
        return px_export_because(why, n, "precision %s (torchtitan 0.2.2 runs bf16, fp8-cs, "
                               "fp8-rowwise, mxfp8)", px_precision_name(p->precision));
    }
    if (p->precision != PX_PREC_BF16 && plan->model.n_experts > 0)
        return px_export_because(why, n, "%s on the routed experts (torchtitan 0.2.2's quantised "
                               "grouped GEMM is a torchao prototype: \"requires the torchao "
                               "nightly build\"; no torchao release runs it beside torch "
                               "2.15)", px_precision_name(p->precision));
    return false;
}

/* Data parallelism: DDP, FSDP and HSDP as torchtitan builds them. */
static bool titan_dp_refusal(const px_parallel *p, char *why, size_t n)
{
    if (p->zero == 1)
        return px_export_because(why, n, "ZeRO stage 1 (torchtitan runs DDP, or FSDP as ZeRO-2/3)");
    if (p->zero == 0 && p->cp > 1)
        return px_export_because(why, n, "ZeRO-0 with context parallelism (torchtitan shards the weights "
                               "over the CP ranks with FSDP: parallel_dims.py); plan with "
                               "--zero 2 or 3");
    if (p->zero == 0 && p->dp > 1 && (p->tp > 1 || p->pp > 1))
        return px_export_because(why, n, "ZeRO-0 (DDP) with tensor or pipeline parallelism (torchtitan: "
                               "\"DDP has not supported > 1D parallelism\"); plan with "
                               "--zero 2 or 3");
    if (p->zero == 0 && p->dp > 1 && !p->grad_fp32)
        return px_export_because(why, n, "bf16 gradient reduction under ZeRO-0 (torchtitan's DDP "
                               "all-reduces the fp32 gradients)");
    if (p->zero >= 3 && p->shard_group > 0 && p->shard_group < p->dp * p->cp &&
        p->shard_group % p->cp != 0)
        return px_export_because(why, n, "hybrid sharding over %d ranks, not a multiple of CP = %d "
                               "(torchtitan's FSDP mesh is data_parallel_shard_degree x CP)",
                       p->shard_group, p->cp);
    int rep, shard;
    titan_dp(p, &rep, &shard);
    int64_t ranks = (int64_t)shard * p->cp * p->tp;
    if (p->ep > 1 && ((p->etp != 1 && p->etp != p->tp) || ranks % (p->ep * p->etp) != 0))
        return px_export_because(why, n, "expert parallelism EP = %d, ETP = %d (torchtitan 0.2.2 lays "
                               "EP x ETP over the FSDP x CP x TP ranks, %lld here, with "
                               "ETP = 1 or TP)", p->ep, p->etp, (long long)ranks);
    return false;
}

bool px_export_torchtitan_refusal(const px_plan *plan, char *why, size_t n)
{
    const px_parallel *p = &plan->par;
    const px_model *m = &plan->model;
    if (px_export_recompute_mixed(p))
        return px_export_because(why, n, "a recompute choice per layer; plan with --partition uniform");
    if (p->moe_dispatcher == PX_MOE_HYBRIDEP)
        return px_export_because(why, n, "the hybridep dispatcher (torchtitan 0.2.2's "
                                 "expert_parallel_comm_backend takes standard or deepep)");
    if (m->n_mtp_modules > 0)
        return px_export_because(why, n, "multi-token prediction (%lld module(s); torchtitan's "
                               "deepseek_v3 has none)", (long long)m->n_mtp_modules);
    if (!titan_flavor_of(m))
        return px_export_because(why, n, "model %s: no torchtitan 0.2.2 flavour has its dimensions "
                               "(llama3 8B/70B/405B, qwen3 0.6B to 235B-A22B, deepseek_v3 "
                               "16B/236B/671B; the job file cannot change a flavour's shape)",
                       m->name);
    if (p->pp > 1 && !titan_family_pipelines(titan_flavor_of(m)->family))
        return px_export_because(why, n, "pipeline parallelism for %s (torchtitan 0.2.2's %s model has "
                               "no pipelining function); plan with --pp 1", m->name,
                       titan_flavor_of(m)->family);
    if (p->pp > 1 && p->n_chunks == 0 && m->n_layers % (p->pp * p->vpp) != 0)
        return px_export_because(why, n, "an uneven pipeline split the plan leaves implicit "
                               "(layers_per_chunk [] with %lld layers over %d chunks); write "
                               "layers_per_chunk", (long long)m->n_layers, p->pp * p->vpp);
    if (p->pp > 1 && !titan_schedule(p))
        return px_export_because(why, n, "pipeline schedule %s with VPP %d (torchtitan runs GPipe and "
                               "1F1B at VPP 1, Interleaved1F1B and InterleavedZeroBubble at "
                               "VPP >= 2)", px_schedule_name(p->schedule), p->vpp);
    if (p->cp > 1 && p->cp_comm == PX_CPC_A2A)
        return px_export_because(why, n, "CP flavour a2a (Ulysses; torchtitan's context parallelism "
                               "rotates KV shards: allgather or alltoall)");
    if (px_plan_seq_len(m, p) % (2LL * p->cp * p->tp) != 0)
        return px_export_because(why, n, "sequence length %lld not divisible by 2 x CP x TP = %d "
                               "(torchtitan's parallelize asserts it)",
                       (long long)px_plan_seq_len(m, p), 2 * p->cp * p->tp);
    plan_facts f;
    px_export_facts_of(plan, &f);
    if (f.nodes > 1 && f.per_node == 0)
        return px_export_because(why, n, "%d GPUs that do not fill whole nodes of %d (torchrun starts "
                               "the same number of processes on every node)", f.gpus,
                       plan->hw.gpus_per_node);
    if (titan_dp_refusal(p, why, n))
        return true;
    return titan_precision_refusal(plan, why, n);
}

/* The model parts of each pipeline chunk, in model order: embedding on the
 * first, final norm and output on the last (module_fqns_per_model_part). */
static void titan_split(const px_plan *plan, px_buf *b)
{
    const px_parallel *p = &plan->par;
    int chunks = p->pp * p->vpp, layer = 0;
    px_buf_puts(b, "module_fqns_per_model_part = [\n");
    for (int c = 0; c < chunks; c++) {
        int len = p->layers_per_chunk[c];
        px_buf_puts(b, c == 0 ? "  [\"tok_embeddings\"" : "  [");
        for (int l = 0; l < len; l++, layer++)
            px_buf_printf(b, "%s\"layers.%d\"", c == 0 || l > 0 ? ", " : "", layer);
        if (c == chunks - 1)
            px_buf_printf(b, "%s\"norm\", \"output\"", len > 0 ? ", " : "");
        px_buf_puts(b, c == chunks - 1 ? "]\n" : "],\n");
    }
    px_buf_puts(b, "]\n");
}

static void titan_header(const px_plan *plan, const titan_flavor *fl, const plan_facts *f,
                         px_buf *b)
{
    int per = f->per_node ? f->per_node : plan->hw.gpus_per_node;
    px_buf_printf(b, "# torchtitan 0.2.2 job: %s %s on %d GPUs (%d node(s) of %d), from a "
                     "Parallax plan (docs/export.md).\n"
                     "# torchtitan 0.2.x reads this TOML (ConfigManager, --job.config_file); "
                     "0.3 and main replaced it\n# with Python configs (--module %s --config "
                     "FN) holding the same sections and keys.\n",
                  fl->family, fl->flavor, f->gpus, f->nodes, per, fl->family);
    const char *run = "-m torchtitan.train --job.config_file THIS_FILE";
    if (f->nodes == 1) {
        px_buf_printf(b, "# Launch:\n#   torchrun --standalone --nnodes 1 --nproc-per-node %d %s\n",
                      per, run);
        return;
    }
    px_buf_printf(b, "# Launch on each of the %d nodes (MASTER: the first node's address):\n"
                     "#   torchrun --nnodes %d --nproc-per-node %d --rdzv-backend c10d "
                     "--rdzv-endpoint MASTER:29500 --rdzv-id parallax %s\n"
                     "# or from one Slurm allocation:\n"
                     "#   srun --nodes %d --ntasks-per-node 1 torchrun --nnodes %d "
                     "--nproc-per-node %d --rdzv-backend c10d --rdzv-endpoint "
                     "\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n1)\":29500 "
                     "--rdzv-id \"$SLURM_JOB_ID\" %s\n",
                  f->nodes, f->nodes, per, run, f->nodes, f->nodes, per, run);
}

/* model.converters and their [quantize...] sections for the GEMM precision. */
static void titan_quantize(const px_plan *plan, px_buf *b)
{
    const px_parallel *p = &plan->par;
    if (p->precision == PX_PREC_MXFP8)
        px_buf_puts(b, "converters = [\"quantize.linear.mx\"]\n");
    else if (p->precision == PX_PREC_FP8_CS || p->precision == PX_PREC_FP8_ROWWISE)
        px_buf_puts(b, "converters = [\"quantize.linear.float8\"]\n");
}

static void titan_quantize_sections(const px_plan *plan, px_buf *b)
{
    const px_parallel *p = &plan->par;
    if (p->precision == PX_PREC_MXFP8) {
        /* the transformer layers' linears; the output head stays bf16 */
        px_buf_puts(b, "\n[quantize.linear.mx]\nrecipe_name = \"mxfp8_cublas\"\n"
                       "filter_fqns = [\"output\"]\n");
    } else if (p->precision == PX_PREC_FP8_CS) {
        /* tensorwise dynamic scaling is torchao's default Float8LinearConfig;
         * with quantised gathers FSDP all-gathers the fp8 weights */
        bool gather = p->quantized_params && p->zero >= 2;
        px_buf_printf(b, "\n[quantize.linear.float8]\n%sfilter_fqns = [\"output\"]\n",
                      gather ? "enable_fsdp_float8_all_gather = true\n"
                               "precompute_float8_dynamic_scale_for_fsdp = true\n"
                             : "recipe_name = \"tensorwise\"\n");
    } else if (p->precision == PX_PREC_FP8_ROWWISE) {
        px_buf_puts(b, "\n[quantize.linear.float8]\nrecipe_name = \"rowwise\"\n"
                       "filter_fqns = [\"output\"]\n");
    }
}

/* torchtitan's async TP (parallelism.enable_async_tensor_parallel) overlaps
 * the TP collectives of both passes: a plan that hides either runs it. */
static bool titan_async_tp(const px_parallel *p)
{
    return p->tp > 1 && (p->tp_overlap || p->tp_comm_overlap);
}

static void titan_parallelism(const px_plan *plan, const plan_facts *f, px_buf *b)
{
    const px_parallel *p = &plan->par;
    int rep, shard;
    titan_dp(p, &rep, &shard);
    /* ZeRO-2: FSDP that keeps the gathered weights from forward to backward;
     * ZeRO-3 reshards after every forward, with PP too (torchtitan's
     * "default" would not reshard under PP) */
    px_buf_printf(b, "\n[parallelism]\ndata_parallel_replicate_degree = %d\n"
                     "data_parallel_shard_degree = %d\nfsdp_reshard_after_forward = \"%s\"\n"
                     "tensor_parallel_degree = %d\nenable_async_tensor_parallel = %s\n"
                     "pipeline_parallel_degree = %d\n",
                  rep, shard, p->zero == 2 ? "never" : p->zero >= 3 ? "always" : "default",
                  p->tp, titan_async_tp(p) ? "true" : "false", p->pp);
    if (p->pp > 1) {
        px_buf_printf(b, "pipeline_parallel_schedule = \"%s\"\n"
                         "pipeline_parallel_microbatch_size = %lld\n"
                         "pipeline_parallel_first_stage_less_layers = 0\n"
                         "pipeline_parallel_last_stage_less_layers = 0\n",
                      titan_schedule(p), (long long)p->micro_batch);
        if (f->uneven)
            titan_split(plan, b);
        else
            px_buf_printf(b, "pipeline_parallel_layers_per_stage = %lld\n",
                          (long long)f->layers_per_chunk);
    }
    px_buf_printf(b, "context_parallel_degree = %d\n", p->cp);
    if (p->cp > 1) /* alltoall: KV shards rotate around the ring; allgather: gathered first */
        px_buf_printf(b, "context_parallel_rotate_method = \"%s\"\n",
                      p->cp_comm == PX_CPC_ALLGATHER ? "allgather" : "alltoall");
    px_buf_printf(b, "expert_parallel_degree = %d\nexpert_tensor_parallel_degree = %d\n", p->ep,
                  p->ep > 1 ? p->etp : 1);
    if (p->moe_dispatcher == PX_MOE_DEEPEP)
        px_buf_printf(b, "expert_parallel_comm_backend = \"deepep\"\n");
}

px_status px_export_torchtitan(const px_plan *plan, px_buf *b, px_error *err)
{
    const px_parallel *p = &plan->par;
    const titan_flavor *fl = titan_flavor_of(&plan->model);
    if (!fl) /* px_export_format_check refuses it first */
        return PX_FAIL(err, PX_ERR_UNSUPPORTED, "torchtitan: no flavour for model %s",
                       plan->model.name);
    plan_facts f;
    px_export_facts_of(plan, &f);
    titan_header(plan, fl, &f, b);
    px_buf_printf(b, "\n[job]\ndescription = \"%s %s on %d GPUs, from a Parallax plan\"\n",
                  fl->family, fl->flavor, f.gpus);
    px_buf_printf(b, "\n[model]\nname = \"%s\"\nflavor = \"%s\"\n", fl->family, fl->flavor);
    titan_quantize(plan, b);
    /* With PP one forward takes the whole local batch as m micro-batches of
     * b; without PP torchtitan accumulates global / (local x DP) forwards of
     * local_batch_size sequences each (train.py) */
    int64_t local = p->pp > 1 ? p->micro_batch * p->n_micro : p->micro_batch;
    px_buf_printf(b, "\n[training]\nlocal_batch_size = %lld\nglobal_batch_size = %lld\n"
                     "seq_len = %lld\nmixed_precision_param = \"%s\"\n"
                     "mixed_precision_reduce = \"%s\"\n",
                  (long long)local, (long long)f.gbatch, (long long)f.seq,
                  f.bf16 ? "bfloat16" : "float32", p->grad_fp32 ? "float32" : "bfloat16");
    if (p->offload.kind == PX_OFFLOAD_PARAMS) /* FSDP2's CPUOffloadPolicy */
        px_buf_puts(b, "enable_cpu_offload = true\n");
    titan_parallelism(plan, &f, b);
    titan_quantize_sections(plan, b);
    px_buf_printf(b, "\n[activation_checkpoint]\nmode = \"%s\"\n",
                  px_recompute_name(f.recompute));
    if (f.recompute == PX_RECOMPUTE_SELECTIVE)
        px_buf_puts(b, "selective_ac_option = \"op\"\n");
    if (titan_async_tp(p)) /* async TP is an inductor pass */
        px_buf_puts(b, "\n[compile]\nenable = true\ncomponents = [\"model\", \"loss\"]\n");
    return PX_OK;
}
