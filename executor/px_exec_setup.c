/* px_exec_setup.c — the engine's life outside the step: the options and
 * the checks of a plan and a world, communicators, the storage dtype,
 * parameter buffers (in bf16 storage: the bf16 compute copy beside the fp32
 * master) and their initial values, what a caller reads back (gradient
 * norm, weights, memory), and destroy.  The step itself is px_exec.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "px_bf16.h"
#include "px_exec_internal.h"
#include "px_hybrid.h"
#include "px_io.h"
#include "px_lora.h"
#include "px_mtp.h"
#include "px_mla.h"
#include "px_trace.h"
#include "px_sliding.h"

#define W(off) px_ex_w(ex, off)
#define G(off) px_ex_g(ex, off)

void px_exec_options_default(px_exec_options *o)
{
    memset(o, 0, sizeof *o);
    o->data_path = NULL;
    o->seed = 1;
    o->lr = 1e-3f;
    o->beta1 = 0.9f;
    o->beta2 = 0.95f;
    o->adam_eps = 1e-8f;
    o->weight_decay = 0.1f;
    o->init_std = 0.02f;
    o->inject_nan_step = -1;
    o->mtp_loss_scale = 0.1f;
}

/* ---- plan check --------------------------------------------------------- */

void px_exec_caps(const char *backend, px_caps *out)
{
    if (backend && !strcmp(backend, "cuda"))
        px_caps_cuda_executor(out);
    else
        px_caps_cpu_executor(out);
}

/* What multi-token prediction (px_mtp.c) does not run with, by name; only
 * reached where the capability set allows MTP (the feature check first). */
static px_status check_mtp(const px_plan *plan, px_error *err)
{
    const px_model *m = &plan->model;
    const px_parallel *p = &plan->par;
    long long D = (long long)m->n_mtp_modules;
    if (D == 0)
        return PX_OK;
    if (p->cp > 1)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "cp = %d with n_mtp_modules = %lld: the MTP modules' shift of the tokens "
                       "by k crosses the context-parallel chunks, which the engine does not "
                       "exchange; allowed: cp = 1",
                       p->cp, D);
    if (px_finetune_is_lora(&p->finetune))
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "finetune = lora with n_mtp_modules = %lld: the engine puts no adapters "
                       "on the MTP modules; allowed: none, full (or n_mtp_modules = 0)",
                       D);
    if (m->block == PX_BLOCK_GPT)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "block gpt with n_mtp_modules = %lld: the MTP modules' learned "
                       "positions (rolled with the tokens) are not implemented; allowed: block "
                       "llama",
                       D);
    int64_t s = px_plan_seq_len(m, p);
    if (s <= m->n_mtp_modules)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "seq_len = %lld with n_mtp_modules = %lld: module k needs positions "
                       "i < seq_len - k; allowed: seq_len > n_mtp_modules",
                       (long long)s, D);
    return PX_OK;
}

px_status px_exec_check_plan(const px_plan *plan, const px_caps *caps, px_error *err)
{
    if (plan->model.attention_sinks)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model field attention_sinks = true (gpt-oss): the engine has no "
                       "attention sinks, nor gpt-oss's clamped SwiGLU and biased router and "
                       "experts; allowed: false");
    if (px_model_is_hybrid(&plan->model))
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model field layer_pattern = \"%.40s%s\": a hybrid Mamba-2 layer "
                       "pattern (Nemotron-H); the planner costs it, execute refuses it: the "
                       "engine has no Mamba-2 mixer and runs transformer blocks only; allowed: "
                       "no layer_pattern",
                       plan->model.layer_pattern,
                       strlen(plan->model.layer_pattern) > 40 ? "..." : "");
    if (plan->model.mlp_act == PX_ACT_GELU)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model field mlp_act = gelu (GeGLU, Gemma): the engine's gated MLP is "
                       "SwiGLU, and it has none of Gemma's (1 + w) norms, scaled embedding or "
                       "soft-capping; allowed: silu");
    if (plan->model.mlp_act != PX_ACT_SILU)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model field mlp_act = relu2 (squared ReLU, Nemotron): the engine's MLP "
                       "is the gated SwiGLU of three matrices, not an up and a down projection; "
                       "allowed: silu");
    if (plan->model.sandwich_norms)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model field sandwich_norms = true (Gemma 2 / 3): the engine's layer "
                       "has two norms, none on the attention's or the MLP's output; allowed: "
                       "false");
    if (plan->model.rope_fraction != 1.0)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model field rope_fraction = %g: the engine's RoPE rotates every "
                       "dimension of a head; allowed: 1",
                       plan->model.rope_fraction);
    if (plan->model.rope_scaling == PX_ROPE_YARN)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model field rope_scaling = yarn: the engine's RoPE has no YaRN (its "
                       "frequency blend and attention temperature); allowed: none, llama3");
    /* the engine runs its own attention kernel: a plan costed for another
     * one is not what it would measure */
    px_attn_kernel k = plan->par.attn_kernel;
    if (plan->par.flash_attention && k != PX_AK_FRAMEWORK && k != PX_AK_NATIVE)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "plan field parallel.attention_kernel = %s: the engine runs its own "
                       "attention kernel; allowed: framework, native (plan --attention-kernel "
                       "framework)",
                       px_attn_kernel_name(k));
    PX_TRY(px_plan_check(&plan->model, &plan->par, caps, err));
    return check_mtp(plan, err);
}

