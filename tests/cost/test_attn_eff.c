/* test_attn_eff.c — the attention kernel's rate (px_attn_eff.h) against its
 * closed forms: the kernel generation against the GPU's own, the
 * exponential's share by head width, the causal diagonal by block length,
 * a calibrated attn_eff left alone, and the kernel a framework falls back
 * to on Blackwell for heads its native kernel does not train. */
#include <math.h>
#include <string.h>

#include "px_attn_eff.h"
#include "px_cost.h"
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

/* One layer through the cost model (px_cost_layer): a Llama 3 70B layer with
 * 192-wide heads at TP 8 and 4096 tokens under Megatron's traits.  On GB200
 * its forward is longer than with no head-width limit by exactly flash-attn
 * 2's attention core against the native one's (the backward 2.5x that); on
 * H100 the two are the same. */
static void layer_fallback(const char *hw_name, bool falls_back)
{
    px_model m;
    px_hw hw;
    px_error err = {0};
    CHECK_MSG(px_model_load("llama3-70b", NULL, &m, &err) == PX_OK, "%s", err.msg);
    m.head_dim = 192;
    load_hw(hw_name, &hw);
    px_framework fw;
    CHECK_MSG(px_framework_load("megatron", NULL, &fw, &err) == PX_OK, "%s", err.msg);
    px_fw_runtime unlimited = fw.run;
    unlimited.attn_native_max_head_dim = 0;
    static px_cost_ctx ca, cb;
    CHECK(px_cost_ctx_init(&ca, &m, &hw, &err) == PX_OK);
    CHECK(px_cost_ctx_init(&cb, &m, &hw, &err) == PX_OK);
    ca.run = &fw.run;
    cb.run = &unlimited;
    px_parallel par;
    px_parallel_init(&par);
    par.tp = 8;
    par.sp = true;
    par.n_micro = 1;
    par.seq_len = 4096;
    px_layer_cost a, b;
    px_cost_layer(&ca, &par, 0, &a);
    px_cost_layer(&cb, &par, 0, &b);
    double s = 4096.0, a_t = (double)m.n_heads / par.tp;
    double flops = 2.0 * s * s * a_t * (192.0 + 192.0);
    double t = px_time_attn_s(&hw, 0.5 * flops);
    double extra = falls_back ? t / px_attn_rate_rel(&hw, 2, 192.0, s) -
                                    t / px_attn_rate_rel(&hw, 4, 192.0, s)
                              : 0.0;
    CHECK_MSG(fabs((a.fwd_s - b.fwd_s) - extra) <= 1e-9 * a.fwd_s,
              "%s: forward %.9f s vs %.9f s, expected +%.9f s", hw_name, a.fwd_s, b.fwd_s, extra);
    CHECK_MSG(fabs((a.bwd_s - b.bwd_s) - 2.5 * extra) <= 1e-9 * a.bwd_s,
              "%s: backward %.9f s vs %.9f s, expected +%.9f s", hw_name, a.bwd_s, b.bwd_s,
              2.5 * extra);
    CHECK(!falls_back || extra > 2e-5); /* tens of microseconds a layer */
}

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
    px_hw gb, gb_no_exp, gb300;
    load_hw("gb200-nvl72", &gb);
    load_hw("gb300-nvl72", &gb300);
    CHECK(gb.attn_native_version == 4);
    gb_no_exp = gb;
    gb_no_exp.exp_rate = 0.0;
    CHECK_CLOSE(px_attn_rate_rel(&gb_no_exp, 4, PX_ATTN_HEAD_REF, s), diag(s), 1e-12, 0);
    CHECK_CLOSE(px_attn_rate_rel(&gb_no_exp, 3, PX_ATTN_HEAD_REF, s),
                PX_ATTN_OLD_GEN_REL * diag(s), 1e-12, 0);
    CHECK_CLOSE(px_attn_rate_rel(&gb_no_exp, 2, PX_ATTN_HEAD_REF, s),
                PX_ATTN_OLD_GEN_REL * PX_ATTN_OLD_GEN_REL * diag(s), 1e-12, 0);
    /* Blackwell's exp balance: more tensor-core FLOPs per exponential than
     * H100 (where the d = 128 rate was measured), so even d = 128 loses
     * some; c here against c on H100's balance at the same kernel rate */
    double Rb = 1e12 / px_time_attn_s(&gb, 1e12);
    double cb = Rb / (4.0 * gb.exp_rate);
    double cb_ref = Rb / gb.peak_flops * PX_ATTN_REF_FLOP_PER_EXP / 4.0;
    CHECK(cb > 1.5 * cb_ref); /* 2.5 against 1 PFLOP/s, the same exp units */
    want = (128.0 / (128.0 + cb)) / (128.0 / (128.0 + cb_ref)) * diag(s);
    CHECK_CLOSE(px_attn_rate_rel(&gb, 4, PX_ATTN_HEAD_REF, s), want, 1e-12, 0);
    CHECK(want < 0.9 * diag(s));
    /* H100's own balance leaves its d = 128 rate alone (above); Blackwell
     * Ultra's doubled exp rate brings it near H100's */
    double r300 = px_attn_rate_rel(&gb300, 4, PX_ATTN_HEAD_REF, s);
    CHECK(r300 > px_attn_rate_rel(&gb, 4, PX_ATTN_HEAD_REF, s) && r300 > 0.95 * diag(s));
    /* a generation-4 framework kernel is native on Hopper too */
    CHECK_CLOSE(px_attn_rate_rel(&h100, 4, PX_ATTN_HEAD_REF, s), diag(s), 1e-12, 0);
    /* Megatron (Transformer Engine): value heads wider than 128 train with
     * flash-attn 2 on Blackwell, with cuDNN on Hopper */
    px_framework fw;
    px_error err = {0};
    CHECK_MSG(px_framework_load("megatron", NULL, &fw, &err) == PX_OK, "%s", err.msg);
    CHECK(fw.run.flash_attention_version == 4 && fw.run.attn_native_max_head_dim == 128);
    CHECK(px_attn_kernel_version(&gb, &fw.run, PX_AK_FRAMEWORK, 128.0) == 4);
    CHECK(px_attn_kernel_version(&gb, &fw.run, PX_AK_FRAMEWORK, 192.0) == 2);
    CHECK(px_attn_kernel_version(&h100, &fw.run, PX_AK_FRAMEWORK, 192.0) == 4);
    CHECK(px_attn_kernel_version(&gb, NULL, PX_AK_FRAMEWORK, 192.0) == 0);
    fw.run.attn_native_max_head_dim = 0; /* no limit */
    CHECK(px_attn_kernel_version(&gb, &fw.run, PX_AK_FRAMEWORK, 256.0) == 4);
    fw.run.attn_native_max_head_dim = 128;
    fw.run.flash_attention_version = 2; /* already flash-attn 2: stays */
    CHECK(px_attn_kernel_version(&gb, &fw.run, PX_AK_FRAMEWORK, 192.0) == 2);
    /* a kernel the plan names is that kernel, whatever the framework's */
    CHECK(px_attn_kernel_version(&gb, &fw.run, PX_AK_NATIVE, 192.0) == 0);
    CHECK(px_attn_kernel_version(&gb, &fw.run, PX_AK_FLASH2, 128.0) == 2);
    CHECK(px_attn_kernel_version(&h100, &fw.run, PX_AK_FLASH3, 128.0) == 3);
    CHECK(px_attn_kernel_version(&h100, &fw.run, PX_AK_FLASH1, 128.0) == 1);
    CHECK(px_attn_kernel_version(&h100, NULL, PX_AK_TRITON, 128.0) == 2);
    /* FlashAttention 1 and the Triton port: slower than flash-attn 2 by
     * Dao 2023's factors, the framework's generation 1 as FlashAttention 1 */
    CHECK_CLOSE(px_attn_kernel_slowdown(&h100, NULL, PX_AK_TRITON, 2), 1.8, 0, 0);
    CHECK_CLOSE(px_attn_kernel_slowdown(&h100, NULL, PX_AK_FLASH1, 1), 2.0, 0, 0);
    CHECK_CLOSE(px_attn_kernel_slowdown(&h100, NULL, PX_AK_FRAMEWORK, 1), 2.0, 0, 0);
    CHECK_CLOSE(px_attn_kernel_slowdown(&h100, NULL, PX_AK_FLASH2, 2), 1.0, 0, 0);
    /* a profile that names the Triton port runs it as the option does */
    px_framework lf;
    CHECK_MSG(px_framework_load_release("llm-foundry", NULL, "2023", &lf, &err) == PX_OK, "%s", err.msg);
    CHECK(lf.run.attn_kernel == PX_AK_TRITON);
    CHECK(px_attn_kernel_version(&h100, &lf.run, PX_AK_FRAMEWORK, 128.0) == 2);
    CHECK_CLOSE(px_attn_kernel_slowdown(&h100, &lf.run, PX_AK_FRAMEWORK, 2), 1.8, 0, 0);
    CHECK(px_attn_kernel_version(&h100, &lf.run, PX_AK_NATIVE, 128.0) == 0);
    CHECK_CLOSE(px_attn_kernel_slowdown(&h100, &lf.run, PX_AK_NATIVE, 0), 1.0, 0, 0);
    /* and runs only where the GPU has its instructions */
    CHECK(px_attn_kernel_check_hw(&h100, PX_AK_FLASH3, &err) == PX_OK);
    CHECK(px_attn_kernel_check_hw(&gb, PX_AK_FLASH3, &err) == PX_ERR_INVALID &&
          strstr(err.msg, "Hopper") != NULL);
    CHECK(px_attn_kernel_check_hw(&gb, PX_AK_TRITON, &err) == PX_OK);
    px_hw old = h100;
    old.attn_native_version = 0; /* Volta */
    CHECK(px_attn_kernel_check_hw(&old, PX_AK_FLASH2, &err) == PX_ERR_INVALID &&
          strstr(err.msg, "Ampere") != NULL);
    CHECK(px_attn_kernel_check_hw(&old, PX_AK_NATIVE, &err) == PX_OK);
    layer_fallback("gb200-nvl72", true);
    layer_fallback("h100-sxm", false);
    /* a calibrated kernel is measured as it runs */
    h100.attn_eff = 0.3;
    CHECK_CLOSE(px_attn_kernel_slowdown(&h100, NULL, PX_AK_TRITON, 2), 1.0, 0, 0);
    CHECK_CLOSE(px_attn_rate_rel(&h100, 2, 64.0, 512.0), 1.0, 0, 0);
    return px_test_result("test_attn_eff");
}
