/* px_partition_refine.c — the cost model's numbers in, a better split out. */
#include "px_partition_refine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_checked.h"
#include "px_cost.h"
#include "px_plan_check.h"

static int64_t to_bytes(double x) { return x > 0.0 ? px_i64_from_double_sat(x) : 0; }

px_status px_partition_build(const px_model *m, const px_hw *hw, const px_parallel *par,
                             px_partition_problem *pb, px_error *err)
{
    if (m->n_layers < 1 || m->n_layers > PX_MAX_LAYERS)
        return PX_FAIL(err, PX_ERR_INVALID, "partition: model %s has %lld layers; allowed 1..%d",
                       m->name, (long long)m->n_layers, PX_MAX_LAYERS);
    if (par->pp < 1 || par->vpp < 1 || (int64_t)par->pp * par->vpp > m->n_layers)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "partition: pp x vpp = %d x %d for %lld layers; every chunk needs a layer",
                       par->pp, par->vpp, (long long)m->n_layers);
    px_cost_ctx *ctx = malloc(sizeof *ctx);
    if (!ctx)
        return PX_FAIL(err, PX_ERR_NOMEM, "partition: out of memory");
    px_status st = px_cost_ctx_init(ctx, m, hw, err);
    if (st) {
        free(ctx);
        return st;
    }
    px_partition_problem_init(pb);
    pb->n_layers = (int)m->n_layers;
    pb->pp = par->pp;
    pb->vpp = par->vpp;
    double rerun_bytes = 0.0; /* one layer's activations, held while it is recomputed */
    for (int i = 0; i < pb->n_layers; i++) {
        px_layer_cost lc;
        px_cost_layer(ctx, par, i, &lc);
        pb->layer_static_bytes[i] = to_bytes(lc.static_bytes);
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
            pb->layer_time_s[i][r] = lc.fwd_s + lc.bwd_s + lc.recompute_s[r];
            pb->layer_act_bytes[i][r] = to_bytes(lc.act_bytes[r]);
        }
        if (lc.act_bytes[PX_RECOMPUTE_NONE] > rerun_bytes)
            rerun_bytes = lc.act_bytes[PX_RECOMPUTE_NONE];
    }
    px_stage_extras ex;
    px_cost_stage_extras(ctx, par, &ex);
    pb->embed_time_s = ex.first_s;
    pb->head_time_s = ex.last_s;
    pb->embed_static_bytes = to_bytes(ex.first_static_bytes);
    pb->head_static_bytes = to_bytes(ex.last_static_bytes);
    pb->embed_act_bytes = to_bytes(ex.first_buffer_bytes);
    pb->head_act_bytes = to_bytes(ex.last_buffer_bytes);
    if (par->pp > 1) {
        /* a send and a receive buffer for the boundary activations */
        int64_t s = px_plan_seq_len(m, par);
        bool sp = par->sp && par->tp > 1;
        pb->stage_base_bytes = to_bytes(2.0 * px_cost_pp_msg_bytes(
                                                  (double)s / par->cp, (double)par->micro_batch,
                                                  (double)m->hidden, par->tp, sp, hw->dtype_bytes));
    }
    for (int s = 0; s < par->pp; s++)
        pb->in_flight[s] = px_cost_inflight(par->schedule, par->pp, par->vpp, par->n_micro, s);
    pb->n_micro = par->n_micro; /* interleaved: balance the chunks too */
    pb->mem_limit_bytes = hw->hbm_bytes - hw->mem_reserve_bytes - to_bytes(rerun_bytes);
    free(ctx);
    if (pb->mem_limit_bytes <= 0)
        return PX_FAIL(err, PX_ERR_INFEASIBLE,
                       "partition: %s leaves %lld bytes after the %lld-byte reserve and one "
                       "layer's activations",
                       hw->name, (long long)pb->mem_limit_bytes, (long long)hw->mem_reserve_bytes);
    return px_partition_validate(pb, err);
}

/* par's own split and recompute choice, in the program's terms. */
static px_status current_split(const px_partition_problem *pb, const px_parallel *par,
                               px_partition_solution *sol, px_error *err)
{
    int C = pb->pp * pb->vpp;
    if (par->n_chunks > 0) {
        sol->n_chunks = par->n_chunks;
        memcpy(sol->layers_per_chunk, par->layers_per_chunk,
               (size_t)par->n_chunks * sizeof *par->layers_per_chunk);
    } else {
        /* the uniform layout; any allowed choice (they are set below) */
        px_recompute rc = PX_RECOMPUTE_NONE;
        while (rc < PX_RECOMPUTE_FULL && !((pb->allowed_recompute >> rc) & 1u))
            rc++;
        px_partition_uniform(pb, rc, sol, NULL);
        sol->n_chunks = C;
    }
    for (int i = 0; i < pb->n_layers; i++)
        sol->layer_recompute[i] = (unsigned char)(par->n_layer_recompute > 0
                                                      ? par->layer_recompute[i]
                                                      : (unsigned char)par->recompute);
    return px_partition_evaluate(pb, sol, err);
}