px_status px_exec_check_world(const px_plan *plan, int world_size, px_error *err)
{
    const px_parallel *p = &plan->par;
    int gpus = px_parallel_gpus(p);
    if (gpus != world_size)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "the plan needs tp x cp x pp x dp = %d x %d x %d x %d = %d ranks, but "
                       "the job has %d (run mpirun -np %d)",
                       p->tp, p->cp, p->pp, p->dp, gpus, world_size, gpus);
    return PX_OK;
}

/* ---- set-up ----------------------------------------------------------------- */

/* The storage dtype: --dtype (opt->dtype_bytes), else the plan's hardware
 * profile (dtype_bytes 2: bf16 mixed precision, 4: fp32), which is what the
 * cost model priced; then the backend's kernels for it.  A plan built in code
 * without a profile (dtype_bytes 0) runs fp32. */
static px_status pick_dtype(px_exec *ex, const px_plan *plan, const px_exec_options *opt,
                            px_backend *be, px_error *err)
{
    int bytes = opt->dtype_bytes ? opt->dtype_bytes : plan->hw.dtype_bytes;
    if (bytes == 0)
        bytes = 4;
    const char *from = opt->dtype_bytes ? "--dtype" : "the plan's hardware profile dtype_bytes";
    if (bytes != 2 && bytes != 4)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "%s = %d: the executor stores activations and weights in bf16 (2) or "
                       "fp32 (4)",
                       from, bytes);
    px_dtype t = bytes == 2 ? PX_BF16 : PX_F32;
    if (!(be->dtypes & PX_DTYPE_BIT(t)) || !be->set_dtype)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "%s asks for %s storage: the %s backend runs %s%s; choose with "
                       "execute --dtype %s",
                       from, px_dtype_name(t), be->name,
                       be->dtypes & PX_DTYPE_BIT(PX_F32) ? "fp32" : "",
                       be->dtypes & PX_DTYPE_BIT(PX_BF16) ? " bf16" : "",
                       be->dtypes & PX_DTYPE_BIT(PX_F32) ? "fp32" : "bf16");
    /* Gradients are fp32 in both storages (the cost model's grad_fp32, the
     * default); bf16 gradient accumulation is not implemented. */
    if (t == PX_BF16 && !plan->par.grad_fp32)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "grad_dtype = bf16: the executor accumulates and reduces gradients in "
                       "fp32 under bf16 storage; allowed: grad_dtype = fp32 (plan --grad-dtype "
                       "fp32)");
    PX_TRY(be->set_dtype(be, t, err));
    ex->act_dtype = t;
    ex->k = be->k;
    return PX_OK;
}

static px_status make_comm(px_exec *ex, MPI_Comm world, int colour, int key, px_comm *c,
                           const char *what, px_error *err)
{
    memset(c, 0, sizeof *c);
    c->mpi = MPI_COMM_NULL;
    int rc = MPI_Comm_split(world, colour, key, &c->mpi);
    if (rc != MPI_SUCCESS)
        return px_mpi_check(rc, what, err);
    if (c->mpi == MPI_COMM_NULL) {
        c->size = 1;
        return PX_OK;
    }
    MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN);
    MPI_Comm_size(c->mpi, &c->size);
    MPI_Comm_rank(c->mpi, &c->rank);
    return ex->be->comm_init(ex->be, c, err);
}

/* The initial weights (px_params_init, the same values for every split and
 * dtype) into the compute copy and, in bf16 storage, the master.  Host
 * staging is untracked: set-up only. */
