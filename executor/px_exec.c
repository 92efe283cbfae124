/* px_exec.c — the engine's step: the pipeline schedule over micro-batches
 * (each chunk's forward, backward and deferred weight gradients through the
 * layers), the messages between stages, gradient reduction (TP-replicated
 * tensors, tied embeddings, DP / ZeRO-1) and AdamW.  Creating and destroying
 * the engine is px_exec_setup.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "px_bf16.h"
#include "px_exec_internal.h"
#include "px_io.h"
#include "px_lora.h"
#include "px_mla.h"
#include "px_mtp.h"
#include "px_trace.h"
#include "px_sliding.h"

#define W(off) px_ex_w(ex, off)
#define G(off) px_ex_g(ex, off)





px_recompute px_ex_layer_rc(const px_exec *ex, int64_t l)
{
    return ex->rc[l];
}















/* Learned positions on this rank's SP shard rows [row0_sp, + S_local). */
typedef struct {
    void *x;
    bool bwd;
} pos_arg;

static void pos_run(px_exec *ex, int64_t row, int64_t n, int64_t pos, void *arg)
{
    pos_arg *a = arg;
    void *x = px_ex_at(ex, a->x, (row - ex->row0_sp) * ex->b * ex->h);
    if (a->bwd)
        ex->k->positions_bwd(G(ex->tab.pos_emb), x, n, ex->b, ex->h, pos);
    else
        ex->k->positions_fwd(x, W(ex->tab.pos_emb), n, ex->b, ex->h, pos);
}

static px_status positions(px_exec *ex, void *x, bool bwd, px_error *err)
{
    int64_t off = ex->tab.pos_emb;
    if (bwd && !px_ex_trained(off)) /* frozen (LoRA) */
        return PX_OK;
    PX_TRY(bwd ? px_ex_use_g(ex, off, err) : px_ex_use_w(ex, off, err));
    pos_arg a = {x, bwd};
    px_ex_pos_runs(ex, ex->row0_sp, ex->row0_sp + ex->S_local, pos_run, &a);
    if (bwd)
        return px_ex_done_g(ex, off, err);
    px_ex_done_w(ex, off);
    return PX_OK;
}

/* ---- point-to-point ------------------------------------------------------------ */

/* A pipeline message: an op's output for the neighbour's next op (Ts x h
 * activations or their gradients). */
typedef struct {
    void *buf; /* NULL: none */
    int mc;    /* producing model chunk */
    int micro;
} px_msg;

/* Phase t of the timeline (px_schedule.h): this rank's messages of slot t,
 * its own output sent and its neighbours' received, as one batch; a received
 * tensor waits in the stash for its op, a sent one is freed.  Every rank runs
 * the phases in order, between its ops, which is what keeps NCCL's
 * rendezvous sends from deadlocking and its untagged messages from crossing
 * (the CPU backend enforces the same rules, so the executor tests check
 * it). *cursor walks ex->tl.msgs. */
static px_status exchange(px_exec *ex, int t, int *cursor, px_msg *out, px_error *err)
{
    const px_timeline *tl = &ex->tl;
    /* a stage's messages in one slot: a forward and a backward, each sent
     * and received at most once */
    enum { SLOT_OPS_MAX = 4 };
    px_p2p_op ops[SLOT_OPS_MAX];
    int n = 0;
    for (; *cursor < tl->n_msgs && tl->msgs[*cursor].slot <= t; (*cursor)++) {
        const px_pipe_msg *g = &tl->msgs[*cursor];
        if (g->slot < t || (g->src != ex->stage && g->dst != ex->stage))
            continue;
        if (n + (g->src == ex->stage) + (g->dst == ex->stage) > SLOT_OPS_MAX)
            return PX_FAIL(err, PX_ERR_INTERNAL,
                           "pipeline: slot %d holds more than %d messages for stage %d", t,
                           SLOT_OPS_MAX, ex->stage);
        int peer = g->src == ex->stage ? g->dst : g->src;
        if (g->src == ex->stage) {
            if (!out->buf || out->mc != g->mc || out->micro != g->micro)
                return PX_FAIL(err, PX_ERR_INTERNAL,
                               "pipeline: slot %d expects the output of chunk %d micro-batch %d",
                               t, g->mc, g->micro);
            ops[n++] = (px_p2p_op){out->buf, ex->Ts * ex->h, ex->act_dtype, peer, true};
        }
        if (g->dst == ex->stage) {
            int to = g->kind == 'F' ? g->mc + 1 : g->mc - 1;
            px_chunk_act *ca = &ex->stash[(to / ex->pp_size) * ex->m + g->micro];
            void *buf = NULL;
            PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, ex->Ts * ex->h, &buf, err));
            if (g->kind == 'F')
                ca->in_x = buf;
            else
                ca->in_dx = buf;
            ops[n++] = (px_p2p_op){buf, ex->Ts * ex->h, ex->act_dtype, peer, false};
        }
    }
    if (n)
        PX_TRY(ex->be->p2p_batch(ex->be, ops, n, &ex->pp, err));
    if (out->buf)
        px_ex_free(ex, &out->buf);
    return PX_OK;
}

