/* px_shared_expert.c — the shared experts of an MoE layer (DeepSeek's
 * n_shared_experts): always-active SwiGLU experts of inner size moe_ffn on
 * every token, their output added to the routed experts' (no gate: the
 * planner's model, px_model.c, counts none; Qwen2-MoE's sigmoid gate is not
 * modelled).  n_shared experts of size moe_ffn summed are one SwiGLU of size
 * fs = n_shared moe_ffn (their gate/up rows and down columns concatenated),
 * which is how they run — Megatron-Core's SharedExpertMLP does the same.
 *
 * Under TP they are split like the dense MLP (Megatron's SharedExpertMLP is
 * a tensor-parallel MLP, not an expert): gate and up column-parallel (this
 * rank's fs / tp rows), down row-parallel, the input all-gathered under SP
 * and the output reduce-scattered (all-reduced without SP).  EP and ETP do
 * not touch them: every rank of the expert-parallel group runs its TP slice
 * on its own tokens, and their gradients are dense ones (summed over
 * dp x cp).  Their weight gradients are taken in B under zero-bubble
 * schedules, as the routed experts' are. */
#include "px_exec_internal.h"

#define W(off) px_ex_w(ex, off)
#define G(off) px_ex_g(ex, off)

/* The norm 2 output of all T rows: itself, or its all-gather under SP. */
static px_status full_rows(px_exec *ex, void *shard, void **full, px_error *err)
{
    if (!ex->sp) {
        *full = shard;
        return PX_OK;
    }
    return px_ex_tp_gather(ex, shard, full, err);
}

static void full_rows_done(px_exec *ex, void *shard, void **full)
{
    if (*full != shard)
        px_ex_free(ex, full);
    *full = NULL;
}

px_status px_shared_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, void *y,
                        px_error *err)
{
    if (lp->sw1 < 0)
        return PX_OK;
    const px_kernels *k = ex->k;
    int64_t T = ex->T, h = ex->h, fl = ex->fs_l;
    void *g = NULL, *ys = NULL, *ys_s = NULL;
    PX_TRY(full_rows(ex, a->n2_out, &g, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, T * 2 * fl, &a->sh_h1, err));
    k->matmul_fwd(a->sh_h1, g, W(lp->sw1), NULL, T, h, 2 * fl);
    full_rows_done(ex, a->n2_out, &g);
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, T * fl, &a->sh_h2, err));
    k->swiglu_fwd(a->sh_h2, a->sh_h1, T, fl);
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * h, &ys, err));
    k->matmul_fwd(ys, a->sh_h2, W(lp->sw2), NULL, T, fl, h);
    PX_TRY(px_ex_tp_reduce(ex, ys, &ys_s, PX_MEM_TEMP, err));
    k->residual_fwd(y, y, ys_s, ex->Ts * h);
    px_ex_free(ex, &ys_s);
    return PX_OK;
}

px_status px_shared_bwd(px_exec *ex, const px_layer_params *lp, const px_layer_act *a,
                        const void *dx_out, void *dn, px_error *err)
{
    if (lp->sw1 < 0)
        return PX_OK;
    const px_kernels *k = ex->k;
    int64_t T = ex->T, h = ex->h, fl = ex->fs_l;
    void *dy = NULL, *dh2 = NULL, *dh1 = NULL, *g = NULL, *dg = NULL, *dg_s = NULL;
    if (ex->sp)
        PX_TRY(px_ex_tp_gather(ex, dx_out, &dy, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * fl, &dh2, err));
    k->matmul_bwd(dh2, G(lp->sw2), NULL, ex->sp ? dy : dx_out, a->sh_h2, W(lp->sw2), T, fl, h);
    px_ex_free(ex, &dy);
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * 2 * fl, &dh1, err));
    k->swiglu_bwd(dh1, dh2, a->sh_h1, T, fl);
    px_ex_free(ex, &dh2);
    PX_TRY(full_rows(ex, a->n2_out, &g, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * h, &dg, err));
    k->matmul_bwd(dg, G(lp->sw1), NULL, dh1, g, W(lp->sw1), T, h, 2 * fl);
    full_rows_done(ex, a->n2_out, &g);
    px_ex_free(ex, &dh1);
    PX_TRY(px_ex_tp_reduce(ex, dg, &dg_s, PX_MEM_TEMP, err));
    k->residual_fwd(dn, dn, dg_s, ex->Ts * h);
    px_ex_free(ex, &dg_s);
    return PX_OK;
}
