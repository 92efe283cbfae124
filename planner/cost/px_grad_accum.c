/* px_grad_accum.c — see px_grad_accum.h. */
#include "px_grad_accum.h"

#include "px_efficiency.h"

double px_grad_accum_bytes(double params, double elem_bytes, double grad_bytes)
{
    return params * (elem_bytes + 2.0 * grad_bytes);
}

double px_grad_accum_s(const px_hw *hw, const px_parallel *par, bool separate, double params,
                       double elem_bytes, double grad_bytes)
{
    if (!separate || par->zero >= 2 || params <= 0.0)
        return 0.0;
    return px_time_mem_s(hw, px_grad_accum_bytes(params, elem_bytes, grad_bytes));
}

double px_grad_accum_cast_bytes(double params, double grad_bytes)
{
    return params * 2.0 * grad_bytes;
}

double px_grad_accum_cast_s(const px_hw *hw, const px_parallel *par, bool separate,
                            double params, double grad_bytes)
{
    if (!separate || par->zero >= 2 || params <= 0.0)
        return 0.0;
    return px_time_mem_s(hw, px_grad_accum_cast_bytes(params, grad_bytes));
}

double px_grad_accum_fused_bytes(double params, double grad_bytes)
{
    return params * grad_bytes;
}

double px_grad_accum_fused_s(const px_hw *hw, const px_parallel *par, bool separate,
                             double params, double grad_bytes)
{
    if (separate || par->zero >= 2 || params <= 0.0)
        return 0.0;
    return px_time_mem_s(hw, px_grad_accum_fused_bytes(params, grad_bytes));
}

double px_grad_accum_embed_bytes(double params, double elem_bytes, double grad_bytes)
{
    return params * (2.0 * elem_bytes + 2.0 * grad_bytes);
}

double px_grad_accum_embed_s(const px_hw *hw, const px_parallel *par, double params,
                             double elem_bytes, double grad_bytes)
{
    if (par->zero >= 2 || params <= 0.0)
        return 0.0;
    return px_time_mem_s(hw, px_grad_accum_embed_bytes(params, elem_bytes, grad_bytes));
}