/* ---- chunk forward / backward ------------------------------------------------------ */

/* A layer's ZeRO-2/3 units (px_shard.c): its dense tensors, and its experts
 * in an MoE layer (ew1 < 0 otherwise: a no-op). */
static px_status layer_use(px_exec *ex, const px_layer_params *lp, bool grads, px_error *err)
{
    int64_t lora = px_lora_unit_off(lp); /* (the base's are no-ops when frozen) */
    if (grads) {
        PX_TRY(px_ex_use_g(ex, lp->ln1_w, err));
        PX_TRY(px_ex_use_g(ex, lora, err));
        return px_ex_use_g(ex, lp->ew1, err);
    }
    PX_TRY(px_ex_use_w(ex, lp->ln1_w, err));
    PX_TRY(px_ex_use_w(ex, lora, err));
    return px_ex_use_w(ex, lp->ew1, err);
}

static px_status layer_done(px_exec *ex, const px_layer_params *lp, bool grads, px_error *err)
{
    int64_t lora = px_lora_unit_off(lp);
    if (grads) {
        PX_TRY(px_ex_done_g(ex, lp->ln1_w, err));
        PX_TRY(px_ex_done_g(ex, lora, err));
        return px_ex_done_g(ex, lp->ew1, err);
    }
    px_ex_done_w(ex, lp->ln1_w);
    px_ex_done_w(ex, lora);
    px_ex_done_w(ex, lp->ew1);
    return PX_OK;
}

static px_status load_tokens(px_exec *ex, px_chunk_act *ca, int64_t step, int64_t micro,
                             px_error *err)
{
    int64_t s = ex->s, b = ex->b;
    int32_t *host = malloc((size_t)(2 * ex->T + s + 1) * sizeof *host);
    /* rows are this rank's s_l positions (all of them without CP) */
    if (!host)
        return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory (tokens)");
    int32_t *inp = host, *tgt = host + ex->T, *seq = host + 2 * ex->T;
    for (int64_t bi = 0; bi < b; bi++) {
        px_data_sequence(&ex->data, px_ex_sequence_index(ex, step, micro, bi), seq);
        for (int64_t si = 0; si < ex->s_l; si++) {
            int64_t gp = px_ex_pos(ex, ex->cp_rank, si);
            inp[si * b + bi] = seq[gp];
            tgt[si * b + bi] = seq[gp + 1];
        }
    }
    /* int32 ids ride in float-sized blocks (same width). */
    px_status st = px_ex_alloc_i32(ex, PX_MEM_BUFFERS, ex->T, &ca->tokens, err);
    if (!st)
        st = px_ex_alloc_i32(ex, PX_MEM_BUFFERS, ex->T, &ca->targets, err);
    if (!st) {
        ex->be->upload(ex->be, ca->tokens, inp, ex->T * (int64_t)sizeof(int32_t));
        ex->be->upload(ex->be, ca->targets, tgt, ex->T * (int64_t)sizeof(int32_t));
    }
    free(host);
    return st;
}

