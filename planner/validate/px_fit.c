/* px_fit.c — profiles fitted to measured runs (px_fit.h). */
#include "px_fit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each factor: its field, which profile holds it, and its bounds —
 * multiplicative ones as multiples of the base value, overheads as a
 * fraction of the shortest measured step (or micro-batch) of the runs. */
typedef struct {
    const char *field;
    bool in_hw;
    bool multiplicative;
    double lo, hi; /* multiples of the base; for overheads: 0 .. hi x the step */
} factor_def;

static const factor_def defs[PX_FIT_FACTOR_COUNT] = {
    [PX_FIT_GEMM] = {"gemm_eff_scale", true, true, 0.5, 1.25},
    [PX_FIT_STEP_OVERHEAD] = {"step_overhead_s", false, false, 0.0, 0.5},
    [PX_FIT_INTER_BW] = {"inter_bw", true, true, 0.25, 2.0},
    [PX_FIT_MICROBATCH_OVERHEAD] = {"microbatch_overhead_s", false, false, 0.0, 0.25},
    [PX_FIT_ATTN] = {"attn_eff_scale", true, true, 0.5, 1.5},
    [PX_FIT_INTRA_BW] = {"intra_bw", true, true, 0.25, 1.5},
};

/* A factor whose probe (half the rate, or a tenth of the shortest step
 * added) moves no run's prediction by this much is not exercised. */
#define EXERCISED_MIN_LOG 1e-3
#define MAX_EVALS 500 /* evaluations one search may spend */
#define MAX_RESTARTS 1

const char *px_fit_factor_field(px_fit_factor f)
{
    return f >= 0 && f < PX_FIT_FACTOR_COUNT ? defs[f].field : "?";
}

typedef struct {
    const px_fit_problem *p;
    const int *runs; /* the runs fitted on */
    int n;
    px_hw hw;        /* work copies */
    px_framework fw;
    int n_factors;
    const px_fit_factor *factor;
    const double *lo, *hi;
    int evals;
    double tol_u;    /* the search's stopping extent in the unit cube */
    double step_u;   /* its first simplex's edge */
    const double *start; /* field values to start from (by factor), NULL: the base */
    px_status st;
    px_error *err;
} work;

static void set_field(work *w, px_fit_factor f, double v)
{
    if (defs[f].in_hw)
        px_hw_fit_set(&w->hw, defs[f].field, v);
    else
        px_framework_fit_set(&w->fw, defs[f].field, v);
}

static double base_value(const px_fit_problem *p, px_fit_factor f)
{
    return defs[f].in_hw ? px_hw_fit_value(p->hw, defs[f].field)
                         : px_framework_fit_value(p->fw, defs[f].field);
}

/* Unit coordinate -> field value: log-uniform between multiplicative
 * bounds, linear between additive ones. */
static double from_unit(const factor_def *d, double lo, double hi, double u)
{
    u = u < 0 ? 0 : u > 1 ? 1 : u;
    return d->multiplicative ? lo * pow(hi / lo, u) : lo + (hi - lo) * u;
}

static double to_unit(const factor_def *d, double lo, double hi, double v)
{
    if (hi <= lo)
        return 0.0;
    double u = d->multiplicative ? log(v / lo) / log(hi / lo) : (v - lo) / (hi - lo);
    return u < 0 ? 0 : u > 1 ? 1 : u;
}

/* Predicts the runs under the work profiles; the sum of squared log
 * errors, or HUGE_VAL after a failure (w->st set). */
static double sse_now(work *w, double *rates, px_fit_pred *preds)
{
    double s = 0.0;
    w->evals++;
    for (int i = 0; i < w->n; i++) {
        px_fit_pred pr;
        int r = w->runs[i];
        px_status st = w->p->predict(w->p->ctx, r, &w->hw, &w->fw, &pr, w->err);
        if (st == PX_OK && !(pr.rate > 0 && isfinite(pr.rate)))
            st = px_error_set(w->err, PX_ERR_INTERNAL, NULL, 0, 0,
                              "run %s: the prediction is not a positive rate (%g)",
                              w->p->ids[r], pr.rate);
        if (st != PX_OK) {
            w->st = st;
            return HUGE_VAL;
        }
        if (rates)
            rates[i] = pr.rate;
        if (preds)
            preds[i] = pr;
        double e = log(pr.rate / w->p->measured[r]);
        s += e * e;
    }
    return s;
}

