/* px_cost_7_pipe.c — the cost model's pipeline (planner/cost/README.md):
 * the stages' point-to-point traffic, and the bubble of a blocking plan on
 * the executor's timeline (px_pipe_sim.h; docs/cost-model.md, "The
 * executor's conditions"). */
#include "px_cost_7_pipe.h"

#include <string.h>

#include "px_cost_1_layout.h"
#include "px_cost_2_ops.h"
#include "px_cost_6_stage.h"
#include "px_pipe_sim.h"

/* PP: each stage sends and receives one activation (forward) and one
 * gradient (backward) per micro-batch per chunk; the sends sit between
 * compute steps of the 1F1B loop, so they are on the critical path */
void pp_step_comm(const px_cost_ctx *ctx, const px_parallel *par, const crossings *x,
                  double *pp_total_out, double *pp_bytes_out)
{
    const px_model *m = ctx->model;
    const px_hw *hw = ctx->hw;
    int p = par->pp;
    double mm = (double)par->n_micro;
    double v = par->vpp;
    double pp_total = 0.0, pp_bytes = 0.0;
    if (p > 1) {
        bool sp = par->sp && par->tp > 1;
        double msg = px_cost_pp_msg_bytes((double)seq_of(ctx, par) / par->cp,
                                          (double)par->micro_batch, (double)m->hidden,
                                          par->tp, sp, elem_of(ctx));
        double one = px_time_coll_s(hw, PX_COLL_P2P, 2, msg, x->pp);
        if (!sp && par->tp > 1) {
            /* Megatron's scatter/gather (Narayanan et al. 2021, sec. 4.1): the t
             * ranks of a TP group hold the same activation; each sends 1/t of
             * it over its own link and the receivers all-gather it in-node */
            msg /= par->tp;
            one = px_time_coll_s(hw, PX_COLL_P2P, 2, msg, x->pp) +
                  px_time_coll_s(hw, PX_COLL_ALLGATHER, par->tp, msg * par->tp, x->tp);
        }
        pp_total = 2.0 * v * mm * one;
        pp_bytes = 2.0 * v * mm * msg;
    }
    *pp_total_out = pp_total;
    *pp_bytes_out = pp_bytes;
}

double pipe_timeline_bubble(px_cost_ctx *ctx, const px_parallel *par, const stage_layers *sl,
                            const layer_time lt[PX_LAYER_KINDS], double first_s,
                            double last_s, double wait_mb_s, double ideal, double pp_total,
                            double bubble)
{
    int p = par->pp, n_mc = par->pp * par->vpp;
    if (p < 2 || n_mc > PX_MAX_CHUNKS)
        return bubble;
    int split[PX_MAX_CHUNKS];
    if (par->n_chunks == n_mc)
        memcpy(split, par->layers_per_chunk, (size_t)n_mc * sizeof *split);
    else
        px_cost_default_split(ctx->model->n_layers, n_mc, split);
    double f[PX_MAX_CHUNKS], b[PX_MAX_CHUNKS], w[PX_MAX_CHUNKS];
    for (int st = 0; st < p; st++) {
        stage_time q;
        time_of_stage(&sl[st], lt, 0.0, &q);
        double layers = 0.0;
        for (int mc = st; mc < n_mc; mc += p)
            layers += split[mc];
        /* communication between the kernels: a third forward, two thirds
         * backward, as the micro-batch time books it */
        double comm = q.tp + q.ep + q.cp + (layers > 0.0 ? wait_mb_s : 0.0);
        double fl = q.fwd + comm / 3.0, bl = q.bwd + q.rcs + 2.0 * comm / 3.0;
        for (int mc = st; mc < n_mc; mc += p) {
            double share = layers > 0.0 ? split[mc] / layers : 0.0;
            double ext = (mc == 0 ? first_s : 0.0) + (mc == n_mc - 1 ? last_s : 0.0);
            f[mc] = share * fl + ext / 3.0;
            b[mc] = share * bl + 2.0 * ext / 3.0;
            w[mc] = share * q.gemm / 3.0; /* the weight-gradient GEMMs */
        }
    }
    double msg_s = pp_total / (2.0 * par->vpp * (double)par->n_micro), step = 0.0;
    if (px_pipe_sim_step(par->schedule, p, par->vpp, (int)par->n_micro, f, b, w, msg_s, &step,
                         NULL) != PX_OK)
        return bubble;
    return dmax(0.0, step - ideal - pp_total);
}
