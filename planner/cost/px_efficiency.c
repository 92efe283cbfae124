/* px_efficiency.c — kernel and collective times; formulas in
 * docs/cost-model.md ("Efficiency"). */
#include "px_efficiency.h"

#include <math.h>
#include <stddef.h>

static double eff_max(const px_hw *hw)
{
    return hw->gemm_eff_max > 0.0 ? hw->gemm_eff_max : PX_EFF_GEMM_MAX_DEFAULT;
}

static double half_dim(const px_hw *hw)
{
    return hw->gemm_eff_half_dim > 0.0 ? hw->gemm_eff_half_dim : PX_EFF_GEMM_HALF_DIM_DEFAULT;
}

/* The shape factor of the parametric model: each dimension x saturates as
 * x/(x + x_half), so a thin GEMM (TP-sharded, few tokens per expert) loses
 * efficiency the way the lecture describes for sharded GEMMs. */
static double shape_factor(double x_half, double m, double n, double k)
{
    return (m / (m + x_half)) * (n / (n + x_half)) * (k / (k + x_half));
}

/* Measured points: inverse-squared-distance weights in log-shape space over
 * the four nearest points, each point's efficiency carried to the query shape
 * by the ratio of parametric shape factors.  An exact shape returns its
 * measurement; far from all points the parametric trend dominates. */
static double eff_from_points(const px_hw *hw, double m, double n, double k)
{
    enum { NEAR = 4 };
    double best_d[NEAR], best_e[NEAR];
    int n_best = 0;
    double x_half = half_dim(hw);
    double lm = log(m), ln_ = log(n), lk = log(k);
    double s_query = shape_factor(x_half, m, n, k);
    for (int i = 0; i < hw->n_gemm_points; i++) {
        const px_gemm_point *p = &hw->gemm_points[i];
        if (p->m <= 0 || p->n <= 0 || p->k <= 0 || p->flops <= 0.0)
            continue;
        double dm = lm - log((double)p->m), dn = ln_ - log((double)p->n),
               dk = lk - log((double)p->k);
        double d2 = dm * dm + dn * dn + dk * dk;
        double e = p->flops / hw->peak_flops;
        if (d2 < 1e-18)
            return e;
        e *= s_query / shape_factor(x_half, (double)p->m, (double)p->n, (double)p->k);
        /* insertion into the small sorted list of nearest points */
        int pos = n_best < NEAR ? n_best++ : NEAR;
        if (pos == NEAR) {
            if (d2 >= best_d[NEAR - 1])
                continue;
            pos = NEAR - 1;
        }
        while (pos > 0 && best_d[pos - 1] > d2) {
            best_d[pos] = best_d[pos - 1];
            best_e[pos] = best_e[pos - 1];
            pos--;
        }
        best_d[pos] = d2;
        best_e[pos] = e;
    }
    if (n_best == 0)
        return eff_max(hw) * s_query;
    double wsum = 0.0, esum = 0.0;
    for (int i = 0; i < n_best; i++) {
        double w = 1.0 / best_d[i];
        wsum += w;
        esum += w * best_e[i];
    }
    double e = esum / wsum;
    return e > 1.0 ? 1.0 : e;
}

double px_eff_gemm(const px_hw *hw, double m, double n, double k)
{
    if (m <= 0.0 || n <= 0.0 || k <= 0.0)
        return eff_max(hw);
    if (hw->n_gemm_points > 0)
        return eff_from_points(hw, m, n, k);
    return eff_max(hw) * shape_factor(half_dim(hw), m, n, k);
}

double px_eff_sustained(const px_hw *hw)
{
    return hw->sustained_frac > 0.0 ? hw->sustained_frac : 1.0;
}

/* The fitted multipliers (px_hw.h: 0 = not fitted = 1). */
static double gemm_scale(const px_hw *hw)
{
    return hw->gemm_eff_scale > 0.0 ? hw->gemm_eff_scale : 1.0;
}

static double attn_scale(const px_hw *hw)
{
    return hw->attn_eff_scale > 0.0 ? hw->attn_eff_scale : 1.0;
}

double px_time_gemm_s(const px_hw *hw, double m, double n, double k)
{
    if (m <= 0.0 || n <= 0.0 || k <= 0.0 || hw->peak_flops <= 0.0)
        return 0.0;
    return 2.0 * m * n * k /
           (hw->peak_flops * px_eff_gemm(hw, m, n, k) * px_eff_sustained(hw) * gemm_scale(hw));
}