static px_status init_weights(px_exec *ex, int64_t n_weights, int64_t n_moments, px_error *err)
{
    px_backend *be = ex->be;
    int z = ex->zero;
    float *host = calloc((size_t)(ex->n_padded + ex->n_shard), sizeof *host);
    if (!host)
        return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory for the initial weights");
    float *shard = host + ex->n_padded;
    px_params_init(&ex->tab, host, ex->opt.seed, ex->opt.init_std);
    if (z >= 2)
        px_ex_shard_init(ex, host, shard);
    const float *w = z >= 3 ? shard : host; /* the compute copy's values */
    px_status st = PX_OK;
    if (ex->act_dtype == PX_F32) {
        be->upload(be, ex->params, w, n_weights * (int64_t)sizeof(float));
    } else {
        px_bf16 *h16 = malloc((size_t)(n_weights > 0 ? n_weights : 1) * sizeof *h16);
        float *m = z >= 2 ? shard : host; /* the master, laid out as the moments */
        if (z == 1) { /* this rank's dense shard, then the experts whole */
            m = malloc((size_t)(n_moments > 0 ? n_moments : 1) * sizeof *m);
            if (m) {
                memcpy(m, host + (int64_t)ex->grad.rank * ex->n_shard,
                       (size_t)ex->n_shard * sizeof *m);
                memcpy(m + ex->n_shard, host + ex->n_dense, (size_t)ex->n_exp * sizeof *m);
            }
        }
        if (!h16 || !m) {
            st = PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory for the initial weights");
        } else {
            px_bf16_round(h16, w, n_weights);
            be->upload(be, ex->params, h16, n_weights * (int64_t)sizeof *h16);
            px_ex_state_put(ex, PX_STATE_MASTER, m);
        }
        free(h16);
        if (z == 1)
            free(m);
    }
    free(host);
    return st;
}

/* The communicators of this rank's groups (tp, pp, dp, cp, dp x cp; ep,
 * edp, etp for experts; the tied embedding's first and last stage) and its
 * coordinates in them. */
static px_status exec_comms(px_exec *ex, MPI_Comm world, int rank, px_error *err)
{
    const px_model *m = &ex->plan.model;
    const px_parallel *p = &ex->plan.par;
    px_backend *be = ex->be;
    int colour, key;
    px_layout_group(&ex->lay, rank, PX_DIM_TP, &colour, &key);
    PX_TRY(make_comm(ex, world, colour, key, &ex->tp, "MPI_Comm_split (tp)", err));
    px_layout_group(&ex->lay, rank, PX_DIM_PP, &colour, &key);
    PX_TRY(make_comm(ex, world, colour, key, &ex->pp, "MPI_Comm_split (pp)", err));
    px_layout_group(&ex->lay, rank, PX_DIM_DP, &colour, &key);
    PX_TRY(make_comm(ex, world, colour, key, &ex->dp, "MPI_Comm_split (dp)", err));
    px_layout_group(&ex->lay, rank, PX_DIM_CP, &colour, &key);
    PX_TRY(make_comm(ex, world, colour, key, &ex->cp, "MPI_Comm_split (cp)", err));
    px_layout_group(&ex->lay, rank, PX_DIM_DPCP, &colour, &key);
    PX_TRY(make_comm(ex, world, colour, key, &ex->grad, "MPI_Comm_split (dp x cp)", err));
    ex->cp_rank = px_layout_coord(&ex->lay, rank, PX_DIM_CP);
    ex->moe = m->n_experts > 0;
    if (ex->moe) {
        if (!be->k->moe_router_fwd || !be->k->moe_router_bwd || !be->k->moe_permute ||
            !be->k->moe_unpermute || !be->k->moe_gate_bwd || !be->all_to_all_v)
            return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                           "model \"%s\" has experts: the %s backend has no MoE kernels or "
                           "all-to-all",
                           m->name, be->name);
        px_layout_group(&ex->lay, rank, PX_DIM_EP, &colour, &key);
        PX_TRY(make_comm(ex, world, colour, key, &ex->ep, "MPI_Comm_split (ep)", err));
        px_layout_group(&ex->lay, rank, PX_DIM_EDP, &colour, &key);
        PX_TRY(make_comm(ex, world, colour, key, &ex->edp, "MPI_Comm_split (edp)", err));
        px_layout_group(&ex->lay, rank, PX_DIM_ETP, &colour, &key);
        PX_TRY(make_comm(ex, world, colour, key, &ex->etp, "MPI_Comm_split (etp)", err));
    }
    if (p->cp > 1 && (!be->k->attention_kv_fwd || !be->k->attention_kv_bwd))
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "cp = %d: the %s backend has no context-parallel attention kernels",
                       p->cp, be->name);
    ex->tp_rank = px_layout_coord(&ex->lay, rank, PX_DIM_TP);
    ex->stage = px_layout_coord(&ex->lay, rank, PX_DIM_PP);
    ex->dp_rank = px_layout_coord(&ex->lay, rank, PX_DIM_DP);
    /* Tied embeddings or MTP modules over a pipeline: the first and last
     * stage each hold the table and sum its gradient (Megatron's embedding
     * group). */
    bool emb_member = (m->tied_embeddings || m->n_mtp_modules > 0) && p->pp > 1 &&
                      (ex->stage == 0 || ex->stage == p->pp - 1);
    px_layout_group(&ex->lay, rank, PX_DIM_PP, &colour, &key);
    PX_TRY(make_comm(ex, world, emb_member ? colour : MPI_UNDEFINED, key, &ex->emb,
                  "MPI_Comm_split (embedding)", err));

    return PX_OK;
}

