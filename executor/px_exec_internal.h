/* px_exec_internal.h — the engine's state, shared by px_exec.c (pipeline,
 * data parallelism, optimizer) and px_layer.c (one transformer layer under
 * TP/SP).  Not an interface: only those two files include it. */
#ifndef PX_EXEC_INTERNAL_H
#define PX_EXEC_INTERNAL_H

#include "px_data.h"
#include "px_exec.h"
#include "px_layout.h"
#include "px_schedule.h"

#define TRY(x)                                                                           \
    do {                                                                                 \
        px_status st_ = (x);                                                             \
        if (st_)                                                                         \
            return st_;                                                                  \
    } while (0)

/* What one layer keeps for its backward (docs/executor.md, "Activations").
 * Ts = tokens of this rank's sequence shard (T / tp under SP, else T). */
typedef struct {
    float *x_in;             /* [Ts, h] layer input (the only tensor under full recompute) */
    float *n1_out;           /* [Ts, h] first norm output (the shard; re-gathered under SP) */
    float *n1_mean, *n1_rstd;/* [Ts] (mean: LayerNorm only) */
    float *qkv;              /* [T, (nh_l + 2 nkv_l) hd] after RoPE */
    float *att;              /* [T, nh_l hd] attention output */
    float *lse;              /* [b, nh_l, s] (not kept under selective recompute) */
    float *probs;            /* [b, nh_l, s, s] only without FlashAttention-style */
    float *x_mid;            /* [Ts, h] residual after attention */
    float *n2_out;           /* [Ts, h] */
    float *n2_mean, *n2_rstd;/* [Ts] */
    float *h1;               /* [T, 2 f_l] gate|up (Llama) or [T, f_l] fc output (GPT) */
    float *h2;               /* [T, f_l] activation output */
    /* Zero-bubble schedules: output gradients kept from B for the weight
     * gradients of W (dx shards re-gathered under SP in W). */
    float *w_dqkv;           /* [T, qkv_l] */
    float *w_do;             /* [Ts, h] gradient at the attention output */
    float *w_dh1;            /* [T, w1_rows] */
    float *w_dy;             /* [Ts, h] gradient at the MLP output */
} px_layer_act;

/* One (local chunk, micro-batch) in flight. */
typedef struct {
    bool live;
    px_layer_act *layers;      /* [chunk n_layers] */
    int32_t *tokens, *targets; /* [T] (first / last chunk) */
    float *fn_in;              /* [Ts, h] final norm input (last chunk) */
    float *fn_out, *fn_mean, *fn_rstd;
    float *logits;             /* [T, V_l] */
    float *xent;               /* [3T]: max | sumexp | target logit */
} px_chunk_act;

typedef struct {
    px_request req;
    void *buf;
} px_pending_send;

struct px_exec {
    px_plan plan;
    px_exec_options opt;
    px_backend *be;
    const px_kernels *k;
    px_layout lay;
    int world_rank, world_size;
    int tag_ub; /* MPI_TAG_UB of the world */
    px_comm tp, pp, dp, emb; /* emb: first + last stage (tied embeddings, pp > 1) */
    px_comm cp;              /* context parallel: the sequence's 2 cp chunks */
    px_comm grad;            /* dp x cp: where dense gradients are summed (= dp when cp = 1) */
    int tp_rank, stage, dp_rank, cp_rank;

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
    int64_t L, m;
    int pp_size, vpp;
    bool llama, sp, has_pos;
    float norm_eps, rope_theta;
    bool store_probs_allowed; /* no FlashAttention-style core in the plan */
    bool zero_bubble;         /* schedule splits B and W */
    px_recompute *rc;         /* [L] per global layer */

    /* Parameters, gradients, AdamW moments: one allocation each. */
    px_param_table tab;
    float *params, *grads, *adam_m, *adam_v;
    int64_t n_params;  /* elements in the table */
    int64_t n_padded;  /* n_params rounded up to a multiple of dp (ZeRO-1) */
    int64_t n_shard;   /* optimizer elements on this rank */
    int64_t adam_steps;

    px_memtrack mem;
    px_data data;
    px_chunk_act *stash; /* [vpp * m] */
    px_sched_op *ops;
    int n_ops;
    px_pending_send *sends;
    int n_sends, cap_sends;
    double loss_sum; /* this step's token losses on this rank's last chunk */
};

/* Device allocations through the tracker. */
px_status px_ex_alloc(px_exec *ex, px_mem_kind kind, int64_t n_floats, float **out,
                      px_error *err);
void px_ex_free(px_exec *ex, float **p);

/* Recompute mode of global layer l. */
px_recompute px_ex_layer_rc(const px_exec *ex, int64_t l);

/* One layer.  Forward: reads a->x_in, fills the rest of a (all of it when
 * keep, else frees everything but x_in) and returns the output [Ts, h] in
 * *x_out (a fresh block).  Backward: dx_out [Ts, h] in, dx_in [Ts, h] out (fresh);
 * frees nothing of a.  With defer_w it computes input, norm and bias
 * gradients only and keeps what px_layer_wgrad needs in a. */
px_status px_layer_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, bool keep,
                       bool selective, float **x_out, px_error *err);
px_status px_layer_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                       const float *dx_out, bool defer_w, float **dx_in, px_error *err);
/* Weight gradients of the four linears deferred by px_layer_bwd(defer_w);
 * frees the kept output gradients. */
px_status px_layer_wgrad(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                         px_error *err);
/* Frees all of a's tensors (x_in included). */
void px_layer_act_free(px_exec *ex, px_layer_act *a);

/* Norm of the block kind: RMSNorm (Llama) or LayerNorm (GPT; b_off >= 0). */
px_status px_ex_norm_fwd(px_exec *ex, float *out, float **mean, float **rstd, const float *x,
                         int64_t w_off, int64_t b_off, px_mem_kind kind, px_error *err);
void px_ex_norm_bwd(px_exec *ex, float *dx, const float *dout, const float *x, int64_t w_off,
                    int64_t b_off, const float *mean, const float *rstd);

/* Global position of local sequence row p (context parallelism). */
int64_t px_ex_pos(const px_exec *ex, int cp_rank, int64_t p);

/* Calls fn(ex, first_local_row, n_rows, first_global_position, arg) for each
 * run of local rows [lo, hi) that is contiguous in global positions. */
void px_ex_pos_runs(const px_exec *ex, int64_t lo, int64_t hi,
                    void (*fn)(px_exec *, int64_t, int64_t, int64_t, void *), void *arg);

/* TP helpers.  gather: shard [Ts, h] -> fresh full [T, h] (SP only).
 * reduce: partial [T, h] (consumed) -> *out [Ts, h]: reduce-scatter under
 * SP, in-place all-reduce otherwise. */
px_status px_ex_tp_gather(px_exec *ex, const float *shard, float **full, px_error *err);
px_status px_ex_tp_reduce(px_exec *ex, float *partial, float **out, px_mem_kind kind,
                          px_error *err);

#endif