static double sse_at(work *w, const double *u)
{
    for (int j = 0; j < w->n_factors; j++) {
        px_fit_factor f = w->factor[j];
        set_field(w, f, from_unit(&defs[f], w->lo[f], w->hi[f], u[j]));
    }
    return sse_now(w, NULL, NULL);
}

static void clamp_unit(double *u, int k)
{
    for (int j = 0; j < k; j++)
        u[j] = u[j] < 0 ? 0 : u[j] > 1 ? 1 : u[j];
}

/* Bounded Nelder-Mead in the unit cube (points clamped onto it): standard
 * coefficients, deterministic, restarted from its best point until a
 * restart no longer improves. */
static double nelder_mead(work *w, double *u0)
{
    enum { K = PX_FIT_FACTOR_COUNT };
    int k = w->n_factors;
    double x[K + 1][K], fx[K + 1], best = sse_at(w, u0);
    int start = w->evals; /* the budget is this search's own */
    for (int restart = 0; restart <= MAX_RESTARTS && w->st == PX_OK; restart++) {
        for (int i = 0; i <= k; i++) {
            memcpy(x[i], u0, sizeof(double) * (size_t)k);
            if (i > 0)
                x[i][i - 1] += u0[i - 1] < 0.5 ? w->step_u : -w->step_u;
            fx[i] = i ? sse_at(w, x[i]) : best;
        }
        while (w->evals - start < MAX_EVALS && w->st == PX_OK) {
            /* order: x[0] best, x[k] worst */
            for (int a = 1; a <= k; a++)
                for (int b = a; b > 0 && fx[b] < fx[b - 1]; b--) {
                    double t = fx[b];
                    fx[b] = fx[b - 1];
                    fx[b - 1] = t;
                    for (int j = 0; j < k; j++) {
                        t = x[b][j];
                        x[b][j] = x[b - 1][j];
                        x[b - 1][j] = t;
                    }
                }
            double extent = 0.0;
            for (int i = 1; i <= k; i++)
                for (int j = 0; j < k; j++)
                    extent = fmax(extent, fabs(x[i][j] - x[0][j]));
            if (extent < w->tol_u)
                break;
            double c[K] = {0}, xr[K], xe[K];
            for (int i = 0; i < k; i++)
                for (int j = 0; j < k; j++)
                    c[j] += x[i][j] / k;
            for (int j = 0; j < k; j++)
                xr[j] = c[j] + (c[j] - x[k][j]);
            clamp_unit(xr, k);
            double fr = sse_at(w, xr);
            if (fr < fx[0]) {
                for (int j = 0; j < k; j++)
                    xe[j] = c[j] + 2.0 * (c[j] - x[k][j]);
                clamp_unit(xe, k);
                double fe = sse_at(w, xe);
                bool e = fe < fr;
                memcpy(x[k], e ? xe : xr, sizeof(double) * (size_t)k);
                fx[k] = e ? fe : fr;
            } else if (fr < fx[k - 1]) {
                memcpy(x[k], xr, sizeof(double) * (size_t)k);
                fx[k] = fr;
            } else {
                bool outside = fr < fx[k];
                for (int j = 0; j < k; j++)
                    xe[j] = outside ? c[j] + 0.5 * (xr[j] - c[j]) : c[j] + 0.5 * (x[k][j] - c[j]);
                double fc = sse_at(w, xe);
                if (fc < (outside ? fr : fx[k])) {
                    memcpy(x[k], xe, sizeof(double) * (size_t)k);
                    fx[k] = fc;
                } else { /* shrink towards the best */
                    for (int i = 1; i <= k; i++) {
                        for (int j = 0; j < k; j++)
                            x[i][j] = x[0][j] + 0.5 * (x[i][j] - x[0][j]);
                        fx[i] = sse_at(w, x[i]);
                    }
                }
            }
        }
        int ib = 0;
        for (int i = 1; i <= k; i++)
            if (fx[i] < fx[ib])
                ib = i;
        bool improved = fx[ib] < best * (1.0 - 1e-9);
        if (fx[ib] <= best) {
            best = fx[ib];
            memcpy(u0, x[ib], sizeof(double) * (size_t)k);
        }
        if (!improved)
            break;
    }
    return best;
}