/* The shapes this rank computes with: the model's sizes, its shards of
 * them, tokens per micro-batch. */
static px_status exec_sizes(px_exec *ex, px_error *err)
{
    const px_model *m = &ex->plan.model;
    const px_parallel *p = &ex->plan.par;
    int64_t t = p->tp;
    ex->h = m->hidden;
    ex->nh = m->n_heads;
    ex->nkv = m->n_kv_heads;
    ex->hd = m->head_dim;
    ex->f = m->ffn;
    ex->V = m->vocab;
    ex->s = px_plan_seq_len(m, p);
    ex->b = p->micro_batch;
    ex->s_l = ex->s / p->cp;
    ex->cp_chunk = ex->s / (2 * p->cp);
    ex->T = ex->s_l * ex->b;
    ex->sp = p->sp && p->tp > 1;
    ex->Ts = ex->sp ? ex->T / t : ex->T;
    ex->S_local = ex->sp ? ex->s_l / t : ex->s_l;
    ex->row0_sp = ex->sp ? ex->tp_rank * ex->S_local : 0;
    ex->global_tokens = (double)ex->s * (double)ex->b * (double)p->n_micro * (double)p->dp;
    ex->nh_l = ex->nh / t;
    ex->nkv_l = ex->nkv / t;
    ex->f_l = ex->f / t;
    /* Padded to a multiple of tp (px_params_vocab_rows); this rank's rows past
     * the vocabulary are never a target nor looked up, and its logits cover
     * its V_own real rows only, so the padding takes no part in the loss. */
    ex->V_l = px_params_vocab_rows(m, p->tp) / t;
    ex->V_own = ex->V - ex->tp_rank * ex->V_l;
    ex->V_own = ex->V_own < 0 ? 0 : ex->V_own > ex->V_l ? ex->V_l : ex->V_own;
    ex->qkv_l = (ex->nh_l + 2 * ex->nkv_l) * ex->hd;
    ex->mla = m->attn == PX_ATTN_MLA;
    if (ex->mla)
        PX_TRY(px_mla_setup(ex, err));
    ex->E = m->n_experts;
    ex->E_l = ex->moe ? m->n_experts / p->ep : 0;
    ex->top_k = m->top_k;
    ex->router.score = m->scoring_func == PX_SCORING_SIGMOID ? PX_ROUTER_SIGMOID : PX_ROUTER_SOFTMAX;
    ex->router.renorm = m->norm_topk_prob;
    ex->router.n_group = (int)m->n_group;
    ex->router.topk_group = (int)m->topk_group;
    ex->router.scale = (float)m->routed_scaling_factor;
    ex->fe = m->moe_ffn;
    ex->fe_l = ex->moe ? m->moe_ffn / p->etp : 0;
    ex->fs_l = ex->moe ? m->n_shared_experts * m->moe_ffn / t : 0;
    /* MoE token shard: the SP shard, or this TP rank's slice of the rows. */
    ex->Tm = p->tp > 1 ? ex->T / t : ex->T;
    ex->row0_m = ex->sp || p->tp == 1 ? 0 : ex->tp_rank * ex->Tm;
    ex->llama = m->block == PX_BLOCK_LLAMA;
    ex->w1_rows = ex->llama ? 2 * ex->f_l : ex->f_l;
    ex->has_pos = !ex->llama;
    ex->L = m->n_layers;
    ex->m = p->n_micro;
    ex->pp_size = p->pp;
    ex->vpp = p->vpp;
    ex->norm_eps = (float)m->norm_eps;
    ex->latent_norm_eps = (float)m->latent_norm_eps;
    ex->rope = px_rope_plain(m->rope_theta);
    ex->rope.interleaved = m->rope_interleave;
    if (m->rope_scaling == PX_ROPE_LLAMA3) {
        ex->rope.scale = PX_ROPE_SCALE_LLAMA3;
        ex->rope.factor = m->rope_factor;
        ex->rope.low_freq_factor = m->rope_low_freq_factor;
        ex->rope.high_freq_factor = m->rope_high_freq_factor;
        ex->rope.original_max_positions = (double)m->rope_original_max_positions;
    }
    ex->store_probs_allowed = !p->flash_attention;
    return PX_OK;
}

