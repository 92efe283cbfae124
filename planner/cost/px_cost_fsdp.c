/* px_cost_fsdp.c — see px_cost_fsdp.h and docs/cost-model.md. */
#include "px_cost_fsdp.h"

#include "px_efficiency.h"

static double dmax(double a, double b) { return a > b ? a : b; }

void px_cost_fsdp_static(double params, double shard, double grad_bytes, double *weights,
                         double *grads, double *optimizer)
{
    double n = params / (shard > 1.0 ? shard : 1.0);
    *weights = 4.0 * n;    /* fp32 master: FSDP's sharded parameter */
    *grads = grad_bytes * n;
    *optimizer = 8.0 * n;  /* Adam m and v, fp32 */
}

double px_cost_fsdp_buffers(const px_fw_runtime *run, double layer_params, double n_layers,
                            double elem_bytes, double grad_bytes)
{
    double ahead = run->fsdp_prefetch_layers > 0 ? run->fsdp_prefetch_layers : 0;
    double gathered = run->fsdp_reshard_after_forward ? 1.0 + ahead : dmax(n_layers, 1.0 + ahead);
    if (gathered > n_layers && n_layers >= 1.0)
        gathered = n_layers;
    /* the unsharded gradient of the layer in backward, in the compute dtype,
     * and its reduce-dtype copy when that is wider */
    double grad = elem_bytes + (grad_bytes > elem_bytes ? grad_bytes : 0.0);
    return layer_params * (gathered * elem_bytes + grad);
}

double px_cost_fsdp_rails(const px_hw *hw, const px_fw_runtime *run, int group, int stride)
{
    int g = hw->gpus_per_node > 0 ? hw->gpus_per_node : 1;
    if (!run->fsdp_flat_collectives || stride < 1 || stride >= g || hw->inter_bw <= 0.0)
        return 1.0;
    double k = (double)(g / stride);
    if (k > group)
        k = group;
    /* each GPU still forwards at NVLink rate */
    double cap = px_link_bus_bw(hw, false) / px_link_bus_bw(hw, true);
    return k < cap ? k : (cap > 1.0 ? cap : 1.0);
}

void px_cost_fsdp_time(const px_hw *hw, const px_fw_runtime *run, int group, int replicas,
                       bool cross_group, bool cross_rep, double rails, double layer_params,
                       double n_layers, double elem_bytes, double grad_bytes, double m,
                       double fwd_s, double bwd_s, double sm_fraction, px_fsdp_time *out)
{
    px_fsdp_shard one = {group, cross_group, rails, layer_params, 0.0, 0.0};
    px_cost_fsdp_time_shards(hw, run, &one, 1, replicas, cross_rep, n_layers, elem_bytes,
                             grad_bytes, m, false, fwd_s, bwd_s, sm_fraction, out);
}

bool px_cost_fsdp_stage_kept(const px_fw_runtime *run, int pp)
{
    return run && pp > 1 && run->fsdp_pp_grad_bytes > 0;
}

/* One layer's gather and reduce-scatter over shard group sh, added to *ag,
 * *rs (seconds) and *bytes (wire bytes of the layer, forward gather once);
 * with the parameters offloaded, the shard's copies to and from the host
 * before and after them. */
static void shard_layer_colls(const px_hw *hw, const px_fsdp_shard *sh, double elem_bytes,
                              double grad_bytes, double *ag, double *rs, double *ag_b,
                              double *rs_b)
{
    if (sh->layer_params <= 0.0)
        return;
    *ag += sh->h2d_s;
    *rs += sh->d2h_s;
    if (sh->group <= 1)
        return;
    double wb = sh->layer_params * elem_bytes, gb = sh->layer_params * grad_bytes;
    /* over k NICs a node: the bandwidth term shrinks k times, the latency
     * steps stay */
    double k = sh->cross && sh->rails > 1.0 ? sh->rails : 1.0;
    *ag += px_time_coll_s(hw, PX_COLL_ALLGATHER, sh->group, wb / k, sh->cross);
    *rs += px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, sh->group, gb / k, sh->cross);
    *ag_b += px_coll_wire_bytes(PX_COLL_ALLGATHER, sh->group, wb);
    *rs_b += px_coll_wire_bytes(PX_COLL_REDUCE_SCATTER, sh->group, gb);
}

void px_cost_fsdp_time_shards(const px_hw *hw, const px_fw_runtime *run,
                              const px_fsdp_shard *shards, int n_shards, int replicas,
                              bool cross_rep, double n_layers, double elem_bytes,
                              double grad_bytes, double m, bool kept, double fwd_s,
                              double bwd_s, double sm_fraction, px_fsdp_time *out)
{
    out->total_s = out->exposed_s = out->bytes = 0.0;
    double params = 0.0;
    for (int i = 0; i < n_shards; i++)
        params += shards[i].layer_params;
    if (n_layers < 1.0 || params <= 0.0)
        return;
    double ag = 0.0, rs = 0.0, ar = 0.0, ag_b = 0.0, rs_b = 0.0;
    for (int i = 0; i < n_shards; i++)
        shard_layer_colls(hw, &shards[i], elem_bytes, grad_bytes, &ag, &rs, &ag_b, &rs_b);
    bool prefetch = run->fsdp_prefetch_layers > 0;
    double fwd_l = fwd_s / n_layers, bwd_l = bwd_s / n_layers;
    /* forward: the first layer's gather waits; each later one hides under
     * the layer before (or waits entirely without prefetch) */
    double fwd_exp = ag + (n_layers - 1.0) * (prefetch ? dmax(0.0, ag - fwd_l) : ag);
    double total, exposed;
    if (kept) {
        /* once a step: the first micro-batch's forward gathers; the
         * reduce-scatters wait for the last backward and run after it */
        out->bytes = n_layers * (ag_b + rs_b);
        total = n_layers * (ag + rs);
        exposed = fwd_exp + n_layers * rs;
    } else {
        /* backward: the last forward layer is still gathered; every other
         * layer is gathered again when resharded; its reduce-scatter runs
         * under the next layer's backward, the last one after the compute */
        double bag = run->fsdp_reshard_after_forward ? ag : 0.0;
        double per = bag + rs;
        double bwd_exp = rs + (n_layers - 1.0) * (prefetch ? dmax(0.0, per - bwd_l) : per);
        out->bytes = m * n_layers * ((run->fsdp_reshard_after_forward ? 2.0 : 1.0) * ag_b + rs_b);
        total = m * (n_layers * (ag + bag + rs) - bag);
        exposed = m * (fwd_exp + bwd_exp);
    }
    if (replicas > 1) {
        /* hybrid sharding: the replicas all-reduce their gradient shards once
         * a step, under the last micro-batch's backward but its last bucket */
        double shard_b = 0.0;
        for (int i = 0; i < n_shards; i++)
            shard_b += n_layers * shards[i].layer_params * grad_bytes /
                       (shards[i].group > 1 ? shards[i].group : 1);
        ar = px_time_coll_s(hw, PX_COLL_ALLREDUCE, replicas, shard_b, cross_rep);
        total += ar;
        exposed += kept ? ar : dmax(ar / n_layers, ar - bwd_s);
        out->bytes += px_coll_wire_bytes(PX_COLL_ALLREDUCE, replicas, shard_b);
    }
    /* the hidden part takes SMs from the compute it hides under */
    exposed += sm_fraction * (total - exposed);
    out->total_s = total;
    out->exposed_s = exposed;
}