double px_time_mem_s(const px_hw *hw, double bytes)
{
    double eff = hw->mem_bound_eff > 0.0 ? hw->mem_bound_eff : PX_EFF_MEM_BOUND_DEFAULT;
    if (bytes <= 0.0 || hw->hbm_bw <= 0.0)
        return 0.0;
    return bytes / (hw->hbm_bw * eff * px_eff_sustained(hw));
}

double px_time_stream_s(const px_hw *hw, double bytes)
{
    if (bytes <= 0.0 || hw->hbm_bw <= 0.0)
        return 0.0;
    return bytes / (hw->hbm_bw * px_eff_sustained(hw));
}

double *px_hw_class_bw(px_hw *hw, px_mem_class c)
{
    switch (c) {
    case PX_MEM_NORM: return &hw->norm_bw;
    case PX_MEM_RESIDUAL: return &hw->residual_bw;
    case PX_MEM_GELU: return &hw->gelu_bw;
    case PX_MEM_SWIGLU: return &hw->swiglu_bw;
    case PX_MEM_ROPE: return &hw->rope_bw;
    case PX_MEM_XENT: return &hw->xent_bw;
    case PX_MEM_ADAMW: return &hw->adamw_bw;
    case PX_MEM_EMBED: return &hw->embed_bw;
    default: return NULL;
    }
}

double px_hw_class_bw_of(const px_hw *hw, px_mem_class c)
{
    const double *bw = px_hw_class_bw((px_hw *)hw, c);
    return bw ? *bw : 0.0;
}

double px_time_mem_class_s(const px_hw *hw, px_mem_class c, double bytes)
{
    double bw = px_hw_class_bw_of(hw, c);
    if (bw > 0.0)
        return bytes > 0.0 ? bytes / (bw * px_eff_sustained(hw)) : 0.0;
    return px_time_mem_s(hw, bytes);
}

static double attn_time_unscaled(const px_hw *hw, double flops);

double px_time_attn_s(const px_hw *hw, double flops)
{
    if (flops <= 0.0 || hw->peak_flops <= 0.0)
        return 0.0;
    return attn_time_unscaled(hw, flops) / attn_scale(hw);
}

static double attn_time_unscaled(const px_hw *hw, double flops)
{
    if (hw->attn_eff > 0.0)
        return flops / (hw->peak_flops * hw->attn_eff * px_eff_sustained(hw));
    /* With measured GEMM points the large-GEMM rate is the best measured one. */
    double e = eff_max(hw);
    if (hw->n_gemm_points > 0) {
        e = 0.0;
        for (int i = 0; i < hw->n_gemm_points; i++)
            if (hw->gemm_points[i].flops / hw->peak_flops > e)
                e = hw->gemm_points[i].flops / hw->peak_flops;
        if (e <= 0.0)
            e = eff_max(hw);
    }
    return flops / (hw->peak_flops * e * PX_EFF_FLASH_REL * px_eff_sustained(hw));
}

const char *px_coll_name(px_coll c)
{
    static const char *const names[PX_COLL_COUNT] = {"all-reduce", "all-gather",
                                                     "reduce-scatter", "all-to-all", "p2p"};
    return (c >= 0 && c < PX_COLL_COUNT) ? names[c] : "?";
}

double px_coll_wire_bytes(px_coll c, int n, double msg_bytes)
{
    if (c == PX_COLL_P2P)
        return msg_bytes;
    if (n <= 1)
        return 0.0;
    double f = (double)(n - 1) / (double)n;
    return c == PX_COLL_ALLREDUCE ? 2.0 * f * msg_bytes : f * msg_bytes;
}

int px_coll_steps(px_coll c, int n)
{
    if (c == PX_COLL_P2P)
        return 1;
    if (n <= 1)
        return 0;
    return c == PX_COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
}

/* Whether point i of pts is the one that prices a message of msg_bytes at
 * its group size: of the points of that size, the one with the largest
 * min_bytes <= msg_bytes, else (a message below every range) the smallest.
 * Calibrated on a CPU, a collective's rate drops once the buffer leaves the
 * core's cache, so the profile holds one (lat, bw) per size range. */