/* Forward of (local chunk j, micro-batch); *out gets the output for the next
 * chunk (the input from the previous one waits in the stash). */
static px_status chunk_fwd(px_exec *ex, int j, int64_t micro, int64_t step, px_msg *out,
                           px_error *err)
{
    const px_chunk_params *c = &ex->tab.chunks[j];
    px_chunk_act *ca = &ex->stash[j * ex->m + micro];
    const px_kernels *k = ex->k;
    px_backend *be = ex->be;
    int64_t h = ex->h, T = ex->T, Ts = ex->Ts;
    ca->live = true;
    if (c->is_first || c->is_last)
        PX_TRY(load_tokens(ex, ca, step, micro, err));
    void *x = NULL;
    if (c->is_first) {
        void *e = NULL; /* without SP the reduced lookup itself is the chunk input */
        PX_TRY(px_ex_alloc_act(ex, ex->sp ? PX_MEM_TEMP : PX_MEM_ACTIVATIONS, T * h, &e, err));
        PX_TRY(px_ex_use_w(ex, ex->tab.word_emb, err));
        k->embedding_fwd(e, ca->tokens, W(ex->tab.word_emb), T, h, ex->tp_rank * ex->V_l,
                         (ex->tp_rank + 1) * ex->V_l);
        px_ex_done_w(ex, ex->tab.word_emb);
        /* vocabulary-parallel: each shard looked up its own rows */
        PX_TRY(px_ex_tp_reduce(ex, e, &x, PX_MEM_ACTIVATIONS, err));
        if (ex->has_pos)
            PX_TRY(positions(ex, x, false, err));
    } else {
        x = ca->in_x;
        ca->in_x = NULL;
    }
    for (int64_t l = 0; l < c->n_layers; l++) {
        px_layer_act *a = &ca->layers[l];
        px_recompute rc = ex->rc[c->first_layer + l];
        a->x_in = x;
        PX_TRY(layer_use(ex, &c->layers[l], false, err)); /* gathered (ZeRO-3) */
        PX_TRY(px_layer_fwd(ex, &c->layers[l], a, rc != PX_RECOMPUTE_FULL,
                         rc == PX_RECOMPUTE_SELECTIVE, &x, err));
        PX_TRY(layer_done(ex, &c->layers[l], false, err));
    }
    if (!c->is_last) {
        *out = (px_msg){x, c->model_chunk, (int)micro};
        return PX_OK;
    }

    /* Final norm, LM head (vocabulary-parallel) and the cross-entropy. */
    ca->fn_in = x;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, Ts * h, &ca->fn_out, err));
    PX_TRY(px_ex_use_w(ex, ex->tab.final_norm_w, err));
    PX_TRY(px_ex_norm_fwd(ex, ca->fn_out, &ca->fn_mean, &ca->fn_rstd, x, ex->tab.final_norm_w,
                       ex->tab.final_norm_b, PX_MEM_ACTIVATIONS, err));
    px_ex_done_w(ex, ex->tab.final_norm_w);
    void *g = ca->fn_out;
    if (ex->sp)
        PX_TRY(px_ex_tp_gather(ex, ca->fn_out, &g, err));
    int64_t Vo = ex->V_own; /* 0: a shard of padding only */
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_BUFFERS, T * (Vo > 0 ? Vo : 1), &ca->logits, err));
    PX_TRY(px_ex_use_w(ex, ex->tab.lm_head, err));
    if (Vo > 0)
        k->matmul_fwd(ca->logits, g, W(ex->tab.lm_head), NULL, T, h, Vo);
    px_ex_done_w(ex, ex->tab.lm_head);
    if (g != ca->fn_out)
        px_ex_free(ex, &g);
    PX_TRY(px_ex_alloc_f32(ex, PX_MEM_BUFFERS, 3 * T, &ca->xent, err));
    float *xmax = ca->xent, *xsum = ca->xent + T, *xtgt = ca->xent + 2 * T;
    /* a padding-only shard adds nothing to the sums and offers 0 to the
     * max (the loss is the same for any shift; 0 only bounds it below) */
    if (Vo > 0)
        k->xent_max_fwd(xmax, ca->logits, T, Vo);
    else
        be->zero(be, ca->xent, 3 * T * (int64_t)sizeof(float));
    PX_TRY(be->all_reduce(be, xmax, T, PX_F32, PX_REDUCE_MAX, &ex->tp, err));
    if (Vo > 0)
        k->xent_sumexp_fwd(xsum, xtgt, ca->logits, xmax, ca->targets, T, Vo,
                           ex->tp_rank * ex->V_l);
    /* sumexp | target */
    PX_TRY(be->all_reduce(be, xsum, 2 * T, PX_F32, PX_REDUCE_SUM, &ex->tp, err));
    /* fp32 in both storages; read once at the end of the step, so that no
     * micro-batch waits for the device */
    k->xent_loss_fwd(ex->loss_tok + micro * T, xmax, xsum, xtgt, T);
    /* the MTP modules take the final norm's output as h_0 */
    return px_mtp_fwd(ex, ca, step, micro, err);
}

