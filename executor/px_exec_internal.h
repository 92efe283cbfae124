/* px_exec_internal.h — the engine's state, shared by px_exec.c (pipeline,
 * data parallelism, optimizer), the services below it (px_ex_core.c,
 * declared in px_ex_core.h) and the layer files (px_layer.c and the files it
 * calls).  Not an interface outside executor/. */
#ifndef PX_EXEC_INTERNAL_H
#define PX_EXEC_INTERNAL_H

#include "px_data.h"
#include "px_ex_core.h"
#include "px_exec.h"
#include "px_layout.h"
#include "px_schedule.h"

/* What one layer keeps for its backward (docs/executor.md, "Activations").
 * Ts = tokens of this rank's sequence shard (T / tp under SP, else T). */
typedef struct {
    void *x_in;              /* [Ts, h] layer input (the only tensor under full recompute) */
    void *n1_out;            /* [Ts, h] first norm output (the shard; re-gathered under SP) */
    float *n1_mean, *n1_rstd;/* [Ts] (mean: LayerNorm only) */
    void *qkv;               /* [T, (nh_l + 2 nkv_l) hd] after RoPE */
    void *att;               /* [T, nh_l hd] attention output */
    float *lse;              /* [b, nh_l, s] (not kept under selective recompute) */
    float *probs;            /* [b, nh_l, s, s] only without FlashAttention-style (fp32) */
    void *x_mid;             /* [Ts, h] residual after attention */
    void *n2_out;            /* [Ts, h] */
    float *n2_mean, *n2_rstd;/* [Ts] */
    void *h1;                /* [T, 2 f_l] gate|up (Llama) or [T, f_l] fc output (GPT) */
    void *h2;                /* [T, f_l] activation output */
    /* Zero-bubble schedules: output gradients kept from B for the weight
     * gradients of W (dx shards re-gathered under SP in W). */
    void *w_dqkv;            /* [T, qkv_l] */
    void *w_do;              /* [Ts, h] gradient at the attention output */
    void *w_dh1;             /* [T, w1_rows] */
    void *w_dy;              /* [Ts, h] gradient at the MLP output */
    /* MoE layers (px_moe.c): router and dispatch of this rank's Tm tokens;
     * n_send = Tm k rows leave, n_recv rows arrive for this rank's experts. */
    float *m_probs;            /* [Tm, E] router softmax (fp32) */
    int32_t *m_idx;            /* [Tm, k] chosen experts */
    float *m_gate;             /* [Tm, k] their probabilities (fp32) */
    int32_t *m_rows, *m_slots; /* [n_send] token row and gate slot of each sent row */
    void *m_xr;                /* [n_g, h] rows for this rank's experts: those received
                                * (n_recv), all-gathered over etp (n_g = their sum
                                * over the etp group; n_recv when etp = 1) */
    void *m_h1;                /* [n_g, 2 fe_l] their gate|up outputs (this rank's slice) */
    void *m_yr;                /* [n_send, h] expert outputs back, in dispatch order */
    struct px_moe_route *m_route; /* host row counts of the all-to-alls */
    /* MLA layers (px_mla.c): the q and kv latents before and after their
     * RMSNorms ([T, q_lora_rank], [T, kv_lora_rank]) and the norms' rstd. */
    void *mla_cq, *mla_cqn, *mla_c, *mla_cn;
    float *mla_cq_rstd, *mla_c_rstd;
    /* qk_norm (px_qknorm.c): the q and k head rows before the norm, all q
     * heads' rows then all k heads' ([T (nh_l + nkv_l), hd]), and their rstd. */
    void *qk_in;
    float *qk_rstd;            /* [T (nh_l + nkv_l)] */
    /* Shared experts (px_shared_expert.c), as the dense MLP's h1 and h2. */
    void *sh_h1;               /* [T, 2 fs_l] gate|up */
    void *sh_h2;               /* [T, fs_l] SwiGLU output */
    /* LoRA (px_lora.c): (alpha / r) A x of each target, [T, r]. */
    void *lora_u[4];
} px_layer_act;

/* One (local chunk, micro-batch) in flight.  void * tensors are in the
 * activation dtype (ex->act_dtype), float * ones fp32 in every mode. */
typedef struct {
    bool live;
    px_layer_act *layers;      /* [chunk n_layers] */
    int32_t *tokens, *targets; /* [T] (first / last chunk) */
    void *fn_in;               /* [Ts, h] final norm input (last chunk) */
    void *fn_out;
    float *fn_mean, *fn_rstd;
    void *logits;              /* [T, V_own] */
    float *xent;               /* [3T]: max | sumexp | target logit */
    void *in_x, *in_dx;        /* received from the pipeline neighbour, until the F / B
                                * that takes them (Ts x h) */
    struct px_mtp_act *mtp;    /* [n_mtp] the MTP modules' tensors (last chunk, px_mtp.c) */
} px_chunk_act;