static bool coll_segment_applies(const px_coll_point *pts, int n_pts, int i, double msg_bytes)
{
    const px_coll_point *p = &pts[i];
    bool fits = (double)p->min_bytes <= msg_bytes;
    for (int j = 0; j < n_pts; j++) {
        const px_coll_point *q = &pts[j];
        if (j == i || q->n_ranks != p->n_ranks || q->bw <= 0.0)
            continue;
        bool q_fits = (double)q->min_bytes <= msg_bytes;
        if (fits ? (q_fits && (q->min_bytes > p->min_bytes ||
                               (q->min_bytes == p->min_bytes && j < i)))
                 : (q_fits || q->min_bytes < p->min_bytes ||
                    (q->min_bytes == p->min_bytes && j < i)))
            return false;
    }
    return true;
}

/* The algorithm bandwidth point p (coll_segment_applies at msg_bytes) gives
 * msg_bytes: its own, or, between two per-size points of its group size
 * (min_bytes > 0, calibrate's range above the L2), the rate interpolated
 * in log size between them, so a 12 MB message is not priced at the 8 MB
 * rate when the 16 MB one is 3x lower. */
static double coll_segment_bw(const px_coll_point *pts, int n_pts, const px_coll_point *p,
                              double msg_bytes)
{
    if (p->min_bytes <= 0 || msg_bytes <= (double)p->min_bytes)
        return p->bw;
    const px_coll_point *q = NULL;
    for (int j = 0; j < n_pts; j++) {
        const px_coll_point *c = &pts[j];
        if (c->n_ranks == p->n_ranks && c->bw > 0.0 && c->min_bytes > p->min_bytes &&
            (!q || c->min_bytes < q->min_bytes))
            q = c;
    }
    if (!q)
        return p->bw;
    double w = log(msg_bytes / (double)p->min_bytes) /
               log((double)q->min_bytes / (double)p->min_bytes);
    return exp(log(p->bw) + w * (log(q->bw) - log(p->bw)));
}

/* Latency and bus bandwidth (wire bytes per second) of a measured all-reduce
 * of msg_bytes at group size n: the exact point, else linear interpolation
 * in log n between the two neighbours, else the nearest end. */
static void coll_point(const px_hw *hw, int n, double msg_bytes, double *lat_s, double *busbw)
{
    const px_coll_point *lo = NULL, *hi = NULL;
    for (int i = 0; i < hw->n_coll_points; i++) {
        const px_coll_point *p = &hw->allreduce_points[i];
        if (p->n_ranks < 2 || p->bw <= 0.0 ||
            !coll_segment_applies(hw->allreduce_points, hw->n_coll_points, i, msg_bytes))
            continue;
        if (p->n_ranks <= n && (!lo || p->n_ranks > lo->n_ranks))
            lo = p;
        if (p->n_ranks >= n && (!hi || p->n_ranks < hi->n_ranks))
            hi = p;
    }
    if (!lo)
        lo = hi;
    if (!hi)
        hi = lo;
    const px_coll_point *ar = hw->allreduce_points;
    double bus_lo = coll_segment_bw(ar, hw->n_coll_points, lo, msg_bytes) * 2.0 *
                    (lo->n_ranks - 1) / lo->n_ranks;
    double bus_hi = coll_segment_bw(ar, hw->n_coll_points, hi, msg_bytes) * 2.0 *
                    (hi->n_ranks - 1) / hi->n_ranks;
    double w = 0.0;
    if (hi->n_ranks != lo->n_ranks)
        w = (log((double)n) - log((double)lo->n_ranks)) /
            (log((double)hi->n_ranks) - log((double)lo->n_ranks));
    *lat_s = lo->lat_s + w * (hi->lat_s - lo->lat_s);
    *busbw = bus_lo + w * (bus_hi - bus_lo);
}

bool px_coll_measured(const px_hw *hw)
{
    for (int i = 0; i < hw->n_coll_points; i++)
        if (hw->allreduce_points[i].n_ranks >= 2 && hw->allreduce_points[i].bw > 0.0)
            return true;
    return false;
}

/* The calibrated points of collective c (calibrate --mpi measures each
 * one: on a CPU an all-reduce or reduce-scatter also adds, so its bus
 * bandwidth is not the all-gather's), NULL when the profile has none. */
static const px_coll_point *measured_points(const px_hw *hw, px_coll c, int *n_pts)
{
    switch (c) {
    case PX_COLL_ALLGATHER: *n_pts = hw->n_allgather_points; return hw->allgather_points;
    case PX_COLL_REDUCE_SCATTER:
        *n_pts = hw->n_reduce_scatter_points;
        return hw->reduce_scatter_points;
    case PX_COLL_ALLTOALL: *n_pts = hw->n_alltoall_points; return hw->alltoall_points;
    default: break;
    }
    *n_pts = 0;
    return NULL;
}

