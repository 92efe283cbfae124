/* px_cost_1_layout.c — the cost model's first step (planner/cost/README.md):
 * what the layout alone decides.  Which layers each stage holds, which
 * parallel groups cross a node, and the pipeline schedule's counts (micro-
 * batches in flight, the bubble over the ideal step); docs/cost-model.md. */
#include "px_cost_1_layout.h"

#include <string.h>

#include "px_domain.h"
#include "px_layout.h"

void px_cost_default_split(int64_t n_layers, int chunks, int *layers_per_chunk)
{
    if (chunks < 1)
        return;
    int64_t base = n_layers / chunks, rem = n_layers % chunks, first = (chunks - rem) / 2;
    for (int c = 0; c < chunks; c++)
        layers_per_chunk[c] = (int)(base + (c >= first && c < first + rem ? 1 : 0));
}

bool px_cost_record_split(const px_model *m, px_parallel *par)
{
    int chunks = par->pp * par->vpp;
    if (par->n_chunks > 0 || chunks < 1 || chunks > PX_MAX_CHUNKS || chunks > m->n_layers ||
        m->n_layers % chunks == 0)
        return false;
    px_cost_default_split(m->n_layers, chunks, par->layers_per_chunk);
    par->n_chunks = chunks;
    return true;
}

/* The layers counted on a stage so far. */
static int64_t stage_layer_count(const stage_layers *s)
{
    int64_t n = 0;
    for (int k = 0; k < PX_LAYER_KINDS; k++)
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
            n += s->n[k][r];
    return n;
}

/* Layers of each kind and recompute choice on every stage, in one pass over
 * the chunks, and of them those whose activations are offloaded; per layer
 * only when par records per-layer choices or offloads a count of leading
 * layers (the search scores uniform choices and must stay fast). */
void stage_counts(const px_cost_ctx *ctx, const px_parallel *par, stage_layers *sl)
{
    int64_t L = ctx->model->n_layers;
    int p = par->pp, chunks = par->pp * par->vpp;
    memset(sl, 0, (size_t)p * sizeof *sl);
    int64_t base = L / chunks, rem = L % chunks, first = (chunks - rem) / 2;
    int rc = par->recompute;
    /* a count of offloaded leading layers needs each layer's place */
    int64_t lead = par->offload.activations ? par->offload.act_layers : 0;
    bool per_layer = par->n_layer_recompute > 0 || lead > 0;
    int64_t start = 0;
    for (int c = 0; c < chunks && start < L; c++) {
        int64_t len = par->n_chunks > 0 ? par->layers_per_chunk[c]
                                        : base + (c >= first && c < first + rem ? 1 : 0);
        int64_t end = start + len > L ? L : start + len;
        stage_layers *s = &sl[c % p];
        if (per_layer) {
            for (int64_t l = start; l < end; l++) {
                int k = (int)px_model_layer_kind(ctx->model, l);
                int r = l < par->n_layer_recompute ? par->layer_recompute[l] : rc;
                r = r < PX_RECOMPUTE_COUNT ? r : rc;
                if (lead > 0 && stage_layer_count(s) < lead)
                    s->off[k][r]++;
                s->n[k][r]++;
            }
        } else {
            for (int i = 0; i < ctx->n_kinds; i++) {
                int k = ctx->kinds[i];
                s->n[k][rc] += ctx->kind_prefix[k][end] - ctx->kind_prefix[k][start];
            }
        }
        start += len;
    }
    bool every = par->offload.activations && lead == 0; /* every layer offloaded */
    for (int st = 0; st < p; st++)
        for (int i = 0; i < ctx->n_kinds; i++) {
            int k = ctx->kinds[i];
            for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
                sl[st].kind[k] += sl[st].n[k][r];
                if (every)
                    sl[st].off[k][r] = sl[st].n[k][r];
            }
        }
}

/* A dense dimension of size n and rank stride st: groups are the blocks of
 * st·n consecutive ranks, so every group stays inside a node exactly when
 * st·n divides the node size (or n == 1). */