/* Backward of (local chunk j, micro-batch).  Under a zero-bubble schedule it
 * computes the input gradients only (B) and keeps the layers' tensors for
 * chunk_wgrad (W). */
static px_status chunk_bwd(px_exec *ex, int j, int64_t micro, px_msg *out, px_error *err)
{
    bool defer = ex->zero_bubble;
    const px_chunk_params *c = &ex->tab.chunks[j];
    px_chunk_act *ca = &ex->stash[j * ex->m + micro];
    const px_kernels *k = ex->k;
    px_backend *be = ex->be;
    int64_t h = ex->h, T = ex->T, Ts = ex->Ts;
    void *dx = NULL;
    if (c->is_last) {
        /* d(mean loss over the global batch)/d(token loss) */
        double tokens = ex->global_tokens;
        float *xmax = ca->xent, *xsum = ca->xent + T;
        if (ex->V_own > 0)
            k->xent_bwd(ca->logits, ca->logits, xmax, xsum, ca->targets, (float)(1.0 / tokens),
                        T, ex->V_own, ex->tp_rank * ex->V_l);
        /* The head's weight gradient: now, in W (zero-bubble), or never
         * (LoRA: frozen; then neither fn_out nor the logits wait for W). */
        bool head_w = px_ex_trained(ex->tab.lm_head), now = head_w && !defer;
        bool keep = defer && head_w;
        void *g = NULL, *dg = NULL, *dfn = NULL;
        if (now) {
            g = ca->fn_out;
            if (ex->sp)
                PX_TRY(px_ex_tp_gather(ex, ca->fn_out, &g, err));
        }
        PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * h, &dg, err));
        PX_TRY(px_ex_use_w(ex, ex->tab.lm_head, err));
        if (now)
            PX_TRY(px_ex_use_g(ex, ex->tab.lm_head, err));
        if (ex->V_own > 0)
            k->matmul_bwd(dg, now ? G(ex->tab.lm_head) : NULL, NULL, ca->logits, g,
                          W(ex->tab.lm_head), T, h, ex->V_own);
        else
            be->zero(be, dg, T * h * px_dtype_bytes(ex->act_dtype));
        if (now)
            PX_TRY(px_ex_done_g(ex, ex->tab.lm_head, err));
        px_ex_done_w(ex, ex->tab.lm_head);
        if (g && g != ca->fn_out)
            px_ex_free(ex, &g);
        if (!keep) /* else the logits gradient and fn_out wait for W */
            px_ex_free(ex, &ca->logits);
        px_ex_free(ex, &ca->xent);
        PX_TRY(px_ex_tp_reduce(ex, dg, &dfn, PX_MEM_TEMP, err));
        PX_TRY(px_mtp_bwd(ex, ca, dfn, err)); /* adds the MTP modules' gradient at h_0 */
        PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, Ts * h, &dx, err));
        PX_TRY(px_ex_use_w(ex, ex->tab.final_norm_w, err));
        PX_TRY(px_ex_use_g(ex, ex->tab.final_norm_w, err));
        px_ex_norm_bwd(ex, dx, dfn, ca->fn_in, ex->tab.final_norm_w, ex->tab.final_norm_b,
                       ca->fn_mean, ca->fn_rstd);
        PX_TRY(px_ex_done_g(ex, ex->tab.final_norm_w, err));
        px_ex_done_w(ex, ex->tab.final_norm_w);
        px_ex_free(ex, &dfn);
        px_ex_free(ex, &ca->fn_in);
        if (!keep)
            px_ex_free(ex, &ca->fn_out);
        px_ex_free(ex, &ca->fn_mean);
        px_ex_free(ex, &ca->fn_rstd);
    } else {
        dx = ca->in_dx;
        ca->in_dx = NULL;
    }
    for (int64_t l = c->n_layers - 1; l >= 0; l--) {
        px_layer_act *a = &ca->layers[l];
        px_recompute rc = ex->rc[c->first_layer + l];
        PX_TRY(layer_use(ex, &c->layers[l], false, err)); /* gathered again (ZeRO-3) */
        if (rc == PX_RECOMPUTE_FULL) { /* rebuild the layer's activations from its input */
            void *y = NULL;
            PX_TRY(px_layer_fwd(ex, &c->layers[l], a, true, false, &y, err));
            px_ex_free(ex, &y);
        }
        void *dx_in = NULL;
        PX_TRY(layer_use(ex, &c->layers[l], true, err));
        PX_TRY(px_layer_bwd(ex, &c->layers[l], a, dx, defer, &dx_in, err));
        PX_TRY(layer_done(ex, &c->layers[l], true, err)); /* reduce-scattered now (ZeRO-2/3) */
        PX_TRY(layer_done(ex, &c->layers[l], false, err));
        px_ex_free(ex, &dx);
        if (!defer)
            px_layer_act_free(ex, a); /* freed as soon as its backward is done */
        dx = dx_in;
    }
    if (c->is_first) {
        if (ex->has_pos)
            PX_TRY(positions(ex, dx, true, err));
        if (px_ex_trained(ex->tab.word_emb)) { /* (LoRA: frozen, no gradient) */
            void *full = dx;
            if (ex->sp)
                PX_TRY(px_ex_tp_gather(ex, dx, &full, err));
            PX_TRY(px_ex_use_g(ex, ex->tab.word_emb, err));
            k->embedding_bwd(G(ex->tab.word_emb), full, ca->tokens, T, h, ex->tp_rank * ex->V_l,
                             (ex->tp_rank + 1) * ex->V_l);
            PX_TRY(px_ex_done_g(ex, ex->tab.word_emb, err));
            if (full != dx)
                px_ex_free(ex, &full);
        }
        px_ex_free(ex, &dx);
    } else {
        *out = (px_msg){dx, c->model_chunk, (int)micro};
    }
    px_ex_free(ex, &ca->tokens);
    px_ex_free(ex, &ca->targets);
    ca->live = defer;
    (void)be;
    return PX_OK;
}