typedef struct {
    int n_factors;
    px_fit_factor factor[PX_FIT_FACTOR_COUNT];
    double base[PX_FIT_FACTOR_COUNT], fitted[PX_FIT_FACTOR_COUNT];
    double lo[PX_FIT_FACTOR_COUNT], hi[PX_FIT_FACTOR_COUNT];
    bool skipped[PX_FIT_FACTOR_COUNT];
    double sse_base, sse_fit;
    bool kept_base;
} fit_out;

/* Bounds of every factor from the base predictions of the runs. */
static void factor_bounds(work *w, const px_fit_pred *base, fit_out *o)
{
    double min_step = HUGE_VAL, min_mb = HUGE_VAL;
    for (int i = 0; i < w->n; i++) {
        /* the measured step: the predicted one scaled by the rate's error */
        double step = base[i].step_s * base[i].rate / w->p->measured[w->runs[i]];
        min_step = fmin(min_step, step);
        min_mb = fmin(min_mb, step / (base[i].n_micro > 0 ? base[i].n_micro : 1));
    }
    for (int f = 0; f < PX_FIT_FACTOR_COUNT; f++) {
        const factor_def *d = &defs[f];
        double b = base_value(w->p, (px_fit_factor)f);
        o->base[f] = b;
        if (d->multiplicative) {
            o->lo[f] = b * d->lo;
            o->hi[f] = b * d->hi;
        } else {
            o->lo[f] = 0.0;
            o->hi[f] = fmax(b, d->hi * (f == PX_FIT_STEP_OVERHEAD ? min_step : min_mb));
        }
    }
}

/* Whether moving factor f (to half its base rate, or adding a tenth of the
 * shortest step) changes any run's prediction. */
static bool exercised(work *w, px_fit_factor f, const fit_out *o, const double *base_rates)
{
    const factor_def *d = &defs[f];
    double probe = d->multiplicative ? 0.5 * o->base[f] : o->base[f] + 0.2 * o->hi[f];
    double rates[PX_FIT_MAX_RUNS];
    set_field(w, f, probe);
    sse_now(w, rates, NULL);
    set_field(w, f, o->base[f]);
    if (w->st != PX_OK)
        return false;
    for (int i = 0; i < w->n; i++)
        if (fabs(log(rates[i] / base_rates[i])) > EXERCISED_MIN_LOG)
            return true;
    return false;
}

/* Fits the runs runs[0..n) with at most max_factors factors. */
static px_status fit_runs(const px_fit_problem *p, const int *runs, int n, int max_factors,
                          double tol_u, work *w, fit_out *o, px_error *err)
{
    memset(o, 0, sizeof *o);
    w->tol_u = tol_u;
    w->p = p;
    w->runs = runs;
    w->n = n;
    w->hw = *p->hw;
    w->fw = *p->fw;
    w->n_factors = 0;
    w->st = PX_OK;
    w->err = err;
    px_fit_pred base[PX_FIT_MAX_RUNS];
    double base_rates[PX_FIT_MAX_RUNS];
    o->sse_base = sse_now(w, base_rates, base);
    if (w->st != PX_OK)
        return w->st;
    factor_bounds(w, base, o);
    for (int f = 0; f < PX_FIT_FACTOR_COUNT && o->n_factors < max_factors; f++) {
        o->skipped[f] = !exercised(w, (px_fit_factor)f, o, base_rates);
        if (w->st != PX_OK)
            return w->st;
        if (!o->skipped[f])
            o->factor[o->n_factors++] = (px_fit_factor)f;
    }
    for (int f = 0; f < PX_FIT_FACTOR_COUNT; f++)
        o->fitted[f] = o->base[f];
    o->sse_fit = o->sse_base;
    if (o->n_factors == 0)
        return PX_OK;
    double u[PX_FIT_FACTOR_COUNT];
    for (int j = 0; j < o->n_factors; j++) {
        px_fit_factor f = o->factor[j];
        u[j] = to_unit(&defs[f], o->lo[f], o->hi[f], w->start ? w->start[f] : o->base[f]);
    }
    w->n_factors = o->n_factors;
    w->factor = o->factor;
    w->lo = o->lo;
    w->hi = o->hi;
    double best = nelder_mead(w, u);
    if (w->st != PX_OK)
        return w->st;
    if (!(best < o->sse_base)) { /* never worse than the base on its own runs */
        o->kept_base = true;
        return PX_OK;
    }
    o->sse_fit = best;
    for (int j = 0; j < o->n_factors; j++) {
        px_fit_factor f = o->factor[j];
        o->fitted[f] = from_unit(&defs[f], o->lo[f], o->hi[f], u[j]);
    }
    return PX_OK;
}