bool dim_crosses(int st, int n, int g)
{
    if (n <= 1)
        return false;
    if (g < 1)
        g = 1;
    return g % (st * n) != 0;
}

/* Expert groups (default order): a stage's GPUs are indexed
 * idx = tp_i + T·(cp_i + C·dp_i) and folded as idx = etp_i + etp·(ep_i + ep·edp_i);
 * the rank of idx on stage st is (idx mod TC) + TC·P·(idx div TC) + TC·st,
 * increasing in idx, so a group (first index f, step d, n members) stays in
 * one node exactly when its first and last members do. */
static int64_t stage_rank(int64_t idx, int64_t tc, int64_t pp, int64_t stage)
{
    return idx % tc + tc * pp * (idx / tc) + tc * stage;
}

int expert_dp_rank_stride(const px_parallel *par, bool pp_outermost)
{
    int64_t step = (int64_t)par->etp * par->ep;
    return (int)(pp_outermost ? step : stage_rank(step, (int64_t)par->tp * par->cp, par->pp, 0));
}

static bool expert_dim_crosses(const px_parallel *par, int which, int g)
{
    int64_t tc = (int64_t)par->tp * par->cp, pp = par->pp;
    int64_t ep = par->ep, etp = par->etp, edp = tc * par->dp / (ep * etp);
    int64_t n = which == 0 ? ep : which == 1 ? etp : edp;
    if (n <= 1)
        return false;
    int64_t step = which == 0 ? etp : which == 1 ? 1 : etp * ep;
    /* the two other coordinates enumerate the groups */
    int64_t na = which == 0 ? etp : which == 1 ? ep : etp;
    int64_t nb = which == 0 ? edp : which == 1 ? edp : ep;
    int64_t stages = (tc % g == 0) ? 1 : pp; /* aligned stages repeat the pattern */
    /* Moving a group's indices by tc·g (or its stage by g) moves both ends'
     * ranks by a multiple of g: the answer repeats, so g stages and the
     * values of b whose steps (bstep each) reach distinct first indices
     * modulo tc·g cover every case. */
    int64_t period = tc * g, bstep = which == 2 ? etp : etp * ep;
    int64_t x = period, y = bstep; /* gcd */
    while (y) {
        int64_t r = x % y;
        x = y;
        y = r;
    }
    if (stages > g)
        stages = g;
    if (nb > period / x)
        nb = period / x;
    for (int64_t st = 0; st < stages; st++)
        for (int64_t b = 0; b < nb; b++)
            for (int64_t a = 0; a < na; a++) {
                int64_t first;
                if (which == 0)
                    first = a + etp * ep * b;         /* etp_i = a, edp_i = b */
                else if (which == 1)
                    first = etp * (a + ep * b);       /* ep_i = a, edp_i = b */
                else
                    first = a + etp * b;              /* etp_i = a, ep_i = b */
                int64_t last = first + (n - 1) * step;
                if (stage_rank(first, tc, pp, st) / g != stage_rank(last, tc, pp, st) / g)
                    return true;
            }
    return false;
}

static bool default_order(const char *order)
{
    return order[0] == '\0' || strcmp(order, "tp-cp-ep-pp-dp") == 0 ||
           strcmp(order, "tp-cp-pp-dp") == 0;
}

/* Rank order tp, cp, ep, dp, pp (px_fw_runtime.pp_outermost): a stage holds
 * the B = tp·cp·dp consecutive ranks s·B …, the dense dimensions are the
 * strides 1, tp, tp·cp (dp) and B (pp), and the expert grid folds the same
 * block as etp, ep, edp; every group is an aligned block of stride · size
 * ranks, so dim_crosses answers each. */
