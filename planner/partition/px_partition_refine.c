/* px_partition_refine.c — the cost model's numbers in, a better split out. */
#include "px_partition_refine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_checked.h"
#include "px_cost.h"
#include "px_plan_check.h"

static int64_t to_bytes(double x) { return x > 0.0 ? px_i64_from_double_sat(x) : 0; }

px_status px_partition_build(px_cost_ctx *ctx, const px_parallel *par, px_partition_problem *pb,
                             px_error *err)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    if (m->n_layers < 1 || m->n_layers > PX_MAX_LAYERS)
        return PX_FAIL(err, PX_ERR_INVALID, "partition: model %s has %lld layers; allowed 1..%d",
                       m->name, (long long)m->n_layers, PX_MAX_LAYERS);
    if (par->pp < 1 || par->vpp < 1 || (int64_t)par->pp * par->vpp > m->n_layers)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "partition: pp x vpp = %d x %d for %lld layers; every chunk needs a layer",
                       par->pp, par->vpp, (long long)m->n_layers);
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
            pb->layer_time_s[i][r] = lc.fwd_s + lc.bwd_s + lc.recompute_s[r] + lc.offload_s[r];
            pb->layer_act_bytes[i][r] = lc.offloaded ? 0 : to_bytes(lc.act_bytes[r]);
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
    /* the cost model's end buffers, whole: they already carry their
     * in-flight counts (the loss per micro-batch, the logits once) */
    double first_buf, last_buf, every_buf;
    px_cost_stage_end_buffers(ctx, par, &first_buf, &last_buf, &every_buf);
    pb->embed_static_bytes += to_bytes(first_buf);
    pb->head_static_bytes += to_bytes(last_buf);
    pb->embed_act_bytes = 0;
    pb->head_act_bytes = 0;
    pb->stage_base_bytes = to_bytes(every_buf);
    /* what the runtime takes beside the tensors, as on the uniform split's
     * worst stage (its allocator cache follows the stage's bytes: close
     * enough for a split whose worst stage moves little) */
    px_memory uni;
    px_cost_memory(ctx, par, &uni, NULL);
    pb->stage_base_bytes += uni.total - uni.allocated;
    for (int s = 0; s < par->pp; s++)
        pb->in_flight[s] = px_cost_inflight(par->schedule, par->pp, par->vpp, par->n_micro, s);
    pb->n_micro = par->n_micro; /* interleaved: balance the chunks too */
    pb->mem_limit_bytes = px_hw_usable_bytes(hw) - to_bytes(rerun_bytes);
    if (pb->mem_limit_bytes <= 0)
        return PX_FAIL(err, PX_ERR_INFEASIBLE,
                       "partition: %s leaves %lld bytes after the %lld-byte reserve and one "
                       "layer's activations",
                       hw->name, (long long)pb->mem_limit_bytes, (long long)hw->mem_reserve_bytes);
    return px_partition_validate(pb, err);
}

px_status px_partition_cost_memory(px_cost_ctx *ctx, const px_parallel *par,
                                   px_partition_solution *sol, int64_t *limit, px_error *err)
{
    px_memory *mem = malloc(PX_MAX_CHUNKS * sizeof *mem);
    if (!mem)
        return PX_FAIL(err, PX_ERR_NOMEM, "partition: out of memory");
    px_cost_stage_memory(ctx, par, mem);
    *limit = px_hw_usable_bytes(ctx->hw);
    sol->max_over_bytes = INT64_MIN;
    for (int s = 0; s < par->pp; s++) {
        sol->stage_mem_bytes[s] = mem[s].total;
        int64_t over = mem[s].total - *limit;
        if (over > sol->max_over_bytes) {
            sol->max_over_bytes = over;
            sol->fullest_stage = s;
        }
    }
    sol->fits = sol->max_over_bytes <= 0;
    free(mem);
    return PX_OK;
}

/* par with sol's split and recompute choices. */
static void apply_split(const px_partition_solution *sol, int n_layers, px_parallel *par)
{
    par->n_chunks = sol->n_chunks;
    memcpy(par->layers_per_chunk, sol->layers_per_chunk,
           (size_t)sol->n_chunks * sizeof *par->layers_per_chunk);
    par->n_layer_recompute = n_layers;
    /* px_cost_eval costs every layer by its own choice; the uniform field
     * keeps the candidate's choice unless all layers agree on another one */
    bool same = true;
    for (int i = 0; i < n_layers; i++) {
        par->layer_recompute[i] = sol->layer_recompute[i];
        same = same && sol->layer_recompute[i] == sol->layer_recompute[0];
    }
    if (same)
        par->recompute = (px_recompute)sol->layer_recompute[0];
}