/* What the plan asks that the backend does not run: refused by name. */
static px_status exec_backend_supports(const px_exec *ex, px_error *err)
{
    const px_model *m = &ex->plan.model;
    const px_parallel *p = &ex->plan.par;
    const px_backend *be = ex->be;
    if (ex->store_probs_allowed && be->flash_only)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "plan field parallel.flash_attention = false: the %s backend's attention "
                       "never stores the s x s probabilities; allowed: true",
                       be->name);
    /* the engine's GEMMs run in its storage dtype (bf16 or fp32): a plan
     * costed for FP8 / FP4 GEMMs, or fp16 with loss scaling, is not what it
     * would measure */
    if (p->precision != PX_PREC_BF16)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "plan field parallel.precision = %s: the %s backend runs bf16 GEMMs "
                       "(fp32 storage mode: fp32) only; allowed: bf16 (plan --precision bf16)",
                       px_precision_name(p->precision), be->name);
    if (px_model_n_sliding_layers(m) > 0)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model field sliding_window = %lld on %lld layers: the %s backend's "
                       "attention is full causal; allowed: 0 (no sliding window)",
                       (long long)m->sliding_window, (long long)px_model_n_sliding_layers(m),
                       be->name);
    if (p->cp > 1 && p->cp_comm == PX_CPC_A2A)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "plan field parallel.cp_comm = a2a: the %s backend exchanges the "
                       "sequence's keys and values (all-gather / reduce-scatter), not heads; "
                       "allowed: p2p, all-gather",
                       be->name);
    if (m->n_experts > 0 && m->n_group > 1 && be->no_router_groups)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model field n_group = %lld: group-limited routing has no kernel on the "
                       "%s backend; allowed: 1 (or --backend cpu)",
                       (long long)m->n_group, be->name);
    return PX_OK;
}

/* Parameters, gradients, master weights and moments, sharded by ZeRO stage,
 * and their initial values. */