/* Sets the fitted values of o on the work profiles. */
static void apply(work *w, const fit_out *o)
{
    w->hw = *w->p->hw;
    w->fw = *w->p->fw;
    for (int j = 0; j < o->n_factors; j++)
        set_field(w, o->factor[j], o->fitted[o->factor[j]]);
}

static void provenance(const px_fit_problem *p, const fit_out *o, bool hw_side, px_fitted *pv)
{
    memset(pv, 0, sizeof *pv);
    for (int j = 0; j < o->n_factors; j++) {
        px_fit_factor f = o->factor[j];
        if (defs[f].in_hw != hw_side)
            continue;
        px_fitted_factor *x = &pv->factors[pv->n_factors++];
        snprintf(x->field, sizeof x->field, "%s", defs[f].field);
        x->base = o->base[f];
        x->fitted = o->fitted[f];
    }
    if (pv->n_factors == 0)
        return;
    snprintf(pv->base, sizeof pv->base, "%s",
             (hw_side ? p->hw_base : p->fw_base) ? (hw_side ? p->hw_base : p->fw_base)
                                                 : (hw_side ? p->hw->name : p->fw->name));
    for (int i = 0; i < p->n_runs && i < PX_FITTED_MAX_RUNS; i++)
        snprintf(pv->runs[pv->n_runs++], PX_FITTED_ID_LEN, "%s", p->ids[i]);
}

/* Each run predicted from a fit of at most max_factors factors on the
 * others, into loo[]. */
static px_status leave_one_out(const px_fit_problem *p, int max_factors, const fit_out *full,
                               work *w, double *loo, px_error *err)
{
    for (int i = 0; i < p->n_runs; i++) {
        int runs[PX_FIT_MAX_RUNS], n = 0;
        for (int r = 0; r < p->n_runs; r++)
            if (r != i)
                runs[n++] = r;
        fit_out o;
        w->start = full->fitted; /* the others' fit is near the whole set's */
        w->step_u = 0.05;
        px_status st = fit_runs(p, runs, n, max_factors < n ? max_factors : n, PX_FIT_TOL_U_LOO,
                                w, &o, err);
        w->start = NULL;
        w->step_u = 0.2;
        if (st != PX_OK)
            return st;
        apply(w, &o);
        px_fit_pred pr;
        st = p->predict(p->ctx, i, &w->hw, &w->fw, &pr, err);
        if (st != PX_OK)
            return st;
        loo[i] = pr.rate;
    }
    return PX_OK;
}

static double loo_sse(const px_fit_problem *p, const double *loo)
{
    double s = 0.0;
    for (int i = 0; i < p->n_runs; i++) {
        double e = log(loo[i] / p->measured[i]);
        s += e * e;
    }
    return s;
}

/* The fit of the whole set with k factors; with 3 or more runs, k is the
 * count (1 .. max_f, in the factors' order) whose leave-one-out error is
 * least, a further factor kept only when it lowers the RMS error by
 * PX_FIT_LOO_GAIN: more factors than the runs support predict the runs
 * left out worse, however well they fit the rest, and the leave-one-out
 * error of three runs is itself too noisy to trust a smaller gain. */