px_status px_partition_refine_report(const px_model *m, const px_hw *hw, px_parallel *par,
                                     px_prediction *pred, const px_partition_opts *opts,
                                     px_partition_report *report, px_error *err)
{
    return px_partition_refine_allowed(m, hw, par, pred, opts, 0u, report, err);
}

px_status px_partition_refine_allowed(const px_model *m, const px_hw *hw, px_parallel *par,
                                      px_prediction *pred, const px_partition_opts *opts,
                                      unsigned allowed_recompute, px_partition_report *report,
                                      px_error *err)
{
    px_partition_problem *pb = malloc(sizeof *pb);
    px_partition_report *rep = malloc(sizeof *rep);
    px_parallel *next = malloc(sizeof *next);
    px_status st = PX_OK;
    if (!pb || !rep || !next) {
        st = PX_FAIL(err, PX_ERR_NOMEM, "partition: out of memory");
        goto out;
    }
    memset(rep, 0, sizeof *rep);
    st = px_partition_build(m, hw, par, pb, err);
    if (st)
        goto out;
    if (allowed_recompute != 0u) {
        /* the caller fixed the recompute choice (plan --recompute) */
        pb->allowed_recompute = allowed_recompute;
        st = px_partition_validate(pb, err);
        if (st)
            goto out;
    }
    rep->mem_limit_bytes = pb->mem_limit_bytes;
    st = current_split(pb, par, &rep->before, err);
    if (st)
        goto out;
    st = px_partition_solve(pb, opts, &rep->after, err);
    if (st)
        goto out;
    rep->proven_optimal = rep->after.proven_optimal;
    rep->exact_dp = rep->after.exact_dp;
    bool better = rep->after.objective_s < rep->before.objective_s * (1.0 - 1e-9) ||
                  (!rep->before.fits && rep->after.fits);
    if (!better) {
        rep->after = rep->before;
        goto out;
    }
    *next = *par;
    next->n_chunks = rep->after.n_chunks;
    memcpy(next->layers_per_chunk, rep->after.layers_per_chunk,
           (size_t)rep->after.n_chunks * sizeof *next->layers_per_chunk);
    next->n_layer_recompute = pb->n_layers;
    /* px_cost_eval costs every layer by its own choice; the uniform field
     * keeps the candidate's choice unless all layers agree on another one */
    bool same = true;
    for (int i = 0; i < pb->n_layers; i++) {
        next->layer_recompute[i] = rep->after.layer_recompute[i];
        same = same && rep->after.layer_recompute[i] == rep->after.layer_recompute[0];
    }
    if (same)
        next->recompute = (px_recompute)rep->after.layer_recompute[0];
    double tokens = pred ? pred->train_tokens : 0.0;
    if (pred) {
        px_prediction p2;
        st = px_cost_evaluate(m, hw, next, &p2, err);
        if (st)
            goto out;
        if (tokens > 0.0) {
            px_cost_ctx *ctx = malloc(sizeof *ctx);
            if (!ctx) {
                st = PX_FAIL(err, PX_ERR_NOMEM, "partition: out of memory");
                goto out;
            }
            st = px_cost_ctx_init(ctx, m, hw, err);
            if (!st)
                st = px_cost_eval(ctx, next, tokens, 0.0, &p2, NULL, err);
            free(ctx);
            if (st)
                goto out;
        }
        *pred = p2;
    }
    *par = *next;
    rep->changed = true;
out:
    if (report && rep)
        *report = *rep;
    free(pb);
    free(rep);
    free(next);
    return st;
}

px_status px_partition_refine(const px_model *m, const px_hw *hw, px_parallel *par,
                              px_prediction *pred, const px_partition_opts *opts,
                              px_error *err)
{
    return px_partition_refine_report(m, hw, par, pred, opts, NULL, err);
}

px_status px_partition_refine_bound(const px_model *m, const px_hw *hw, const px_parallel *par,
                                    double *stage_lower_s, px_error *err)
{
    px_partition_problem *pb = malloc(sizeof *pb);
    if (!pb)
        return PX_FAIL(err, PX_ERR_NOMEM, "partition: out of memory");
    px_status st = px_partition_build(m, hw, par, pb, err);
    if (st == PX_OK) {
        double total = pb->embed_time_s + pb->head_time_s;
        for (int i = 0; i < pb->n_layers; i++) {
            double fastest = INFINITY;
            for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
                if ((pb->allowed_recompute >> r) & 1u)
                    fastest = fmin(fastest, pb->layer_time_s[i][r]);
            total += fastest;
        }
        *stage_lower_s = total / pb->pp;
        double dp_lower; /* the memory-aware bound: recomputation the limit forces */
        st = px_partition_lower_bound(pb, &dp_lower, err);
        if (st == PX_OK && dp_lower > *stage_lower_s)
            *stage_lower_s = dp_lower;
    }
    free(pb);
    return st;
}