static px_status exec_params(px_exec *ex, px_error *err)
{
    const px_model *m = &ex->plan.model;
    const px_parallel *p = &ex->plan.par;
    /* Parameters: one buffer each for weights, gradients and the two moments
     * (LoRA: of the adapters; the frozen base is a table of its own). */
    bool lora = px_finetune_is_lora(&p->finetune);
    if (lora)
        PX_TRY(px_lora_tables(&ex->tab, &ex->ftab, m, p, ex->tp_rank, ex->stage, err));
    else
        PX_TRY(px_params_build_etp(&ex->tab, m, p, ex->tp_rank, ex->stage, ex->ep.rank,
                                   ex->etp.rank, err));
    ex->n_params = ex->tab.n_elems;
    /* The distributed optimizer shards over every rank that sums the
     * gradients: dp x cp.  Dense region first (padded to a multiple of
     * dp x cp), then the experts (summed over edp, never sharded). */
    int64_t dp = (int64_t)p->dp * p->cp;
    ex->zero = p->zero;
    ex->n_dense = (ex->tab.n_dense + dp - 1) / dp * dp;
    ex->n_exp = ex->tab.n_elems - ex->tab.n_dense;
    ex->n_padded = ex->n_dense + ex->n_exp;
    ex->n_shard = p->zero >= 1 ? ex->n_dense / dp : ex->n_dense;
    if (p->zero >= 2) /* per-unit shards (px_shard.c): n_shard = the pieces' sum */
        PX_TRY(px_ex_units_build(ex, err));
    /* Weights: full (ZeRO 0-2) or this rank's pieces (ZeRO-3); gradients:
     * full (ZeRO 0-1) or the pieces (ZeRO-2/3). */
    int64_t n_weights = p->zero >= 3 ? ex->n_shard : ex->n_padded;
    ex->n_grads = p->zero >= 2 ? ex->n_shard : ex->n_padded;
    /* The weights in the compute dtype (bf16: the cost model's 2 B/param of
     * weights); in bf16 storage the fp32 master beside the moments, sharded
     * as they are (its 4 B/param of the optimizer's 12). */
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_WEIGHTS, n_weights, &ex->params, err));
    PX_TRY(px_ex_alloc_f32(ex, PX_MEM_GRADS, ex->n_grads, &ex->grads, err));
    /* Moments: the dense shard, plus the experts whole below ZeRO-2 (from
     * ZeRO-2 on, n_shard already holds this rank's pieces of the experts). */
    int64_t n_moments = ex->n_shard + (p->zero >= 2 ? 0 : ex->n_exp);
    ex->n_weights = n_weights;
    ex->n_moments = n_moments;
    /* Under optimizer offload the device keeps the state past the host's
     * share (px_offload.c). */
    int64_t n_device = n_moments;
    PX_TRY(px_ex_offload_setup(ex, n_moments, &n_device, err));
    if (ex->act_dtype != PX_F32)
        PX_TRY(px_ex_alloc_f32(ex, PX_MEM_OPTIMIZER, n_device, &ex->master, err));
    PX_TRY(px_ex_alloc_f32(ex, PX_MEM_OPTIMIZER, n_device, &ex->adam_m, err));
    PX_TRY(px_ex_alloc_f32(ex, PX_MEM_OPTIMIZER, n_device, &ex->adam_v, err));
    PX_TRY(init_weights(ex, n_weights, n_moments, err));
    PX_TRY(px_ex_decay_build(ex, err));
    if (lora)
        PX_TRY(px_lora_setup(ex, err));

    return PX_OK;
}

/* The data, the activation stash, the schedule's op list and timeline, the
 * CP positions, the qk-norm and loss buffers. */
static px_status exec_buffers(px_exec *ex, const px_exec_options *opt, px_error *err)
{
    const px_parallel *p = &ex->plan.par;
    px_backend *be = ex->be;
    PX_TRY(px_data_open(&ex->data, opt->data_path, ex->V, ex->s, opt->seed, err));
    ex->stash = calloc((size_t)(ex->vpp * ex->m), sizeof *ex->stash);
    ex->ops = calloc((size_t)(3 * ex->vpp * ex->m), sizeof *ex->ops);
    if (!ex->stash || !ex->ops)
        return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory");
    for (int j = 0; j < ex->vpp; j++)
        for (int64_t i = 0; i < ex->m; i++) {
            px_chunk_act *ca = &ex->stash[j * ex->m + i];
            ca->layers = calloc((size_t)ex->tab.chunks[j].n_layers, sizeof *ca->layers);
            if (!ca->layers)
                return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory");
        }
    PX_TRY(px_schedule_build(p->schedule, p->pp, p->vpp, ex->stage, (int)ex->m, ex->ops,
                          &ex->n_ops, err));
    PX_TRY(px_timeline_build(&ex->tl, p->schedule, p->pp, p->vpp, (int)ex->m, err));
    if (p->cp > 1) { /* global positions of this rank's rows, for the attention masks */
        int32_t *host = malloc((size_t)ex->s_l * sizeof *host);
        if (!host)
            return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory");
        for (int64_t i = 0; i < ex->s_l; i++)
            host[i] = (int32_t)px_ex_pos(ex, ex->cp_rank, i);
        px_status st = px_ex_alloc_i32(ex, PX_MEM_BUFFERS, ex->s_l, &ex->qpos, err);
        if (!st)
            be->upload(be, ex->qpos, host, ex->s_l * (int64_t)sizeof(int32_t));
        free(host);
        PX_TRY(st);
    }
    PX_TRY(px_qknorm_setup(ex, err));
    if (ex->tab.chunks[ex->vpp - 1].is_last)
        PX_TRY(px_ex_alloc_f32(ex, PX_MEM_BUFFERS, ex->m * ex->T, &ex->loss_tok, err));
    PX_TRY(px_mtp_setup(ex, err));
    return PX_OK;
}

