/* px_cost_moe.c — routed-expert extras (px_cost_moe.h). */
#include "px_cost_moe.h"

#include <math.h>

#include "px_efficiency.h"

double px_moe_imbalance(int ep, double copies_per_rank)
{
    if (ep <= 1 || copies_per_rank <= 0.0)
        return 1.0;
    double n = (double)ep * copies_per_rank;
    return 1.0 + sqrt(2.0 * log((double)ep)) * sqrt(((double)ep - 1.0) / n);
}

double px_moe_fp8_pad_bytes(double e, double copies, double h)
{
    return copies > 0.0 ? 4.0 * e * copies * h : 0.0;
}

double px_moe_permute_bytes(double e, double copies, double etp, double n_local, bool fused,
                            double h)
{
    if (copies <= 0.0)
        return 0.0;
    double own = copies / (etp > 1.0 ? etp : 1.0);
    return e * h * ((fused ? 4.0 : 8.0) * own + (n_local > 1.0 ? 4.0 * copies : 0.0));
}

/* One all-to-all share `a` under compute `c`: what shows, the hidden part
 * at the SMs' share. */
static double paired_exposed_s(double a, double c, double sm_frac)
{
    double hidden = a < c ? a : (c > 0.0 ? c : 0.0);
    return (a - hidden) + sm_frac * hidden;
}

double px_moe_a2a_exposed_s(double a2a_s, double pre_fwd_s, double pre_bwd_s,
                            double experts_fwd_s, double experts_bwd_s, double sm_frac,
                            long long n_micro)
{
    if (a2a_s <= 0.0)
        return 0.0;
    if (n_micro < 2)
        return a2a_s;
    double one = a2a_s / 4.0; /* dispatch and combine, forward and backward */
    return paired_exposed_s(one, pre_fwd_s, sm_frac) +
           paired_exposed_s(2.0 * one, experts_bwd_s + experts_fwd_s, sm_frac) +
           paired_exposed_s(one, pre_bwd_s, sm_frac);
}

double px_moe_node_share(int n_experts, int top_k, int ep, int in_node)
{
    if (in_node < 1 || ep <= in_node || top_k < 2 || n_experts < top_k)
        return 1.0;
    double nodes = (double)ep / (double)in_node;
    double per_node = (double)n_experts / nodes;
    double none = 1.0; /* C(E − E/N, k) / C(E, k), one factor a pick */
    for (int i = 0; i < top_k; i++) {
        double left = (double)n_experts - per_node - (double)i;
        none *= left > 0.0 ? left / ((double)n_experts - (double)i) : 0.0;
    }
    double distinct = (nodes - 1.0) * (1.0 - none);
    double copies = (double)top_k * (nodes - 1.0) / nodes;
    return copies > 0.0 ? distinct / copies : 1.0;
}

/* A node-crossing all-to-all of ep ranks whose NIC carries out_msg bytes a
 * rank and NVLink in_msg at the same time: the slower of the two. */
static double nic_and_nvlink_s(const px_hw *hw, int ep, double out_msg, double in_msg)
{
    double t_out = px_time_coll_s(hw, PX_COLL_ALLTOALL, ep, out_msg, true);
    double t_in = in_msg > 0.0 ? px_time_coll_s(hw, PX_COLL_ALLTOALL, ep, in_msg, false) : 0.0;
    return t_out > t_in ? t_out : t_in;
}

double px_moe_a2a_dedup_time_s(const px_hw *hw, int ep, double msg, int in_node, bool crosses,
                               double node_share)
{
    if (ep <= 1 || msg <= 0.0)
        return 0.0;
    if (!crosses || in_node >= ep)
        return px_moe_a2a_time_s(hw, ep, msg, in_node, crosses);
    if (in_node < 1)
        in_node = 1;
    return nic_and_nvlink_s(hw, ep, msg * node_share * (ep - in_node) / ((double)ep - 1.0),
                            in_node > 1 ? msg : 0.0);
}

double px_moe_a2a_time_s(const px_hw *hw, int ep, double msg, int in_node, bool crosses)
{
    if (ep <= 1 || msg <= 0.0)
        return 0.0;
    if (!crosses || in_node >= ep)
        return px_time_coll_s(hw, PX_COLL_ALLTOALL, ep, msg, crosses && in_node < ep);
    if (in_node < 1)
        in_node = 1;
    double n1 = (double)ep - 1.0;
    return nic_and_nvlink_s(hw, ep, msg * (ep - in_node) / n1, msg * (in_node - 1) / n1);
}
