/* px_shard.c — ZeRO-2 and ZeRO-3: gradients (and, at stage 3, weights)
 * sharded over the dp x cp group unit by unit.
 *
 * Why units and not one flat shard as under ZeRO-1: a rank must never hold
 * the whole gradient (or, at stage 3, the whole weights) at once, so each
 * gradient is reduce-scattered as soon as one layer's backward is done, and
 * each layer's weights are gathered just before it runs.  Sharding every unit
 * on its own (FSDP's flat parameter per unit) makes this rank's piece of any
 * unit a contiguous range, so each of those is one collective.  An MoE
 * layer's experts form their own unit, sharded over the expert-data-parallel
 * group (the ranks holding the same experts) instead of dp x cp. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "px_exec_internal.h"

/* Which unit a segment belongs to: its layer's dense tensors, its layer's
 * experts, or its own tensor (the final norm's weight and bias together).
 * Only equality matters: consecutive segments with equal keys merge. */
static int64_t unit_key(const px_param_seg *s)
{
    if (s->expert) /* far from every dense key */
        return INT64_MIN / 2 + (s->tensor_id - PX_TID_LAYER0) / 32;
    if (s->tensor_id >= PX_TID_LORA0) /* one layer's LoRA adapters */
        return INT64_MAX / 2 + (s->tensor_id - PX_TID_LORA0) / 16;
    if (s->tensor_id >= PX_TID_LAYER0)
        return (s->tensor_id - PX_TID_LAYER0) / 32;
    if (s->tensor_id == PX_T_FINAL_NORM_B)
        return -PX_T_FINAL_NORM_W;
    return -s->tensor_id;
}

px_status px_ex_units_build(px_exec *ex, px_error *err)
{
    const px_param_table *t = &ex->tab;
    ex->units = calloc((size_t)(t->n_segs > 0 ? t->n_segs : 1), sizeof *ex->units);
    if (!ex->units)
        return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory (ZeRO units)");
    ex->n_units = 0;
    int64_t so = 0;
    for (int i = 0; i < t->n_segs; i++) {
        const px_param_seg *s = &t->segs[i];
        int64_t n = s->n_rows * s->n_cols;
        if (i > 0 && unit_key(s) == unit_key(&t->segs[i - 1])) {
            ex->units[ex->n_units - 1].n += n; /* segments are back to back */
            continue;
        }
        ex->units[ex->n_units++] =
            (px_unit){.start = s->offset, .n = n, .comm = s->expert ? &ex->edp : &ex->grad};
    }
    for (int i = 0; i < ex->n_units; i++) {
        px_unit *u = &ex->units[i];
        int64_t d = u->comm->size;
        u->piece = (u->n + d - 1) / d;
        u->shard_off = so;
        so += u->piece;
    }
    ex->n_shard = so;
    return PX_OK;
}

px_unit *px_ex_unit(const px_exec *ex, int64_t off)
{
    int lo = 0, hi = ex->n_units - 1;
    while (lo <= hi) { /* units are sorted by start (the padding before the
                        * experts belongs to none) */
        int mid = (lo + hi) / 2;
        px_unit *u = &ex->units[mid];
        if (off < u->start)
            hi = mid - 1;
        else if (off >= u->start + u->n)
            lo = mid + 1;
        else
            return u;
    }
    return NULL;
}

/* Elements of unit u that rank r's piece really covers (the last pieces may
 * be short or empty: padding). */
static int64_t piece_len(const px_unit *u, int64_t r)
{
    int64_t len = u->n - r * u->piece;
    return len < 0 ? 0 : len < u->piece ? len : u->piece;
}

px_status px_ex_use_w(px_exec *ex, int64_t off, px_error *err)
{
    if (ex->zero < 3 || !px_ex_trained(off))
        return PX_OK;
    px_unit *u = px_ex_unit(ex, off);
    if (u->w_refs++ > 0)
        return PX_OK;
    /* The compute copy moves (bf16 in mixed precision), never the master. */
    int64_t r = u->comm->rank;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_WEIGHTS, u->piece * u->comm->size, &u->w, err));
    void *mine = px_ex_at(ex, u->w, r * u->piece);
    ex->be->copy(ex->be, mine, px_ex_at(ex, ex->params, u->shard_off),
                 px_ex_bytes(ex, u->piece));
    return ex->be->all_gather(ex->be, u->w, mine, u->piece, ex->act_dtype, u->comm, err);
}

void px_ex_done_w(px_exec *ex, int64_t off)
{
    if (ex->zero < 3 || !px_ex_trained(off))
        return;
    px_unit *u = px_ex_unit(ex, off);
    if (--u->w_refs == 0)
        px_ex_free(ex, &u->w);
}

px_status px_ex_use_g(px_exec *ex, int64_t off, px_error *err)
{
    if (ex->zero < 2 || !px_ex_trained(off))
        return PX_OK;
    px_unit *u = px_ex_unit(ex, off);
    if (u->g_refs++ > 0)
        return PX_OK;
    return px_ex_alloc_f32(ex, PX_MEM_GRADS, u->piece * u->comm->size, &u->g, err);
}

px_status px_ex_done_g(px_exec *ex, int64_t off, px_error *err)
{
    if (ex->zero < 2 || !px_ex_trained(off))
        return PX_OK;
    px_unit *u = px_ex_unit(ex, off);
    if (--u->g_refs > 0)
        return PX_OK;
    /* In place: this rank's summed piece lands at the start of the window. */
    px_status st = ex->be->reduce_scatter(ex->be, u->g, u->g, u->piece, PX_F32, u->comm, err);
    if (!st) {
        float *acc = ex->grads + u->shard_off;
        ex->k->add_f32(acc, acc, u->g, u->piece);
    }
    px_ex_free(ex, &u->g);
    return st;
}