static void pp_outermost_crossings(const px_parallel *par, int g, bool moe, crossings *x)
{
    int tc = par->tp * par->cp, blk = tc * par->dp;
    x->tp = dim_crosses(1, par->tp, g);
    x->cp = dim_crosses(par->tp, par->cp, g);
    x->dp = dim_crosses(tc, par->dp, g);
    x->pp = dim_crosses(blk, par->pp, g);
    if (!moe || par->ep * par->etp < 1 || blk % (par->ep * par->etp) != 0)
        return;
    x->etp = dim_crosses(1, par->etp, g);
    x->ep = dim_crosses(par->etp, par->ep, g);
    x->edp = dim_crosses(par->etp * par->ep, blk / (par->ep * par->etp), g);
}

void find_crossings(px_cost_ctx *ctx, const px_parallel *par, crossings *x)
{
    const px_hw *hw = ctx->hw;
    memset(x, 0, sizeof *x);
    if (hw->torus)
        return; /* no node cliff: every group uses the fast links */
    int gpus = par->tp * par->cp * par->pp * par->dp;
    int g = px_domain_job_gpus(hw, gpus);
    if (gpus <= g)
        return; /* the whole job on one domain, whatever its order */
    bool moe = ctx->n_moe_layers > 0;
    px_layout lay;
    bool have_lay = false;
    if (default_order(par->order) && ctx->run && ctx->run->pp_outermost) {
        /* the framework lays the default grid out its own way */
        pp_outermost_crossings(par, g, moe, x);
        return;
    }
    if (default_order(par->order)) {
        int st = 1;
        x->tp = dim_crosses(st, par->tp, g);
        st *= par->tp;
        x->cp = dim_crosses(st, par->cp, g);
        st *= par->cp;
        x->pp = dim_crosses(st, par->pp, g);
        st *= par->pp;
        x->dp = dim_crosses(st, par->dp, g);
    } else {
        if (px_layout_init(&lay, par, NULL) != PX_OK)
            return;
        have_lay = true;
        x->tp = px_layout_crosses_node(&lay, PX_DIM_TP, g);
        x->cp = px_layout_crosses_node(&lay, PX_DIM_CP, g);
        x->pp = px_layout_crosses_node(&lay, PX_DIM_PP, g);
        x->dp = px_layout_crosses_node(&lay, PX_DIM_DP, g);
    }
    if (!moe)
        return;
    /* expert groups: exact answer from px_layout, cached per grid */
    int key[6] = {par->tp, par->cp, par->pp, par->dp, par->ep, par->etp};
    unsigned hsh = 0;
    for (int i = 0; i < 6; i++)
        hsh = hsh * 31u + (unsigned)key[i];
    hsh %= 64u;
    if (default_order(par->order) && ctx->xcache[hsh].valid &&
        memcmp(ctx->xcache[hsh].key, key, sizeof key) == 0) {
        x->ep = ctx->xcache[hsh].ep_cross;
        x->etp = ctx->xcache[hsh].etp_cross;
        x->edp = ctx->xcache[hsh].edp_cross;
        return;
    }
    if (have_lay) {
        x->ep = px_layout_crosses_node(&lay, PX_DIM_EP, g);
        x->etp = px_layout_crosses_node(&lay, PX_DIM_ETP, g);
        x->edp = px_layout_crosses_node(&lay, PX_DIM_EDP, g);
    } else {
        x->ep = expert_dim_crosses(par, 0, g);
        x->etp = expert_dim_crosses(par, 1, g);
        x->edp = expert_dim_crosses(par, 2, g);
    }
    if (default_order(par->order)) {
        memcpy(ctx->xcache[hsh].key, key, sizeof key);
        ctx->xcache[hsh].valid = true;
        ctx->xcache[hsh].ep_cross = x->ep;
        ctx->xcache[hsh].etp_cross = x->etp;
        ctx->xcache[hsh].edp_cross = x->edp;
    }
}