/* time = lat + msg / algbw from a collective's own measured points: the
 * exact group size, else latency and bus bandwidth (algorithm bandwidth
 * times the ring factor) interpolated in log n between the neighbours, else
 * the nearest end.  Returns false when no point is usable. */
static bool time_from_points(const px_coll_point *pts, int n_pts, px_coll c, int n,
                             double msg_bytes, double *time_s)
{
    const px_coll_point *lo = NULL, *hi = NULL;
    for (int i = 0; i < n_pts; i++) {
        const px_coll_point *p = &pts[i];
        if (p->n_ranks < 2 || p->bw <= 0.0 || !coll_segment_applies(pts, n_pts, i, msg_bytes))
            continue;
        if (p->n_ranks <= n && (!lo || p->n_ranks > lo->n_ranks))
            lo = p;
        if (p->n_ranks >= n && (!hi || p->n_ranks < hi->n_ranks))
            hi = p;
    }
    if (!lo)
        lo = hi;
    if (!hi)
        hi = lo;
    if (!lo)
        return false;
    double bus_lo = coll_segment_bw(pts, n_pts, lo, msg_bytes) *
                    px_coll_wire_bytes(c, lo->n_ranks, 1.0);
    double bus_hi = coll_segment_bw(pts, n_pts, hi, msg_bytes) *
                    px_coll_wire_bytes(c, hi->n_ranks, 1.0);
    double w = 0.0;
    if (hi->n_ranks != lo->n_ranks)
        w = (log((double)n) - log((double)lo->n_ranks)) /
            (log((double)hi->n_ranks) - log((double)lo->n_ranks));
    double lat = lo->lat_s + w * (hi->lat_s - lo->lat_s);
    double busbw = bus_lo + w * (bus_hi - bus_lo);
    *time_s = lat + px_coll_wire_bytes(c, n, msg_bytes) / busbw;
    return true;
}

/* A share of 0 is a profile built without px_hw_init: the line rate. */
double px_link_bus_bw(const px_hw *hw, bool inter)
{
    double bw = inter ? hw->inter_bw : hw->intra_bw;
    double eff = inter ? hw->inter_bw_eff : hw->intra_bw_eff;
    return eff > 0.0 ? bw * eff : bw;
}

double px_time_coll_s(const px_hw *hw, px_coll c, int n, double msg_bytes, bool crosses_node)
{
    if (c != PX_COLL_P2P && n <= 1)
        return 0.0;
    double wire = px_coll_wire_bytes(c, n, msg_bytes);
    /* A collective calibrated on its own (calibrate --mpi): its points. */
    int n_own = 0;
    const px_coll_point *own = measured_points(hw, c, &n_own);
    double t_own = 0.0;
    if (own && time_from_points(own, n_own, c, n, msg_bytes, &t_own))
        return t_own;
    /* A calibrated profile's p2p is the measured ping-pong (intra_* /
     * inter_*), not a step of the all-reduce. */
    if (c == PX_COLL_P2P && px_coll_measured(hw)) {
        bool inter = crosses_node && !hw->torus;
        double bw = inter ? hw->inter_bw : hw->intra_bw;
        double lat = inter ? hw->inter_lat_s : hw->intra_lat_s;
        if (bw > 0.0)
            return lat + msg_bytes / bw;
    }
    if (px_coll_measured(hw)) {
        /* A measured all-reduce of n ranks costs lat + M/bw; its latency is
         * spread over 2(n−1) ring steps, which we charge per step to the other
         * collectives (p2p: one step of the 2-rank all-reduce). */
        int n_pt = c == PX_COLL_P2P ? 2 : n;
        double lat, busbw;
        coll_point(hw, n_pt, msg_bytes, &lat, &busbw);
        double per_step = lat / (2.0 * (n_pt - 1));
        return per_step * px_coll_steps(c, n) + wire / busbw;
    }
    bool inter = crosses_node && !hw->torus;
    double bw = px_link_bus_bw(hw, inter);
    double lat = inter ? hw->inter_lat_s : hw->intra_lat_s;
    if (bw <= 0.0)
        return 0.0;
    return lat * px_coll_steps(c, n) + wire / bw;
}
