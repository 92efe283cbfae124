/* px_blocking.c — blocking communication (px_blocking.h). */
#include "px_blocking.h"

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
    if (n_mb > 0.0 && hw->sync_interval_s > 0.0) {
        double f = stage_mb_s / n_mb / hw->sync_interval_s;
        f = f < 1.0 ? f : 1.0;
        out->tp *= f;
        out->cp *= f;
        out->dp_mb *= f;
    }
}

double px_blocking_dp_exposed(const px_parallel *par, double total, double exposed)
{
    return par->dp_overlap ? exposed : total;
}