double px_cost_inflight(px_schedule sched, int p, int v, int64_t m, int stage)
{
    double mm = (double)m;
    double left = (double)(p - stage); /* p − i */
    if (p <= 1)
        return sched == PX_SCHED_GPIPE ? mm : dmin(1.0, mm);
    switch (sched) {
    case PX_SCHED_GPIPE: return mm;
    case PX_SCHED_INTERLEAVED:
    case PX_SCHED_ZB_H1: {
        /* ZB-H1 runs each W right after its B: the 1F1B count, or the
         * interleaved one with v > 1 (the executor's orders) */
        if (sched == PX_SCHED_ZB_H1 && v <= 1)
            return dmin(left, mm);
        if (v < 1)
            v = 1;
        /* Megatron's warm-up: 2(p−i−1) + (v−1)p forward chunks, +1 in steady state */
        double chunks = 2.0 * (left - 1.0) + (double)(v - 1) * p + 1.0;
        return dmin(chunks, mm * v) / v;
    }
    case PX_SCHED_ZB_H2:
        /* Qi et al.'s parallelogram: stage 0 warms up with 2p−1 forwards and
         * the last stage ends with 2p−1 W's, each holding its activations
         * until then: 2p−1 on every stage (the executor's order, checked in
         * tests/unit/test_schedule.c). */
        return dmin(2.0 * p - 1.0, mm);
    case PX_SCHED_1F1B:
    default: return dmin(left, mm);
    }
}

double px_cost_inflight_bw(px_schedule sched, int p, int v, int64_t m, int stage)
{
    double mm = (double)m;
    if (m < 1)
        return 0.0;
    switch (sched) {
    case PX_SCHED_ZB_H1:
        /* W right after its B: one chunk-set past B at a time */
        return 1.0 / (v > 1 ? v : 1);
    case PX_SCHED_ZB_H2: {
        /* The order's steady phase is F-B-W; the later stages pile up B's
         * ahead of their W's (the tail of 2i + 1 W's): p + i of the 2p − 1
         * past B when stage 0 peaks, fewer when m is short of the count the
         * warm-up needs, m − 2(p−1−i).  Read off the unit-time order of
         * planner/spec/px_schedule.c for p = 1..8 and all m. */
        if (p <= 1)
            return dmin(1.0, mm);
        double n = dmin(mm - 2.0 * (p - 1 - stage), (double)(p + stage));
        return n < 1.0 ? 1.0 : n;
    }
    default: return 0.0;
    }
}

double px_cost_bubble_over_ideal(px_schedule sched, int p, int v, int64_t m)
{
    if (p <= 1 || m < 1)
        return 0.0;
    double x = (double)(p - 1) / (double)m;
    /* Zero-bubble schedules fill the bubble with deferred weight-gradient
     * (W) work of later micro-batches: ZB-H1 needs m >= p of them, ZB-H2
     * (its longer warm-up) m >= 2p − 1; with fewer they fall back a level. */
    switch (sched) {
    case PX_SCHED_INTERLEAVED: return x / (v > 1 ? v : 1);
    case PX_SCHED_ZB_H1: return m >= p ? x / 3.0 : x;
    case PX_SCHED_ZB_H2: return m >= 2 * (int64_t)p - 1 ? 0.0 : (m >= p ? x / 3.0 : x);
    default: return x;
    }
}

double px_cost_bubble_fraction(px_schedule sched, int p, int v, int64_t m)
{
    double x = px_cost_bubble_over_ideal(sched, p, v, m);
    return x / (1.0 + x);
}

int ep_ranks_in_node(const px_hw *hw, const px_parallel *par, bool pp_outermost, bool crosses)
{
    if (!crosses)
        return par->ep;
    if (!default_order(par->order))
        return 1;
    int64_t g = px_domain_job_gpus(hw, par->tp * par->cp * par->pp * par->dp);
    int64_t tc = (int64_t)par->tp * par->cp;
    int k = 0;
    for (int64_t j = 0; j < par->ep; j++) {
        int64_t idx = j * par->etp;
        int64_t rank = pp_outermost ? idx : stage_rank(idx, tc, par->pp, 0);
        if (rank / (g > 0 ? g : 1) == 0)
            k++;
    }
    return k > 0 ? k : 1;
}
