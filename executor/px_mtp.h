/* px_mtp.h — multi-token prediction (DeepSeek-V3 section 2.2, Megatron-Core's
 * --mtp-num-layers) on the last pipeline chunk (docs/executor.md,
 * "Multi-token prediction").  Internal to the engine, like
 * px_exec_internal.h.
 *
 * Module k = 1 .. D predicts the token k + 1 places ahead:
 *   h_k = Norm_k(Layer_k(Proj_k([ENorm_k(Emb(t_{i+k})) ; HNorm_k(h_{k-1})])))
 * with h_0 the main model's final-norm output; its logits are the shared LM
 * head's of h_k, its loss the cross-entropy against t_{i+k+1} over the
 * positions i < s - k that have one.  The step's loss is the main loss plus
 * (lambda / D) sum_k loss_k. */
#ifndef PX_MTP_H
#define PX_MTP_H

#include "px_exec_internal.h"

/* What module k keeps from its forward for its backward ([Ts, h] tensors in
 * the activation dtype; Ts = this rank's tokens, T / tp under SP). */
struct px_mtp_act {
    int32_t *tok, *tgt;   /* [T] t_{i+k} (0 past the sequence), t_{i+k+1} (0 likewise) */
    void *e;              /* [Ts, h] the embedding of tok (ENorm's input) */
    void *en, *hn;        /* [Ts, h] ENorm's and HNorm's outputs */
    float *e_rstd, *h_rstd;
    const void *h_in;     /* [Ts, h] h_{k-1}: the final norm's output or module k-1's out
                           * (not owned) */
    px_layer_act layer;   /* its x_in: the projection's output */
    void *y;              /* [Ts, h] the layer's output (the output norm's input) */
    void *out;            /* [Ts, h] h_k */
    float *o_rstd;
    void *logits;         /* [Tv, V_own], Tv = (s - k) b: the rows with a target */
    float *xent;          /* [3 Tv] max | sumexp | target logit */
};

/* Setup: the token-loss buffer on the last stage (no-op without modules). */
px_status px_mtp_setup(px_exec *ex, px_error *err);

/* Forward of every module for micro-batch `micro` of `step` on the last
 * chunk, from ca->fn_out (h_0, kept by the caller until px_mtp_bwd); their
 * token losses go to ex->mtp_loss_tok. */
px_status px_mtp_fwd(px_exec *ex, px_chunk_act *ca, int64_t step, int64_t micro,
                     px_error *err);

/* Backward of every module (every weight gradient now, also under a
 * zero-bubble schedule): adds d loss / d h_0 into dh0 [Ts, h] and frees the
 * modules' tensors. */
px_status px_mtp_bwd(px_exec *ex, px_chunk_act *ca, void *dh0, px_error *err);

/* This rank's share of the step's MTP term: (lambda / D) sum_k (its token
 * losses of module k) / (the global batch's positions with a target for k).
 * Reads the device buffer; 0 without modules. */
double px_mtp_loss_term(px_exec *ex);

void px_mtp_act_free(px_exec *ex, px_chunk_act *ca);

#endif