px_status px_exec_create(px_exec **out, const px_plan *plan, const px_exec_options *opt,
                         px_backend *be, MPI_Comm world, px_error *err)
{
    *out = NULL;
    int rank, size;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    px_caps caps;
    px_exec_caps(be->name, &caps);
    PX_TRY(px_exec_check_plan(plan, &caps, err));
    PX_TRY(px_exec_check_world(plan, size, err));
    px_exec *ex = calloc(1, sizeof *ex);
    if (!ex)
        return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory");
    *out = ex;
    ex->tp.mpi = ex->pp.mpi = ex->dp.mpi = ex->emb.mpi = MPI_COMM_NULL;
    ex->cp.mpi = ex->grad.mpi = ex->ep.mpi = ex->edp.mpi = ex->etp.mpi = MPI_COMM_NULL;
    ex->ep.size = ex->edp.size = ex->etp.size = 1;
    ex->plan = *plan;
    ex->opt = *opt;
    ex->be = be;
    ex->k = be->k;
    PX_TRY(pick_dtype(ex, plan, opt, be, err));
    ex->world_rank = rank;
    ex->world_size = size;
    px_mem_init(&ex->mem, be);
    const px_parallel *p = &ex->plan.par;
    PX_TRY(px_layout_init(&ex->lay, p, err));

    PX_TRY(exec_comms(ex, world, rank, err));
    PX_TRY(exec_sizes(ex, err));
    PX_TRY(exec_backend_supports(ex, err));
    /* both zero-bubble schedules split each backward into B and W */
    ex->zero_bubble = p->schedule == PX_SCHED_ZB_H1 || p->schedule == PX_SCHED_ZB_H2;
    ex->rc = calloc((size_t)ex->L, sizeof *ex->rc);
    if (!ex->rc)
        return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory");
    for (int64_t l = 0; l < ex->L; l++)
        ex->rc[l] = p->n_layer_recompute ? (px_recompute)p->layer_recompute[l] : p->recompute;

    PX_TRY(exec_params(ex, err));
    PX_TRY(exec_buffers(ex, opt, err));
    px_mem_reset_peak(&ex->mem);
    return PX_OK;
}

double px_exec_mtp_loss(const px_exec *ex)
{
    return ex->mtp_loss;
}

double px_exec_grad_norm(const px_exec *ex)
{
    return ex->grad_norm;
}

bool px_exec_diverged(const px_exec *ex)
{
    return ex->diverged;
}

/* ---- accessors, dump, teardown ---------------------------------------------------------- */

float *px_exec_params(px_exec *ex, int64_t *n)
{
    if (ex->master && ex->n_host > 0) {
        *n = 0;
        return NULL;
    }
    if (ex->master) /* laid out as the moments */
        *n = ex->n_shard + (ex->zero >= 2 ? 0 : ex->n_exp);
    else
        *n = ex->zero >= 3 ? ex->n_shard : ex->n_params;
    return px_ex_master(ex);
}

px_dtype px_exec_dtype(const px_exec *ex)
{
    return ex->act_dtype;
}

/* The full fp32 master of this rank's slices into host[n_params]
 * (collective under ZeRO 1-3 in bf16 storage, ZeRO-3 in fp32). */
static px_status master_to_host(px_exec *ex, float *host, px_error *err)
{
    px_backend *be = ex->be;
    if (ex->zero >= 3 || (ex->master && ex->zero == 2))
        return px_ex_gather_all(ex, host, err); /* unit by unit */
    if (!ex->master) {
        be->download(be, host, px_ex_master(ex), ex->n_params * (int64_t)sizeof(float));
        return PX_OK;
    }
    if (ex->zero == 0) {
        float *master = NULL;
        PX_TRY(px_ex_master_whole(ex, &master, err));
        be->download(be, host, master, ex->n_params * (int64_t)sizeof(float));
        px_ex_master_whole_done(ex, &master);
        return PX_OK;
    }
    /* ZeRO-1 in bf16 storage: the dense shards of dp x cp, then the experts. */
    float *master = NULL, *full = NULL;
    PX_TRY(px_ex_master_whole(ex, &master, err));
    px_status st = px_ex_alloc_f32(ex, PX_MEM_TEMP, ex->n_padded, &full, err);
    if (!st)
        st = be->all_gather(be, full, master, ex->n_shard, PX_F32, &ex->grad, err);
    if (!st) {
        be->copy(be, full + ex->n_dense, master + ex->n_shard, ex->n_exp * (int64_t)sizeof(float));
        be->download(be, host, full, ex->n_params * (int64_t)sizeof(float));
    }
    px_ex_free(ex, &full);
    px_ex_master_whole_done(ex, &master);
    return st;
}