static px_status choose_fit(const px_fit_problem *p, int max_f, bool loo, work *w,
                            px_fit_result *out, fit_out *best, px_error *err)
{
    int runs[PX_FIT_MAX_RUNS];
    for (int i = 0; i < p->n_runs; i++)
        runs[i] = i;
    bool select = p->n_runs >= 3 && p->max_factors == 0;
    double best_loo = HUGE_VAL;
    int first = select ? 1 : max_f;
    if (select && max_f > p->n_runs - 1)
        max_f = p->n_runs - 1; /* a left-out fit has n - 1 runs: more cannot differ */
    for (int k = first; k <= max_f; k++) {
        fit_out o;
        px_status st = fit_runs(p, runs, p->n_runs, k, PX_FIT_TOL_U, w, &o, err);
        if (st != PX_OK)
            return st;
        if (k > first && o.n_factors < k)
            break; /* no further factor the runs exercise */
        double l[PX_FIT_MAX_RUNS] = {0};
        if ((select || loo) && p->n_runs >= 2 &&
            (st = leave_one_out(p, k, &o, w, l, err)) != PX_OK)
            return st;
        double e = p->n_runs >= 2 ? loo_sse(p, l) : 0.0;
        out->loo_by_count[k] = p->n_runs >= 2 ? sqrt(e / p->n_runs) : 0.0;
        out->n_counts_tried = k;
        if (e < (1.0 - PX_FIT_LOO_GAIN) * (1.0 - PX_FIT_LOO_GAIN) * best_loo || k == first) {
            best_loo = e;
            *best = o;
            memcpy(out->loo_pred, l, sizeof l);
        }
    }
    return PX_OK;
}

px_status px_fit_run(const px_fit_problem *p, bool loo, px_fit_result *out, px_error *err)
{
    memset(out, 0, sizeof *out);
    if (p->n_runs < 1 || p->n_runs > PX_FIT_MAX_RUNS)
        return PX_FAIL(err, PX_ERR_INVALID, "calibrate: %d runs to fit (allowed: 1..%d)",
                       p->n_runs, PX_FIT_MAX_RUNS);
    for (int i = 0; i < p->n_runs; i++)
        if (!(p->measured[i] > 0 && isfinite(p->measured[i])))
            return PX_FAIL(err, PX_ERR_INVALID, "run %s: measured value %g must be > 0",
                           p->ids[i], p->measured[i]);
    work *w = calloc(1, sizeof *w);
    if (!w)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    w->step_u = 0.2;
    int max_f = p->max_factors > 0 && p->max_factors < p->n_runs ? p->max_factors : p->n_runs;
    if (max_f > PX_FIT_FACTOR_COUNT)
        max_f = PX_FIT_FACTOR_COUNT;
    fit_out o;
    px_status st = choose_fit(p, max_f, loo, w, out, &o, err);
    int all[PX_FIT_MAX_RUNS];
    for (int i = 0; i < p->n_runs; i++)
        all[i] = i;
    w->runs = all; /* the last fit may have left one out */
    w->n = p->n_runs;
    if (st == PX_OK) {
        out->evaluations = w->evals;
        out->n_factors = o.n_factors;
        memcpy(out->factor, o.factor, sizeof o.factor);
        memcpy(out->base, o.base, sizeof o.base);
        memcpy(out->fitted, o.fitted, sizeof o.fitted);
        memcpy(out->lo, o.lo, sizeof o.lo);
        memcpy(out->hi, o.hi, sizeof o.hi);
        memcpy(out->skipped, o.skipped, sizeof o.skipped);
        out->sse_base = o.sse_base;
        out->kept_base = o.kept_base;
        w->n_factors = 0;
        w->hw = *p->hw;
        w->fw = *p->fw;
        sse_now(w, out->pred_base, NULL);
        apply(w, &o);
        out->sse_fit = sse_now(w, out->pred_fit, NULL);
        st = w->st;
    }
    if (st == PX_OK && out->sse_fit > out->sse_base) /* the guarantee, checked */
        st = PX_FAIL(err, PX_ERR_INTERNAL, "calibrate: the fit (%g) is worse than the base "
                     "(%g) on its own runs", out->sse_fit, out->sse_base);
    if (st == PX_OK) {
        out->hw = w->hw;
        out->fw = w->fw;
        provenance(p, &o, true, &out->hw.fitted);
        provenance(p, &o, false, &out->fw.fitted);
    }
    free(w);
    return st;
}