/* ZeRO-2/3 sharding unit: a contiguous run of the parameter table (one
 * layer's dense tensors, one layer's experts; or the word embedding, the
 * positions, the final norm, the LM head) whose gradient is reduce-scattered,
 * and (ZeRO-3) whose weights are all-gathered, as one message over its group
 * (dp x cp; edp for experts).  Rank r of that group owns unit elements
 * [r piece, (r + 1) piece); the window is padded to d x piece. */
typedef struct {
    int64_t start, n;   /* table range (elements) */
    px_comm *comm;      /* the group that shares the unit: &ex->grad or &ex->edp */
    int64_t piece;      /* ceil(n / d) */
    int64_t shard_off;  /* this rank's piece in the shard buffers */
    void *w;            /* full weight window [d piece] (compute dtype) while in use */
    float *g;           /* full gradient window [d piece] (fp32) while in use */
    int w_refs, g_refs;
} px_unit;

struct px_exec {
    px_plan plan;
    px_exec_options opt;
    px_backend *be;
    const px_kernels *k;
    px_dtype act_dtype; /* storage of activations, their gradients and the compute copy
                         * of the weights (p2p messages carry it): the plan's
                         * hw.dtype_bytes (2 bf16, 4 fp32) or --dtype */
    px_layout lay;
    int world_rank, world_size;
    px_comm tp, pp, dp, emb; /* emb: first + last stage (tied embeddings, pp > 1) */
    px_comm cp;              /* context parallel: the sequence's 2 cp chunks */
    px_comm grad;            /* dp x cp: where dense gradients are summed (= dp when cp = 1) */
    int tp_rank, stage, dp_rank, cp_rank;
    /* Mixture of experts: ep = the expert-parallel group (experts folded over
     * tp x cp x dp of a stage), edp = the ranks holding the same experts
     * (their gradients are summed there), etp = the expert-tensor-parallel
     * group (the ranks sharing the ffn of the same experts; the ep group is
     * the ranks of one etp rank).  Size-1 groups for dense models. */
    px_comm ep, edp, etp;
    bool moe;
    int64_t E, E_l, top_k, fe; /* experts, per rank, chosen per token, expert ffn */
    int64_t fe_l;              /* this rank's slice of the expert ffn: fe / etp */
    int64_t Tm, row0_m;        /* tokens an MoE layer routes here, first row in the
                                * [Ts, h] norm output (T / tp, tp_rank T / tp without SP) */
    int64_t n_dense, n_exp;    /* parameter regions: dense (padded to dp x cp), experts */

    /* Sizes (elements).  s is the full sequence, s_l = s / cp this rank's
     * positions (chunks cp_rank and 2 cp - 1 - cp_rank of 2 cp, for causal
     * load balance), T = s_l b tokens per micro-batch, Ts = T / tp under SP,
     * S_local = Ts / b sequence rows of the SP shard starting at local row
     * row0_sp. */
    int64_t h, nh, nkv, hd, f, V, s, b, T, Ts, S_local, row0_sp;
    int64_t s_l, cp_chunk;
    int32_t *qpos;            /* [s_l] global positions (device; cp > 1 only) */
    double global_tokens;     /* s b m dp: the loss is the mean over these */
    int64_t nh_l, nkv_l, f_l, V_l, qkv_l, w1_rows;
    int64_t V_own;             /* rows of this V_l-row shard inside the vocabulary */
    int64_t L, m;
    int pp_size, vpp;
    bool llama, sp, has_pos;
    bool mla;                 /* multi-head latent attention (px_mla.c): hd is the
                               * query/key width, nkv = nh */
    float norm_eps;           /* every norm but MLA's latent ones (model.norm_eps) */
    float latent_norm_eps;    /* MLA's q and kv latent RMSNorms */
    px_rope rope;             /* RoPE's frequencies and pairs (px_rope.h) */
    px_router router;         /* MoE scores, picks and gates (px_router.h) */
    bool store_probs_allowed; /* no FlashAttention-style core in the plan */
    bool zero_bubble;         /* schedule splits B and W */
    px_recompute *rc;         /* [L] per global layer */