px_status px_ex_shard_reduce(px_exec *ex, px_error *err)
{
    px_backend *be = ex->be;
    /* Under SP the replicated tensors saw only this rank's sequence shard
     * (the router: its slice of the tokens, SP or not): sum them over TP on
     * the part of each that lies in this rank's piece (the same range on
     * every TP rank: the tables have equal shapes).  Experts need nothing
     * more: their reduce-scatter ran over the expert-data-parallel group. */
    if (ex->tp.size > 1)
        for (int i = 0; i < ex->tab.n_segs; i++) {
            const px_param_seg *s = &ex->tab.segs[i];
            if (!s->tp_sum && !(ex->sp && s->tp_replicated))
                continue;
            px_unit *u = px_ex_unit(ex, s->offset);
            int64_t r = u->comm->rank;
            int64_t p0 = u->start + r * u->piece, p1 = p0 + piece_len(u, r);
            int64_t lo = s->offset > p0 ? s->offset : p0;
            int64_t hi = s->offset + s->n_rows * s->n_cols;
            if (hi > p1)
                hi = p1;
            if (hi > lo)
                PX_TRY(be->all_reduce(be, ex->grads + u->shard_off + (lo - p0), hi - lo, PX_F32,
                                   PX_REDUCE_SUM, &ex->tp, err));
        }
    /* Tied embeddings (or MTP's lookups) over a pipeline: the embedding
     * (stage 0) and its copy (last stage) are units of equal size, so the pieces match. */
    int64_t emb = ex->stage == 0 ? ex->tab.word_emb : ex->tab.emb_copy;
    if (ex->emb.mpi != MPI_COMM_NULL && px_ex_trained(emb)) { /* (LoRA: frozen) */
        px_unit *u = px_ex_unit(ex, emb);
        PX_TRY(be->all_reduce(be, ex->grads + u->shard_off, u->piece, PX_F32, PX_REDUCE_SUM,
                           &ex->emb, err));
    }
    return PX_OK;
}

px_status px_ex_shard_update(px_exec *ex, px_error *err)
{
    px_backend *be = ex->be;
    if (ex->zero >= 3) { /* the shard is the weights: an update per piece, no gather */
        for (int i = 0; i < ex->n_units; i++) {
            px_unit *u = &ex->units[i];
            int64_t r = u->comm->rank, len = piece_len(u, r), so = u->shard_off;
            if (len > 0)
                px_ex_adamw(ex, so, ex->grads + so, len, u->start + r * u->piece,
                            px_ex_at(ex, ex->params, so));
        }
        px_host_step_join(ex);
        return PX_OK;
    }
    /* ZeRO-2: update this rank's piece of each unit in the full weights
     * (w: that piece of the compute copy), then, once the host's share is
     * done too, all-gather each unit (through a padded temporary). */
    for (int i = 0; i < ex->n_units; i++) {
        px_unit *u = &ex->units[i];
        int64_t r = u->comm->rank, len = piece_len(u, r);
        if (len > 0)
            px_ex_adamw(ex, u->shard_off, ex->grads + u->shard_off, len, u->start + r * u->piece,
                        px_ex_at(ex, ex->params, u->start + r * u->piece));
    }
    px_host_step_join(ex);
    for (int i = 0; i < ex->n_units; i++) {
        px_unit *u = &ex->units[i];
        int64_t r = u->comm->rank, d = u->comm->size;
        int64_t len = piece_len(u, r);
        void *w = px_ex_at(ex, ex->params, u->start + r * u->piece);
        if (d == 1)
            continue;
        void *tmp = NULL;
        PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, u->piece * d, &tmp, err));
        void *mine = px_ex_at(ex, tmp, r * u->piece);
        if (len > 0)
            be->copy(be, mine, w, px_ex_bytes(ex, len));
        px_status st = be->all_gather(be, tmp, mine, u->piece, ex->act_dtype, u->comm, err);
        if (!st)
            be->copy(be, px_ex_at(ex, ex->params, u->start), tmp, px_ex_bytes(ex, u->n));
        px_ex_free(ex, &tmp);
        PX_TRY(st);
    }
    return PX_OK;
}

void px_ex_shard_init(px_exec *ex, const float *host, float *host_shard)
{
    for (int i = 0; i < ex->n_units; i++) {
        const px_unit *u = &ex->units[i];
        int64_t r = u->comm->rank, len = piece_len(u, r);
        if (len > 0)
            memcpy(host_shard + u->shard_off, host + u->start + r * u->piece,
                   (size_t)len * sizeof *host);
    }
}

/* Valid where the master is in pieces: ZeRO-3, and ZeRO-2 in bf16 storage. */
px_status px_ex_gather_all(px_exec *ex, float *host, px_error *err)
{
    float *pieces = NULL;
    PX_TRY(px_ex_master_whole(ex, &pieces, err));
    px_status st = PX_OK;
    for (int i = 0; i < ex->n_units && !st; i++) {
        px_unit *u = &ex->units[i];
        int64_t r = u->comm->rank;
        float *win = NULL;
        st = px_ex_alloc_f32(ex, PX_MEM_TEMP, u->piece * u->comm->size, &win, err);
        if (st)
            break;
        float *mine = win + r * u->piece;
        ex->be->copy(ex->be, mine, pieces + u->shard_off, u->piece * (int64_t)sizeof(float));
        st = ex->be->all_gather(ex->be, win, mine, u->piece, PX_F32, u->comm, err);
        if (!st)
            ex->be->download(ex->be, host + u->start, win, u->n * (int64_t)sizeof(float));
        px_ex_free(ex, &win);
    }
    px_ex_master_whole_done(ex, &pieces);
    return st;
}