float *px_exec_grads(px_exec *ex, int64_t *n)
{
    *n = ex->zero >= 2 ? ex->n_shard : ex->n_params;
    return ex->grads;
}

const px_param_table *px_exec_table(const px_exec *ex)
{
    return &ex->tab;
}

const px_memtrack *px_exec_memory(const px_exec *ex)
{
    return &ex->mem;
}

void px_exec_reset_peak(px_exec *ex)
{
    px_mem_reset_peak(&ex->mem);
}

px_status px_exec_dump_weights(px_exec *ex, const char *dir, px_error *err)
{
    PX_TRY(px_io_make_dir(dir, err));
    char path[1024];
    snprintf(path, sizeof path, "%s/rank%d.bin", dir, ex->world_rank);
    /* LoRA: the frozen base's tensors first (their compute copy, widened),
     * then the adapters; nf = 0 otherwise. */
    int64_t nf = ex->ftab.n_elems, n = nf + ex->n_params;
    float *host = malloc((size_t)(n > 0 ? n : 1) * sizeof *host);
    if (!host)
        return PX_FAIL(err, PX_ERR_NOMEM, "dump: out of memory");
    px_status st = nf > 0 ? px_lora_frozen_to_host(ex, host, err) : PX_OK;
    if (!st) /* the fp32 master in both storages */
        st = master_to_host(ex, host + nf, err);
    if (st) {
        free(host);
        return st;
    }
    /* Little-endian fp32, byte by byte so the format is host-independent. */
    unsigned char *bytes = malloc((size_t)(n > 0 ? n : 1) * 4);
    if (!bytes) {
        free(host);
        return PX_FAIL(err, PX_ERR_NOMEM, "dump: out of memory");
    }
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &host[i], 4);
        for (int b = 0; b < 4; b++)
            bytes[4 * i + b] = (unsigned char)(u >> (8 * b));
    }
    free(host);
    st = px_io_write_atomic(path, bytes, (size_t)n * 4, err);
    free(bytes);
    if (st)
        return st;
    snprintf(path, sizeof path, "%s/rank%d.tsv", dir, ex->world_rank);
    size_t cap = (size_t)(ex->ftab.n_segs + ex->tab.n_segs + 1) * 8 * 21 + 1, used = 0;
    char *text = malloc(cap);
    if (!text)
        return PX_FAIL(err, PX_ERR_NOMEM, "dump: out of memory");
    for (int i = 0; i < ex->ftab.n_segs + ex->tab.n_segs; i++) {
        bool base = i < ex->ftab.n_segs;
        const px_param_seg *s = base ? &ex->ftab.segs[i] : &ex->tab.segs[i - ex->ftab.n_segs];
        used += (size_t)snprintf(text + used, cap - used, "%lld %lld %lld %lld %lld %lld %lld %lld\n",
                                 (long long)s->tensor_id, (long long)s->full_rows,
                                 (long long)s->full_cols, (long long)s->row0,
                                 (long long)s->n_rows, (long long)s->col0,
                                 (long long)s->n_cols, (long long)(s->offset + (base ? 0 : nf)));
    }
    st = px_io_write_atomic(path, text, used, err);
    free(text);
    return st;
}

static void free_comm(px_exec *ex, px_comm *c)
{
    if (c->mpi != MPI_COMM_NULL) {
        ex->be->comm_free(ex->be, c);
        MPI_Comm_free(&c->mpi);
    }
}

void px_exec_destroy(px_exec *ex)
{
    if (!ex)
        return;
    px_host_step_destroy(ex);
    px_mem_release_all(&ex->mem);
    if (ex->stash)
        for (int64_t i = 0; i < ex->vpp * ex->m; i++) {
            free(ex->stash[i].layers);
            free(ex->stash[i].mtp); /* (left by a failed step; its tensors went above) */
        }
    free(ex->stash);
    free(ex->ops);
    px_timeline_free(&ex->tl);
    free(ex->rc);
    free(ex->units);
    free(ex->no_decay);
    free(ex->host_grads);
    px_data_close(&ex->data);
    px_params_free(&ex->tab);
    px_params_free(&ex->ftab);
    if (ex->be) {
        free_comm(ex, &ex->tp);
        free_comm(ex, &ex->pp);
        free_comm(ex, &ex->dp);
        free_comm(ex, &ex->cp);
        free_comm(ex, &ex->grad);
        free_comm(ex, &ex->emb);
        free_comm(ex, &ex->ep);
        free_comm(ex, &ex->edp);
        free_comm(ex, &ex->etp);
    }
    free(ex);
}