    /* Parameters, gradients, AdamW moments: one allocation each.  params is
     * what the kernels read (act_dtype: the compute copy); in bf16 storage
     * master holds the fp32 weights AdamW updates, laid out as the moments
     * (the optimizer's shard under ZeRO 1-3, PX_MEM_OPTIMIZER as in the cost
     * model); in fp32 storage master is NULL: params is the master. */
    px_param_table tab;
    void *params;
    float *master, *grads, *adam_m, *adam_v;
    int64_t n_params;  /* elements in the table */
    int64_t n_padded;  /* n_params rounded up to a multiple of dp (ZeRO-1) */
    int64_t n_shard;   /* optimizer elements on this rank */
    int64_t n_grads;   /* elements of the gradient buffer (the shard under ZeRO-2/3) */
    int zero;          /* the plan's ZeRO stage */
    px_unit *units;    /* ZeRO-2/3: sharding units in table order */
    int64_t *no_decay; /* [n_no_decay][2]: table ranges AdamW does not decay (px_optim.c) */
    int n_no_decay;
    int n_units;
    int64_t adam_steps;
    /* Optimizer offload (px_offload.c): master, adam_m and adam_v hold state
     * offsets [n_host, n_moments); host_* the first n_host (host memory);
     * host_step the thread that updates them (px_host_step.c). */
    int64_t n_host;
    float *host_master, *host_m, *host_v;
    struct px_host_step *host_step;

    px_memtrack mem;
    px_data data;
    px_chunk_act *stash; /* [vpp * m] */
    px_sched_op *ops;
    int n_ops;
    px_timeline tl;   /* every stage's ops and messages on one clock (p2p phases) */
    double loss_sum; /* this step's token losses on this rank's last chunk */
    double grad_norm; /* px_exec_grad_norm of the last step */
    bool diverged;    /* the last step's loss or gradients were not finite */
    float *host_grads;/* [n_grads] host staging of the gradient check (px_health.c) */
    int64_t n_weights, n_moments; /* elements of params and of master / adam_m / adam_v */
    float *loss_tok; /* [m][T] those token losses on the device (last stage) */
    int32_t *qk_rows; /* qk_norm's row gather and scatter maps (px_qknorm.c) */
    int64_t fs_l;     /* shared experts: this TP rank's n_shared moe_ffn / tp */
    /* LoRA (px_lora.c): tab holds the adapters; the base model is ftab, its
     * weights fparams (compute dtype, never updated); lora_s the scale
     * (alpha / r) I [r, r]; gsink where the frozen norms' kernels put the
     * weight gradients nobody reads.  ftab is empty and the rest NULL
     * otherwise. */
    px_param_table ftab;
    void *fparams, *lora_s;
    float *gsink;
    int64_t lora_r;
    /* Multi-token prediction (px_mtp.c): modules, the loss scale lambda,
     * their token losses [n_mtp][m][T] (last stage), and the last step's
     * MTP term lambda / D sum_k loss_k. */
    int n_mtp;
    float mtp_scale;
    float *mtp_loss_tok;
    double mtp_loss;
};

/* The fp32 weights AdamW updates: the master (bf16 storage) or the weights
 * themselves (fp32 storage). */
static inline float *px_ex_master(px_exec *ex)
{
    return ex->master ? ex->master : (float *)ex->params;
}

/* An activation-dtype buffer (ex->act_dtype). */
static inline px_status px_ex_alloc_act(px_exec *ex, px_mem_kind kind, int64_t n, void **out,
                                        px_error *err)
{
    return px_ex_alloc(ex, kind, n, ex->act_dtype, out, err);
}
#define px_ex_free(ex, pp)                                                               \
    do {                                                                                 \
        px_mem_free(&(ex)->mem, *(pp));                                                  \
        *(pp) = NULL;                                                                    \
    } while (0)

/* Element i of an activation-dtype buffer, and bytes of n such elements. */
static inline void *px_ex_at(const px_exec *ex, const void *base, int64_t i)
{
    return px_dtype_at(base, i, ex->act_dtype);
}
static inline int64_t px_ex_bytes(const px_exec *ex, int64_t n)
{
    return n * px_dtype_bytes(ex->act_dtype);
}

/* ---- divergence (px_health.c) ------------------------------------------- */
/* Test switch: this rank's gradients and loss NaN (opt.inject_nan_step). */
void px_ex_inject_nan(px_exec *ex);
/* Collective: checks this step's loss and every rank's gradients for NaN or
 * infinity (one all-reduce); sets ex->grad_norm and ex->diverged. */
px_status px_ex_check_health(px_exec *ex, double loss, px_error *err);

/* ---- ZeRO-2/3 (px_shard.c) ----------------------------------------------
 * Under ZeRO-2 ex->grads is this rank's gradient shard (n_shard elements, the
 * units' pieces back to back); under ZeRO-3 ex->params is the weight shard
 * too.  Code reads weights and gradients through px_ex_w / px_ex_g, which
 * point into the full buffers below ZeRO-2 and into the unit's window above;
 * the window exists between px_ex_use_* and px_ex_done_* (reference counted). */
