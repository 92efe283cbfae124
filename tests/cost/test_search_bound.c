/* test_search_bound.c — the search's lower bound (px_bound.h) and the
 * pruning it allows.
 *  1. The bound never exceeds the step px_cost_eval returns, for every
 *     ZeRO stage, recompute choice and schedule, on a grid of sizes of
 *     dense and MoE presets (uneven splits and per-layer recompute too).
 *  2. The analytic pass with the pruning returns what the exhaustive one
 *     returns (opts.exhaustive): the same counts, the same ranked list of
 *     100 with the same predictions, the same closest miss, on 1 and 3
 *     threads; and on the large MoE searches it does skip timing most of
 *     the configurations that fit (else the pruning would be dead code). */
#include <stdlib.h>
#include <string.h>

#include "px_bound.h"
#include "px_cost.h"
#include "px_search.h"
#include "px_test.h"

static px_model model;
static px_hw hw;

static void load(const char *m)
{
    px_error err;
    CHECK_MSG(px_model_load(m, NULL, &model, &err) == PX_OK, "%s", err.msg);
    CHECK_MSG(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK, "%s", err.msg);
}

/* Every ZeRO stage, recompute choice and schedule of par's sizes: the
 * bound for that one schedule is at most the step.  Returns the number of
 * configurations checked. */
static int check_choices(px_cost_ctx *ctx, const px_bound_layers *bl, px_parallel *par)
{
    int n = 0;
    px_error err;
    for (int z = 0; z <= 3; z++)
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
            for (int s = 0; s < PX_SCHED_COUNT; s++) {
                par->zero = z;
                par->recompute = (px_recompute)r;
                par->schedule = (px_schedule)s;
                if (px_cost_check(&model, par, &err) != PX_OK)
                    continue;
                px_prediction pred;
                if (px_cost_eval(ctx, par, 0.0, 0.0, &pred, NULL, &err) != PX_OK)
                    continue;
                px_schedule one = (px_schedule)s;
                double lb = px_bound_step_s(ctx, bl, par, &one, 1);
                CHECK_MSG(lb > 0.0 && lb <= pred.time.step_s * (1.0 + 1e-12),
                          "%s tp %d cp %d pp %d vpp %d dp %d ep %d etp %d b %lld zero %d "
                          "recompute %d schedule %d: bound %.12g > step %.12g",
                          model.name, par->tp, par->cp, par->pp, par->vpp, par->dp, par->ep,
                          par->etp, (long long)par->micro_batch, z, r, s, lb, pred.time.step_s);
                n++;
            }
    return n;
}

static void bound_holds(const char *name, int gpus)
{
    load(name);
    px_cost_ctx *ctx = malloc(sizeof *ctx);
    px_parallel *par = malloc(sizeof *par);
    px_error err;
    CHECK_MSG(px_cost_ctx_init(ctx, &model, &hw, &err) == PX_OK, "%s", err.msg);
    px_bound_layers bl;
    px_bound_init(&model, &bl);
    int n = 0;
    const int tps[] = {1, 2, 8}, cps[] = {1, 2}, pps[] = {1, 3, 4}, vps[] = {1, 2};
    const int eps[] = {1, 2, 8}, etps[] = {1, 2};
    for (int i_tp = 0; i_tp < 3; i_tp++)
        for (int i_cp = 0; i_cp < 2; i_cp++)
            for (int i_pp = 0; i_pp < 3; i_pp++)
                for (int i_v = 0; i_v < 2; i_v++)
                    for (int i_ep = 0; i_ep < 3; i_ep++)
                        for (int i_etp = 0; i_etp < 2; i_etp++)
                            for (int64_t b = 1; b <= 4; b *= 4) {
                                int tp = tps[i_tp], cp = cps[i_cp], pp = pps[i_pp];
                                if (gpus % (tp * cp * pp) != 0)
                                    continue;
                                px_parallel_init(par);
                                par->tp = tp;
                                par->cp = cp;
                                par->pp = pp;
                                par->vpp = vps[i_v];
                                par->dp = gpus / (tp * cp * pp);
                                par->ep = model.n_experts > 0 ? eps[i_ep] : 1;
                                par->etp = model.n_experts > 0 ? etps[i_etp] : 1;
                                par->sp = tp > 1;
                                par->micro_batch = b;
                                par->n_micro = 4 * pp;
                                if (par->vpp == 1)
                                    px_cost_record_split(&model, par); /* uneven pp */
                                n += check_choices(ctx, &bl, par);
                                /* per-layer recompute: alternating choices */
                                par->n_layer_recompute = (int)model.n_layers;
                                for (int64_t l = 0; l < model.n_layers; l++)
                                    par->layer_recompute[l] = (uint8_t)(l % PX_RECOMPUTE_COUNT);
                                n += check_choices(ctx, &bl, par);
                            }
    fprintf(stderr, "%-16s %6d: bound <= step on %d configurations\n", name, gpus, n);
    CHECK_MSG(n > 50, "%s: only %d configurations checked", name, n);
    free(ctx);
    free(par);
}

