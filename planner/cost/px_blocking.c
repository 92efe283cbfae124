/* px_blocking.c — blocking communication (px_blocking.h). */
#include "px_blocking.h"

#include <math.h>

void px_blocking_sync_s(const px_model *m, const px_hw *hw, const px_parallel *par,
                        double stage_mb_s, px_blocking_sync *out)
{
    *out = (px_blocking_sync){0.0, 0.0, 0.0, 0.0};
    double w = hw->sync_wait_s;
    if (!(w > 0.0))
        return;
    int p = par->pp > 0 ? par->pp : 1;
    double layers = (double)((m->n_layers + p - 1) / p); /* the slowest stage's */
    bool sp = par->sp && par->tp > 1;
    int ddp = par->dp * par->cp;
    if (par->tp > 1) {
        out->tp = w * (layers * (sp ? 10.0 : 4.0) + 2.0);
        out->dp_step += sp ? w * (2.0 * layers + 1.0) : 0.0;
    }
    if (par->cp > 1)
        out->cp = w * layers * 3.0;
    if (ddp > 1) {
        if (par->zero >= 3)
            out->dp_mb = w * layers * 3.0;
        else if (par->zero == 2)
            out->dp_mb = w * layers;
        out->dp_step += w * (par->zero == 1 ? 2.0 : par->zero == 0 ? 1.0 : layers);
    }
    out->dp_step += w; /* the loss */
    double n_mb = (out->tp + out->cp + out->dp_mb) / w; /* synchronisations a micro-batch */
    if (hw->sync_interval_s > 0.0) {
        double f = n_mb > 0.0 ? px_blocking_wait_scale(stage_mb_s / n_mb, hw->sync_interval_s)
                              : 1.0;
        out->tp *= f;
        out->cp *= f;
        out->dp_mb *= f;
        /* the step's first synchronisation after the backward: the compute
         * since the micro-batches' last one (a pipeline's last message: one
         * micro-batch's pass), or since the step began */
        double since = n_mb > 0.0   ? stage_mb_s / n_mb
                       : p > 1      ? stage_mb_s
                                    : (double)(par->n_micro > 0 ? par->n_micro : 1) * stage_mb_s;
        out->dp_step += w * (px_blocking_wait_scale(since, hw->sync_interval_s) - 1.0);
    }
}

double px_blocking_wait_scale(double interval_s, double measured_s)
{
    if (!(interval_s > 0.0) || !(measured_s > 0.0))
        return 1.0;
    double r = interval_s / measured_s;
    return r < 1.0 ? r : sqrt(r);
}

double px_blocking_dp_exposed(const px_parallel *par, double total, double exposed)
{
    return par->dp_overlap ? exposed : total;
}

double px_blocking_zero3_stream_bytes(const px_parallel *par, double params, double e,
                                      double *fwd_bytes)
{
    *fwd_bytes = 0.0;
    double d = (double)par->dp * par->cp;
    if (par->zero < 3 || d <= 1.0 || par->dp_overlap || params <= 0.0)
        return 0.0;
    double piece = params / d;
    double gather = params * e + 2.0 * piece * e; /* zeroed buffer + the piece copied */
    *fwd_bytes = gather;
    return 2.0 * gather + params * 4.0 + 3.0 * piece * 4.0;
}

double px_blocking_weight_stream_bytes(double params, double e, double grad_bytes,
                                       double *fwd_bytes)
{
    if (!(params > 0.0))
        return *fwd_bytes = 0.0;
    *fwd_bytes = params * e;
    return params * (2.0 * e + 2.0 * grad_bytes);
}