px_status px_ex_units_build(px_exec *ex, px_error *err);
px_unit *px_ex_unit(const px_exec *ex, int64_t off);
/* All-gathers the weights of the unit holding table offset off (ZeRO-3;
 * no-op otherwise, and for off < 0). */
px_status px_ex_use_w(px_exec *ex, int64_t off, px_error *err);
void px_ex_done_w(px_exec *ex, int64_t off);
/* A zeroed gradient window for the unit (ZeRO-2/3); done reduce-scatters it
 * over dp x cp, adds this rank's piece to the shard and frees the window. */
px_status px_ex_use_g(px_exec *ex, int64_t off, px_error *err);
px_status px_ex_done_g(px_exec *ex, int64_t off, px_error *err);
/* End of step: the TP (SP-replicated tensors) and tied-embedding sums on the
 * pieces, then AdamW on the shard and (ZeRO-2) the weight all-gather. */
px_status px_ex_shard_reduce(px_exec *ex, px_error *err);
px_status px_ex_shard_update(px_exec *ex, px_error *err);
/* AdamW (px_optim.c): the norms' and biases' table ranges, built once; and
 * one update of n elements at optimizer-state offset so (the moments'
 * layout) that cover the table range [table_off, table_off + n), each run
 * with its weight decay.  w: those elements of the compute copy (activation
 * dtype); the update refreshes them.  Under optimizer offload the host share
 * of the range is queued to the host thread: px_host_step_join before the
 * weights are read. */
px_status px_ex_decay_build(px_exec *ex, px_error *err);
void px_ex_adamw(px_exec *ex, int64_t so, const float *grad, int64_t n, int64_t table_off,
                 void *w);

/* ---- optimizer offload (px_offload.c) -------------------------------------
 * The first n_host elements of this rank's optimizer state (Megatron's rule:
 * the leading share in parameter order) live in host memory: host_master
 * (bf16 storage only), host_m, host_v.  Setup sizes them from the plan and
 * returns the device arrays' length (n_moments - n_host). */
px_status px_ex_offload_setup(px_exec *ex, int64_t n_moments, int64_t *n_device,
                              px_error *err);
typedef enum { PX_STATE_MASTER, PX_STATE_M, PX_STATE_V } px_state_part;
/* The whole state part (n_moments fp32 values, host share first) from or
 * into a host buffer: initial values, checkpoints. */
void px_ex_state_put(px_exec *ex, px_state_part part, const void *src);
void px_ex_state_get(px_exec *ex, px_state_part part, void *dst);
/* The fp32 master in one device buffer for the collectives that read it
 * whole: px_ex_master without a host share of it, else a temporary that
 * px_ex_master_whole_done frees. */
px_status px_ex_master_whole(px_exec *ex, float **out, px_error *err);
void px_ex_master_whole_done(px_exec *ex, float **p);

/* ---- the host share's AdamW on a host thread (px_host_step.c) -----------
 * A job: one range of the host share and the function that updates it
 * (px_optim.c's).  push
 * starts the thread on the step's first job and queues the rest to it, so
 * the host updates while the main thread steps the device share; join waits
 * for every queued job (the weights are then whole).  A job the queue cannot
 * take, or a thread that cannot start, runs on the caller: the same result,
 * later. */
typedef struct px_host_job px_host_job;
struct px_host_job {
    void (*run)(const px_exec *ex, const px_host_job *j);
    float *master;
    const float *grad;
    float *m, *v;
    int64_t n, table_off;
    void *copy;
};
px_status px_host_step_create(px_exec *ex, int capacity, px_error *err);
void px_host_step_push(px_exec *ex, const px_host_job *j);
void px_host_step_join(px_exec *ex);
void px_host_step_destroy(px_exec *ex);

/* ZeRO-2/3: this rank's pieces (the shard layout) of the full initial
 * values host[n_params]; and the full fp32 master weights (the weights in
 * fp32 storage) into host[n_params], gathered unit by unit from the pieces
 * (collective over each unit's group). */
void px_ex_shard_init(px_exec *ex, const float *host, float *host_shard);
px_status px_ex_gather_all(px_exec *ex, float *host, px_error *err);