static bool same_candidate(const px_candidate *a, const px_candidate *b)
{
    const px_parallel *p = &a->par, *q = &b->par;
    return p->tp == q->tp && p->cp == q->cp && p->pp == q->pp && p->vpp == q->vpp &&
           p->dp == q->dp && p->ep == q->ep && p->etp == q->etp && p->sp == q->sp &&
           p->zero == q->zero && p->recompute == q->recompute && p->schedule == q->schedule &&
           p->micro_batch == q->micro_batch && p->n_micro == q->n_micro &&
           p->n_chunks == q->n_chunks &&
           !memcmp(p->layers_per_chunk, q->layers_per_chunk,
                   (size_t)p->n_chunks * sizeof p->layers_per_chunk[0]) &&
           a->pred.time.step_s == b->pred.time.step_s &&
           a->pred.mem.total == b->pred.mem.total;
}

static void same_as_exhaustive(const char *name, int gpus, bool expect_pruning)
{
    load(name);
    px_search_result *fast = malloc(sizeof *fast), *ref = malloc(sizeof *ref);
    px_search_opts o;
    px_search_opts_init(&o);
    o.milp = false; /* the analytic pass alone: deterministic */
    o.top = PX_SEARCH_TOP_MAX;
    px_error err;
    o.exhaustive = true;
    px_status s_ref = px_search_run(&model, &hw, gpus, &o, ref, &err);
    o.exhaustive = false;
    for (int threads = 1; threads <= 3; threads += 2) {
        o.threads = threads;
        px_status s = px_search_run(&model, &hw, gpus, &o, fast, &err);
        CHECK_MSG(s == s_ref, "%s on %d: %d, exhaustive %d", name, gpus, s, s_ref);
        CHECK(fast->n_evaluated == ref->n_evaluated && fast->n_valid == ref->n_valid);
        CHECK(!memcmp(fast->rejected, ref->rejected, sizeof fast->rejected));
        CHECK(ref->n_pruned == 0);
        CHECK_MSG(fast->n_top == ref->n_top, "%s on %d: %d ranked, exhaustive %d", name, gpus,
                  fast->n_top, ref->n_top);
        for (int k = 0; k < fast->n_top && k < ref->n_top; k++)
            CHECK_MSG(same_candidate(&fast->top[k], &ref->top[k]),
                      "%s on %d, %d threads: rank %d differs (step %.12g, exhaustive %.12g)", name,
                      gpus, threads, k + 1, fast->top[k].pred.time.step_s,
                      ref->top[k].pred.time.step_s);
        CHECK(fast->has_closest_miss == ref->has_closest_miss);
        if (fast->has_closest_miss && ref->has_closest_miss)
            CHECK(fast->closest_miss.pred.mem.total == ref->closest_miss.pred.mem.total);
        if (threads == 1 && expect_pruning)
            CHECK_MSG(fast->n_pruned * 2 > fast->n_valid,
                      "%s on %d: only %lld of %lld untimed", name, gpus,
                      (long long)fast->n_pruned, (long long)fast->n_valid);
        if (threads == 1)
            fprintf(stderr, "%-16s %6d: %lld evaluated, %lld fit, %lld of them not timed\n",
                    name, gpus, (long long)fast->n_evaluated, (long long)fast->n_valid,
                    (long long)fast->n_pruned);
    }
    free(fast);
    free(ref);
}

int main(void)
{
    bound_holds("tiny-moe", 8);
    bound_holds("llama3-8b", 48);
    bound_holds("mixtral-8x7b", 64);
    bound_holds("qwen3-235b-a22b", 96);
    bound_holds("deepseek-v3", 256);
    const struct {
        const char *model;
        int gpus;
        bool pruning;
    } cases[] = {
        {"tiny-moe", 8, false},        {"llama3-8b", 512, true},
        {"llama3-70b", 1024, true},    {"mixtral-8x7b", 64, true},
        {"mixtral-8x7b", 2048, true},  {"qwen3-235b-a22b", 1024, true},
        {"deepseek-v3", 1024, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        same_as_exhaustive(cases[i].model, cases[i].gpus, cases[i].pruning);
    return px_test_result("test_search_bound");
}
