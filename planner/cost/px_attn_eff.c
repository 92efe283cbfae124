/* px_attn_eff.c — attention kernel efficiency (px_attn_eff.h). */
#include "px_attn_eff.h"

#include "px_efficiency.h"

double px_attn_rate_rel(const px_hw *hw, int flash_version, double head_dim, double s_q)
{
    if (hw->attn_eff > 0.0)
        return 1.0;
    double rel = 1.0;
    /* each generation the kernel is older than the GPU's own: FA2 on Hopper,
     * and twice on Blackwell.  FlashAttention 1 counts from FA2's rate (its
     * factor 2 is px_cost_5_layer.c's), so it is half of FA2 on any GPU. */
    int g0 = flash_version == 1 ? 2 : flash_version;
    for (int g = g0; g >= 2 && g < hw->attn_native_version; g++)
        rel *= PX_ATTN_OLD_GEN_REL;
    if (hw->exp_rate > 0.0) {
        double d = head_dim > 0.0 ? head_dim : PX_ATTN_HEAD_REF;
        double rate = 1e12 / px_time_attn_s(hw, 1e12) * rel; /* the kernel's FLOP/s */
        double c = rate / (4.0 * hw->exp_rate); /* head width the exp costs here */
        /* ... and on the GPU the d = 128 rate stands for */
        double c_ref = rate / hw->peak_flops * PX_ATTN_REF_FLOP_PER_EXP / 4.0;
        rel *= (d / (d + c)) / (PX_ATTN_HEAD_REF / (PX_ATTN_HEAD_REF + c_ref));
    }
    if (s_q > 0.0)
        rel *= s_q / (s_q + PX_ATTN_SEQ_HALF);
    /* never faster than the GEMMs the kernel is built from */
    double cap = 1.0 / PX_EFF_FLASH_REL;
    return rel < cap ? rel : cap;
}

/* The kernel k names: the framework's own name for it where k leaves the
 * choice to the framework and its profile names one (the Triton port). */
static px_attn_kernel named_kernel(const px_fw_runtime *run, px_attn_kernel k)
{
    return k == PX_AK_FRAMEWORK && run ? run->attn_kernel : k;
}

int px_attn_kernel_version(const px_hw *hw, const px_fw_runtime *run, px_attn_kernel k,
                           double head_dim_v)
{
    static const int generation[PX_AK_COUNT] = {
        [PX_AK_NATIVE] = 0, [PX_AK_FLASH3] = 3, [PX_AK_FLASH2] = 2,
        [PX_AK_FLASH1] = 1, [PX_AK_TRITON] = 2,
    };
    k = named_kernel(run, k);
    if (k > PX_AK_FRAMEWORK && k < PX_AK_COUNT)
        return generation[k];
    int v = run ? run->flash_attention_version : 0;
    if (run && run->attn_native_max_head_dim > 0 && hw->attn_native_version >= 4 && v >= 4 &&
        head_dim_v > (double)run->attn_native_max_head_dim)
        return 2; /* the framework's fallback: flash-attn 2 */
    return v;
}

double px_attn_kernel_slowdown(const px_hw *hw, const px_fw_runtime *run, px_attn_kernel k,
                               int gen)
{
    if (hw->attn_eff > 0.0)
        return 1.0;
    if (named_kernel(run, k) == PX_AK_TRITON)
        return PX_ATTN_TRITON_SLOWDOWN;
    return gen == 1 ? PX_ATTN_FA1_SLOWDOWN : 1.0;
}

px_status px_attn_kernel_check_hw(const px_hw *hw, px_attn_kernel k, px_error *err)
{
    int g = hw->attn_native_version;
    if (k == PX_AK_FLASH3 && g != 3)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "attention kernel flash3: FlashAttention-3 runs on Hopper GPUs only "
                       "(attn_native_version 3); hardware profile %s is generation %d",
                       hw->name, g);
    if ((k == PX_AK_FLASH2 || k == PX_AK_FLASH1 || k == PX_AK_TRITON) && g < 2)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "attention kernel %s: it needs an Ampere or later GPU (attn_native_version "
                       ">= 2); hardware profile %s is generation %d: give native or unfused",
                       px_attn_kernel_name(k), hw->name, g);
    return PX_OK;
}