/* W of a zero-bubble schedule: the weight gradients chunk_bwd deferred, then
 * the chunk's tensors are freed. */
static px_status chunk_wgrad(px_exec *ex, int j, int64_t micro, px_error *err)
{
    const px_chunk_params *c = &ex->tab.chunks[j];
    px_chunk_act *ca = &ex->stash[j * ex->m + micro];
    if (c->is_last && px_ex_trained(ex->tab.lm_head)) { /* (LoRA: frozen, nothing kept) */
        void *g = ca->fn_out;
        if (ex->sp)
            PX_TRY(px_ex_tp_gather(ex, ca->fn_out, &g, err));
        PX_TRY(px_ex_use_w(ex, ex->tab.lm_head, err));
        PX_TRY(px_ex_use_g(ex, ex->tab.lm_head, err));
        if (ex->V_own > 0)
            ex->k->matmul_bwd(NULL, G(ex->tab.lm_head), NULL, ca->logits, g,
                              W(ex->tab.lm_head), ex->T, ex->h, ex->V_own);
        PX_TRY(px_ex_done_g(ex, ex->tab.lm_head, err));
        px_ex_done_w(ex, ex->tab.lm_head);
        if (g != ca->fn_out)
            px_ex_free(ex, &g);
        px_ex_free(ex, &ca->logits);
        px_ex_free(ex, &ca->fn_out);
    }
    for (int64_t l = c->n_layers - 1; l >= 0; l--) {
        PX_TRY(layer_use(ex, &c->layers[l], false, err));
        PX_TRY(layer_use(ex, &c->layers[l], true, err));
        PX_TRY(px_layer_wgrad(ex, &c->layers[l], &ca->layers[l], err));
        PX_TRY(layer_done(ex, &c->layers[l], true, err));
        PX_TRY(layer_done(ex, &c->layers[l], false, err));
        px_layer_act_free(ex, &ca->layers[l]);
    }
    ca->live = false;
    return PX_OK;
}