/* The compute copy of the weights at table offset off (activation dtype). */
static inline void *px_ex_w(px_exec *ex, int64_t off)
{
    if (px_off_frozen(off))
        return px_ex_at(ex, ex->fparams, off & ~PX_OFF_FROZEN);
    if (ex->zero < 3)
        return px_ex_at(ex, ex->params, off);
    px_unit *u = px_ex_unit(ex, off);
    return u && u->w ? px_ex_at(ex, u->w, off - u->start) : NULL;
}

/* NULL for a frozen tensor: its weight gradient is not taken. */
static inline float *px_ex_g(px_exec *ex, int64_t off)
{
    if (px_off_frozen(off))
        return NULL;
    if (ex->zero < 2)
        return ex->grads + off;
    px_unit *u = px_ex_unit(ex, off);
    return u && u->g ? u->g + (off - u->start) : NULL;
}

/* Whether the tensor at table offset off trains (exists and is not frozen). */
static inline bool px_ex_trained(int64_t off)
{
    return off >= 0 && !px_off_frozen(off);
}

/* The weight gradient of a norm at off, or for a frozen one slot k (0, 1)
 * of the sink, which its kernel may add into (the norm kernels always take
 * their weight gradient). */
static inline float *px_ex_gsink(px_exec *ex, int64_t off, int k)
{
    if (!px_off_frozen(off))
        return px_ex_g(ex, off);
    return ex->gsink + k * (ex->h > ex->hd ? ex->h : ex->hd);
}

/* Recompute mode of global layer l. */
px_recompute px_ex_layer_rc(const px_exec *ex, int64_t l);

/* One layer.  Forward: reads a->x_in, fills the rest of a (all of it when
 * keep, else frees everything but x_in) and returns the output [Ts, h] in
 * *x_out (a fresh block).  Backward: dx_out [Ts, h] in, dx_in [Ts, h] out (fresh);
 * frees nothing of a.  With defer_w it computes input, norm and bias
 * gradients only and keeps what px_layer_wgrad needs in a. */
px_status px_layer_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, bool keep,
                       bool selective, void **x_out, px_error *err);
px_status px_layer_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                       const void *dx_out, bool defer_w, void **dx_in, px_error *err);
/* Weight gradients of the four linears deferred by px_layer_bwd(defer_w);
 * frees the kept output gradients. */
px_status px_layer_wgrad(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                         px_error *err);
/* Frees all of a's tensors (x_in included). */
void px_layer_act_free(px_exec *ex, px_layer_act *a);

/* The routed-expert MLP of an MoE layer (px_moe.c) on this rank's Tm tokens
 * x [Tm, h]: forward fills a's m_* tensors and returns y [Tm, h] (fresh,
 * temp); backward takes dy [Tm, h] and returns dx [Tm, h] (fresh, temp),
 * accumulating the router and expert weight gradients. */
px_status px_moe_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, const void *x,
                     void **y, px_error *err);
px_status px_moe_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, const void *dy,
                     const void *x, void **dx, px_error *err);
void px_moe_route_free(px_layer_act *a);

/* qk_norm (px_qknorm.c): setup builds the row maps (no-op without qk_norm);
 * fwd normalises the q and k heads of a->qkv [T, qkv_l] in place (before
 * RoPE), keeping a->qk_in / qk_rstd under `kind`; bwd turns dqkv's q and k
 * parts (the gradient at the norm outputs) into the gradient at its inputs,
 * in place, accumulating the norm weights' gradients.  No-ops when the layer
 * has no qk_norm. */
px_status px_qknorm_setup(px_exec *ex, px_error *err);
px_status px_qknorm_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                        px_mem_kind kind, px_error *err);
px_status px_qknorm_bwd(px_exec *ex, const px_layer_params *lp, const px_layer_act *a,
                        void *dqkv, px_error *err);

/* Shared experts of an MoE layer (px_shared_expert.c): fwd adds their output
 * to y [Ts, h] (from a->n2_out); bwd adds their input gradient to dn [Ts, h]
 * (the gradient at norm 2's output) from dx_out [Ts, h], accumulating their
 * weight gradients.  No-ops when the layer has none. */
px_status px_shared_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, void *y,
                        px_error *err);
px_status px_shared_bwd(px_exec *ex, const px_layer_params *lp, const px_layer_act *a,
                        const void *dx_out, void *dn, px_error *err);

/* Norm of the block kind: RMSNorm (Llama) or LayerNorm (GPT; b_off >= 0). */
px_status px_ex_norm_fwd(px_exec *ex, void *out, float **mean, float **rstd, const void *x,
                         int64_t w_off, int64_t b_off, px_mem_kind kind, px_error *err);
void px_ex_norm_bwd(px_exec *ex, void *dx, const void *dout, const void *x, int64_t w_off,
                    int64_t b_off, const float *mean, const float *rstd);

#endif
