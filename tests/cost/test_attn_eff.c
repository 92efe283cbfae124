/* test_attn_eff.c — the attention kernel's rate (px_attn_eff.h) against its
 * closed forms: the kernel generation against the GPU's own, the
 * exponential's share by head width, the causal diagonal by block length,
 * and a calibrated attn_eff left alone. */
#include <math.h>

#include "px_attn_eff.h"
#include "px_efficiency.h"
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
    /* a calibrated kernel is measured as it runs */
    h100.attn_eff = 0.3;
    CHECK_CLOSE(px_attn_rate_rel(&h100, 2, 64.0, 512.0), 1.0, 0, 0);
    return px_test_result("test_attn_eff");
}
