/* px_pipe_engine.c — see px_pipe_engine.h. */
#include "px_pipe_engine.h"

#include "px_efficiency.h"
#include "px_framework.h"
#include "px_plan_check.h" /* px_plan_seq_len */

double px_pipe_serial_transfers(int pp, int64_t n_micro)
{
    if (pp <= 1 || n_micro < 1)
        return 0.0;
    return 2.0 * (pp - 1) + 4.0 * (double)(n_micro - 1);
}

double px_pipe_serial_gathers(int pp, int64_t n_micro)
{
    if (pp <= 1 || n_micro < 1)
        return 0.0;
    return 3.0 * ((double)n_micro + pp - 1);
}

double px_pipe_serial_s(int pp, int64_t n_micro, double p2p_s, double gather_s)
{
    return px_pipe_serial_transfers(pp, n_micro) * p2p_s +
           px_pipe_serial_gathers(pp, n_micro) * gather_s;
}

double px_pipe_tied_grad_elems(const px_model *m, const px_parallel *par)
{
    if (!m->tied_embeddings || par->pp <= 1 || par->tp < 1)
        return 0.0;
    return (double)m->vocab * (double)m->hidden / par->tp;
}

double px_pipe_tied_grad_s(const px_hw *hw, const px_model *m, const px_parallel *par,
                           double grad_bytes, bool crosses_node)
{
    double elems = px_pipe_tied_grad_elems(m, par);
    if (elems <= 0.0)
        return 0.0;
    return px_time_coll_s(hw, PX_COLL_ALLREDUCE, 2, elems * grad_bytes, crosses_node);
}

void px_pipe_engine_comm(const px_cost_ctx *ctx, const px_parallel *par, bool pp_crosses,
                         bool tp_crosses, double *pp_total, double *pp_bytes)
{
    const px_fw_runtime *run = ctx->run;
    if (!run || par->pp <= 1)
        return;
    const px_hw *hw = ctx->hw;
    int elem = ctx->hw->dtype_bytes > 0 ? ctx->hw->dtype_bytes : 2;
    if (run->pp_blocking_p2p) {
        /* the engine partitions over TP whenever there is TP (no SP) */
        bool part = par->tp > 1 && !(par->sp && par->tp > 1);
        double msg = px_cost_pp_msg_bytes((double)px_plan_seq_len(ctx->model, par) / par->cp,
                                          (double)par->micro_batch, (double)ctx->model->hidden,
                                          par->tp, par->sp && par->tp > 1, elem);
        double one = part ? msg / par->tp : msg;
        double p2p = px_time_coll_s(hw, PX_COLL_P2P, 2, one, pp_crosses);
        double gather = part ? px_time_coll_s(hw, PX_COLL_ALLGATHER, par->tp, msg, tp_crosses)
                             : 0.0;
        *pp_total = (double)par->vpp * px_pipe_serial_s(par->pp, par->n_micro, p2p, gather);
    }
    if (run->tied_grad_allreduce) {
        px_bytes_per_param bpp = px_cost_bytes_per_param(elem, par->grad_fp32);
        double elems = px_pipe_tied_grad_elems(ctx->model, par);
        *pp_total += px_pipe_tied_grad_s(hw, ctx->model, par, bpp.grads, pp_crosses);
        *pp_bytes += px_coll_wire_bytes(PX_COLL_ALLREDUCE, 2, elems * bpp.grads);
    }
}