/* The program's memory is linear per layer; the cost model's is not quite
 * (zero-bubble B -> W gradients by their own in-flight count, the head's
 * logits once, the rerun buffer only where a layer recomputes fully).  The
 * split it returns is restated with the cost model; while that overflows,
 * the program's limit is lowered by the overflow and it solves again. */
#define REFINE_MEM_RETRIES 4
static px_status solve_checked(px_cost_ctx *ctx, const px_parallel *par,
                               px_partition_problem *pb, const px_partition_opts *opts,
                               px_partition_solution *sol, px_parallel *next,
                               px_partition_report *rep, px_error *err)
{
    px_partition_solution *last = NULL; /* the previous, overflowing answer */
    px_status st = PX_OK;
    for (int k = 0;; k++) {
        st = px_partition_solve(pb, opts, sol, err);
        rep->work += sol->work;
        rep->clock_hit = rep->clock_hit || sol->clock_hit;
        if (st && last) {
            *sol = *last; /* nothing fits the tighter limit: the cost model's no */
            st = PX_OK;
            break;
        }
        if (st)
            break;
        *next = *par;
        apply_split(sol, pb->n_layers, next);
        bool program_fits = sol->fits;
        int64_t limit;
        st = px_partition_cost_memory(ctx, next, sol, &limit, err);
        if (st || sol->fits || !program_fits || k == REFINE_MEM_RETRIES)
            break;
        pb->mem_limit_bytes -= sol->max_over_bytes;
        if (pb->mem_limit_bytes <= 0)
            break; /* sol: the cost model's numbers, not fitting */
        if (!last && !(last = malloc(sizeof *last))) {
            st = PX_FAIL(err, PX_ERR_NOMEM, "partition: out of memory");
            break;
        }
        *last = *sol;
    }
    free(last);
    return st;
}

/* Whether par's recorded split leaves a chunk without layers. */
static bool has_empty_chunk(const px_parallel *par)
{
    for (int c = 0; c < par->n_chunks; c++)
        if (par->layers_per_chunk[c] < 1)
            return true;
    return false;
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

px_status px_partition_refine(px_cost_ctx *ctx, px_parallel *par, px_prediction *pred,
                              const px_partition_opts *opts, unsigned allowed_recompute,
                              px_partition_report *report, px_error *err)
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
    st = px_partition_build(ctx, par, pb, err);
    if (st)
        goto out;
    if (allowed_recompute != 0u) {
        /* the caller fixed the recompute choice (plan --recompute) */
        pb->allowed_recompute = allowed_recompute;
        st = px_partition_validate(pb, err);
        if (st)
            goto out;
    }
    /* a split with an empty end chunk (the embedding or the loss alone: a
     * framework's pipeline layout) is outside the program, which places a
     * layer in every chunk: its answer is then weighed by the cost model's
     * step time alone */
    bool stated = !has_empty_chunk(par);
    if (stated)
        st = current_split(pb, par, &rep->before, err);
    else if (!pred)
        goto out; /* nothing to weigh the program's answer against */
    if (st)
        goto out;
    st = px_partition_cost_memory(ctx, par, &rep->before, &rep->mem_limit_bytes, err);
    if (st)
        goto out;
    st = solve_checked(ctx, par, pb, opts, &rep->after, next, rep, err);
    if (st)
        goto out;
    rep->proven_optimal = rep->after.proven_optimal;
    rep->exact_dp = rep->after.exact_dp;
    /* never a split the cost model says does not fit in place of one that does */
    bool better = (rep->after.fits || !rep->before.fits) &&
                  (!stated || rep->after.objective_s < rep->before.objective_s * (1.0 - 1e-9) ||
                   (!rep->before.fits && rep->after.fits));
    if (!better) {
        rep->after = rep->before;
        goto out;
    }
    if (pred) {
        /* re-scored as the search scores its candidates (ctx->run) */
        px_prediction p2;
        st = px_cost_check(ctx->model, next, err);
        if (!st)
            st = px_cost_eval(ctx, next, pred->train_tokens, 0.0, &p2, NULL, err);
        if (st)
            goto out;
        if (!stated && rep->before.fits && !(p2.time.step_s < pred->time.step_s)) {
            rep->after = rep->before; /* the split with the empty chunk is at least as fast */
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

px_status px_partition_refine_bound(px_cost_ctx *ctx, const px_parallel *par,
                                    double *stage_lower_s, px_error *err)
{
    px_partition_problem *pb = malloc(sizeof *pb);
    if (!pb)
        return PX_FAIL(err, PX_ERR_NOMEM, "partition: out of memory");
    px_status st = px_partition_build(ctx, par, pb, err);
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