/* ---- gradient reduction and optimizer ------------------------------------------------ */

static px_status reduce_grads(px_exec *ex, px_error *err)
{
    px_backend *be = ex->be;
    if (ex->zero >= 2) /* already reduce-scattered unit by unit: finish on the pieces */
        return px_ex_shard_reduce(ex, err);
    /* Under SP the replicated tensors (norms, row-parallel biases, positions)
     * saw only this rank's sequence shard: sum the partial gradients. */
    if (ex->sp)
        for (int i = 0; i < ex->tab.n_segs; i++) {
            const px_param_seg *s = &ex->tab.segs[i];
            if (s->tp_replicated && !s->tp_sum)
                PX_TRY(be->all_reduce(be, G(s->offset), s->n_rows * s->n_cols, PX_F32, PX_REDUCE_SUM,
                                   &ex->tp, err));
        }
    /* The router saw only this TP rank's slice of the tokens, SP or not. */
    if (ex->tp.size > 1)
        for (int i = 0; i < ex->tab.n_segs; i++) {
            const px_param_seg *s = &ex->tab.segs[i];
            if (s->tp_sum)
                PX_TRY(be->all_reduce(be, G(s->offset), s->n_rows * s->n_cols, PX_F32, PX_REDUCE_SUM,
                                   &ex->tp, err));
        }
    /* Expert weights: every rank of the expert-data-parallel group routed
     * other tokens to the same experts. */
    if (ex->n_exp > 0)
        PX_TRY(be->all_reduce(be, ex->grads + ex->n_dense, ex->n_exp, PX_F32, PX_REDUCE_SUM,
                           &ex->edp, err));
    /* Tied embeddings (or MTP's lookups) split over the first and last stage. */
    int64_t emb = ex->stage == 0 ? ex->tab.word_emb : ex->tab.emb_copy;
    if (ex->emb.mpi != MPI_COMM_NULL && px_ex_trained(emb)) /* (LoRA: frozen) */
        PX_TRY(be->all_reduce(be, G(emb), ex->V_l * ex->h, PX_F32, PX_REDUCE_SUM, &ex->emb, err));
    return PX_OK;
}

static px_status optimizer_step(px_exec *ex, px_error *err)
{
    px_backend *be = ex->be;
    ex->adam_steps++;
    if (ex->zero >= 2)
        return px_ex_shard_update(ex, err);
    if (ex->plan.par.zero >= 1 && ex->grad.size > 1) {
        /* ZeRO-1: reduce-scatter the gradients, update this rank's shard of
         * the weights with its shard of the moments, all-gather the weights
         * (the compute copy: bf16 in mixed precision).  The master is the
         * shard itself in bf16 storage, the weights' own range in fp32. */
        PX_TRY(be->reduce_scatter(be, ex->grads, ex->grads, ex->n_shard, PX_F32, &ex->grad, err));
        int64_t off = (int64_t)ex->grad.rank * ex->n_shard;
        void *w = px_ex_at(ex, ex->params, off);
        px_ex_adamw(ex, 0, ex->grads, ex->n_shard, off, w);
        if (ex->n_exp > 0) /* experts: already summed over edp, updated whole */
            px_ex_adamw(ex, ex->n_shard, ex->grads + ex->n_dense, ex->n_exp, ex->n_dense,
                        px_ex_at(ex, ex->params, ex->n_dense));
        px_host_step_join(ex);
        return be->all_gather(be, ex->params, w, ex->n_shard, ex->act_dtype, &ex->grad, err);
    }
    PX_TRY(be->all_reduce(be, ex->grads, ex->n_dense, PX_F32, PX_REDUCE_SUM, &ex->grad, err));
    px_ex_adamw(ex, 0, ex->grads, ex->n_padded, 0, ex->params);
    px_host_step_join(ex);
    return PX_OK;
}

