/* test_attn_eff.c — the attention kernel's rate (px_attn_eff.h) against its
 * closed forms: the kernel generation against the GPU's own, the
 * exponential's share by head width, the causal diagonal by block length,
 * a calibrated attn_eff left alone, and the kernel a framework falls back
 * to on Blackwell for heads its native kernel does not train. */
#include <math.h>

#include "px_attn_eff.h"
#include "px_efficiency.h"
#include "px_framework.h"
#include "px_test.h"

static void load_hw(const char *name, px_hw *hw)
{
    px_error err = {0};
    if (px_hw_load(name, NULL, hw, &err) != PX_OK) {
        fprintf(stderr, "%s: %s\n", name, err.msg);
        CHECK(0);
    }
}

static double diag(double s) { return s / (s + PX_ATTN_SEQ_HALF); }

int main(void)
{
    px_hw h100, a100;
    load_hw("h100-sxm", &h100);
    load_hw("a100-80g", &a100);
    CHECK(h100.attn_native_version == 3 && h100.exp_rate > 0.0);
    CHECK(a100.attn_native_version == 2);

    /* the native generation at the reference head width: only the diagonal */
    double s = 8192.0;
    CHECK_CLOSE(px_attn_rate_rel(&h100, 3, PX_ATTN_HEAD_REF, s), diag(s), 1e-12, 0);
    CHECK_CLOSE(diag(128.0), 0.5, 1e-12, 0);
    /* flash-attn 2 on Hopper: the older generation's share */
    CHECK_CLOSE(px_attn_rate_rel(&h100, 2, PX_ATTN_HEAD_REF, s),
                PX_ATTN_OLD_GEN_REL * diag(s), 1e-12, 0);
    /* flash-attn 2 is A100's own: no penalty; no exp_rate: no head term */
    CHECK_CLOSE(px_attn_rate_rel(&a100, 2, 64.0, s), diag(s), 1e-12, 0);
    /* head width: d / (d + c) against 128 / (128 + c), c = R / (4 E) */
    double R = 1e12 / px_time_attn_s(&h100, 1e12);
    double c = R / (4.0 * h100.exp_rate);
    CHECK(c > 20.0 && c < 80.0); /* tens of head columns on H100 */
    double want = (64.0 / (64.0 + c)) / (128.0 / (128.0 + c)) * diag(s);
    CHECK_CLOSE(px_attn_rate_rel(&h100, 3, 64.0, s), want, 1e-12, 0);
    /* the older kernel's lower rate hides more of the exp */
    double c2 = PX_ATTN_OLD_GEN_REL * c;
    want = PX_ATTN_OLD_GEN_REL * (64.0 / (64.0 + c2)) / (128.0 / (128.0 + c2)) * diag(s);
    CHECK_CLOSE(px_attn_rate_rel(&h100, 2, 64.0, s), want, 1e-12, 0);
    /* never above the GEMM rate */
    CHECK(px_attn_rate_rel(&h100, 3, 1e6, 1e9) <= 1.0 / PX_EFF_FLASH_REL + 1e-12);
    /* Blackwell (generation 4): cuDNN's kernels are native; flash-attn 2 is
     * two generations behind, FA3 one */
    px_hw gb;
    load_hw("gb200-nvl72", &gb);
    CHECK(gb.attn_native_version == 4);
    CHECK_CLOSE(px_attn_rate_rel(&gb, 4, PX_ATTN_HEAD_REF, s), diag(s), 1e-12, 0);
    CHECK_CLOSE(px_attn_rate_rel(&gb, 3, PX_ATTN_HEAD_REF, s), PX_ATTN_OLD_GEN_REL * diag(s),
                1e-12, 0);
    CHECK_CLOSE(px_attn_rate_rel(&gb, 2, PX_ATTN_HEAD_REF, s),
                PX_ATTN_OLD_GEN_REL * PX_ATTN_OLD_GEN_REL * diag(s), 1e-12, 0);
    /* a generation-4 framework kernel is native on Hopper too */
    CHECK_CLOSE(px_attn_rate_rel(&h100, 4, PX_ATTN_HEAD_REF, s), diag(s), 1e-12, 0);
    /* Megatron (Transformer Engine): value heads wider than 128 train with
     * flash-attn 2 on Blackwell, with cuDNN on Hopper */
    px_framework fw;
    px_error err = {0};
    CHECK_MSG(px_framework_load("megatron", NULL, &fw, &err) == PX_OK, "%s", err.msg);
    CHECK(fw.run.flash_attention_version == 4 && fw.run.attn_native_max_head_dim == 128);
    CHECK(px_attn_kernel_version(&gb, &fw.run, 128.0) == 4);
    CHECK(px_attn_kernel_version(&gb, &fw.run, 192.0) == 2);
    CHECK(px_attn_kernel_version(&h100, &fw.run, 192.0) == 4);
    CHECK(px_attn_kernel_version(&gb, NULL, 192.0) == 0);
    fw.run.attn_native_max_head_dim = 0; /* no limit */
    CHECK(px_attn_kernel_version(&gb, &fw.run, 256.0) == 4);
    fw.run.attn_native_max_head_dim = 128;
    fw.run.flash_attention_version = 2; /* already flash-attn 2: stays */
    CHECK(px_attn_kernel_version(&gb, &fw.run, 192.0) == 2);
    /* a calibrated kernel is measured as it runs */
    h100.attn_eff = 0.3;
    CHECK_CLOSE(px_attn_rate_rel(&h100, 2, 64.0, 512.0), 1.0, 0, 0);
    return px_test_result("test_attn_eff");
}