px_status px_exec_step(px_exec *ex, int64_t step, bool update, double *loss, px_error *err)
{
    px_backend *be = ex->be;
    be->zero(be, ex->grads, ex->n_grads * (int64_t)sizeof(float));
    ex->loss_sum = 0.0;
    /* Ops and the message phases between them, in timeline order. */
    const int *slot = ex->tl.slot[ex->stage];
    px_msg out = {NULL, 0, 0}; /* the last op's output, until its phase */
    int phase = 0, cursor = 0;
    for (int i = 0; i < ex->n_ops; i++) {
        const px_sched_op *op = &ex->ops[i];
        while (phase < slot[i])
            PX_TRY(exchange(ex, phase++, &cursor, &out, err));
        double t0 = px_trace_now();
        if (op->kind == 'F')
            PX_TRY(chunk_fwd(ex, op->chunk, op->micro, step, &out, err));
        else if (op->kind == 'B')
            PX_TRY(chunk_bwd(ex, op->chunk, op->micro, &out, err));
        else
            PX_TRY(chunk_wgrad(ex, op->chunk, op->micro, err));
        px_trace_span(op->kind == 'F' ? PX_SPAN_FWD : op->kind == 'B' ? PX_SPAN_BWD : PX_SPAN_WGRAD,
                      t0, ex->tab.chunks[op->chunk].model_chunk, op->micro);
    }
    while (phase < ex->tl.n_slots)
        PX_TRY(exchange(ex, phase++, &cursor, &out, err));
    double t0 = px_trace_now();
    PX_TRY(reduce_grads(ex, err));
    if (!update && ex->grad.size > 1 && ex->zero < 2) /* still report the full gradient */
        PX_TRY(be->all_reduce(be, ex->grads, ex->n_dense, PX_F32, PX_REDUCE_SUM, &ex->grad, err));
    px_trace_span(PX_SPAN_REDUCE, t0, 0, 0);
    /* The loss first: every last-stage TP rank 0 holds its replica's token
     * losses; a NaN or infinite loss or gradient stops the update. */
    bool owner = ex->tab.chunks[ex->vpp - 1].is_last && ex->tp_rank == 0;
    if (owner) {
        int64_t n = ex->m * ex->T;
        float *host = malloc((size_t)n * sizeof *host);
        if (!host)
            return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory (loss)");
        be->download(be, host, ex->loss_tok, n * (int64_t)sizeof(float));
        for (int64_t i = 0; i < n; i++)
            ex->loss_sum += host[i];
        free(host);
    }
    /* main token losses | the MTP term */
    double local[2] = {owner ? ex->loss_sum : 0.0, owner ? px_mtp_loss_term(ex) : 0.0};
    double total[2] = {0.0, 0.0};
    if (step == ex->opt.inject_nan_step) {
        px_ex_inject_nan(ex);
        local[0] = NAN;
    }
    PX_TRY(px_mpi_check(MPI_Allreduce(local, total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
                     "MPI_Allreduce (loss)", err));
    ex->mtp_loss = total[1];
    *loss = total[0] / ex->global_tokens + total[1];
    PX_TRY(px_ex_check_health(ex, *loss, err));
    if (update && !ex->diverged) {
        double t1 = px_trace_now();
        PX_TRY(optimizer_step(ex, err));
        px_trace_span(PX_SPAN_OPTIMIZER, t1, 0, 0);
    }
    return be->sync(be, err);
}












