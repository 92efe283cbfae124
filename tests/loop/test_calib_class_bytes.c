/* test_calib_class_bytes.c — the byte accounting of both calibrations'
 * element-wise classes (calibration/px_calib_kernels.h px_calib_class_bytes),
 * on the CPU:
 *  1. the CPU calibration's shape in fp32 gives the counts it has always
 *     divided (norm 2 x 3 x 2 x 4 x T C ...), and the GPU calibration's shape
 *     in bf16 the counts written out here from docs/cost-model.md;
 *  2. a calibration round trip through the cost model: a profile whose
 *     class rates are "GPU-calibration bytes / measured time" (made-up times)
 *     must make px_cost_eval charge, for a one-layer model of the GPU
 *     calibration's own shape, exactly those times (per class: how many
 *     calibration calls the step's work is, times the measured time).  If
 *     the calibration divided other bytes than the model multiplies (a
 *     dtype, a factor, a class), the charged time would differ. */
#include <math.h>
#include <string.h>

#include "px_calib_kernels.h"
#include "px_cost.h"
#include "px_efficiency.h"
#include "px_test.h"

static const char *const class_name[PX_MEM_COUNT] = {
    "generic", "norm", "residual", "gelu", "swiglu", "rope", "xent", "adamw", "embed"};

static void counts(void)
{
    /* CPU: fp32, the constants the CPU calibration used before these bytes
     * came from px_cost */
    px_calib_ew_shape s = px_calib_kernels_shape();
    double T = (double)s.tokens, C = (double)s.hidden;
    CHECK(s.tokens > 0 && s.hidden > 0 && s.adam_params > 0);
    CHECK(px_calib_class_bytes(PX_MEM_NORM, &s, 4) == 2.0 * 3.0 * (2.0 * 4.0 * T * C));
    CHECK(px_calib_class_bytes(PX_MEM_RESIDUAL, &s, 4) == 3.0 * (3.0 * 4.0 * T * C));
    CHECK(px_calib_class_bytes(PX_MEM_GELU, &s, 4) == 3.0 * (2.0 * 4.0 * T * s.ffn_gelu));
    CHECK(px_calib_class_bytes(PX_MEM_SWIGLU, &s, 4) == 3.0 * (3.0 * 4.0 * T * s.ffn_swiglu));
    CHECK(px_calib_class_bytes(PX_MEM_ROPE, &s, 4) ==
          3.0 * (2.0 * 4.0 * T * (double)(s.heads + s.kv_heads) * s.head_dim));
    CHECK(px_calib_class_bytes(PX_MEM_XENT, &s, 4) == 4.0 * 4.0 * T * s.vocab);
    CHECK(px_calib_class_bytes(PX_MEM_ADAMW, &s, 4) == 20.0 * s.adam_params);
    CHECK(px_calib_class_bytes(PX_MEM_EMBED, &s, 4) == 3.0 * 2.0 * 4.0 * T * C);

    /* GPU: bf16 activations (2 bytes), fp32 logits in the loss's count,
     * AdamW in mixed precision with fp32 gradients: master, m, v read and
     * written (24), the gradient read (4), the bf16 copy written (2) */
    px_calib_ew_shape g = PX_CALIB_GPU_SHAPE;
    T = (double)g.tokens;
    C = (double)g.hidden;
    CHECK(g.tokens == 8192 && g.hidden == 4096 && g.ffn_swiglu == 14336 && g.vocab == 32000);
    CHECK(px_calib_class_bytes(PX_MEM_NORM, &g, 2) == 2.0 * (2.0 + 4.0) * 2.0 * T * C);
    CHECK(px_calib_class_bytes(PX_MEM_RESIDUAL, &g, 2) == (3.0 + 6.0) * 2.0 * T * C);
    CHECK(px_calib_class_bytes(PX_MEM_GELU, &g, 2) == (2.0 + 4.0) * 2.0 * T * g.ffn_gelu);
    CHECK(px_calib_class_bytes(PX_MEM_SWIGLU, &g, 2) == (3.0 + 6.0) * 2.0 * T * g.ffn_swiglu);
    CHECK(px_calib_class_bytes(PX_MEM_ROPE, &g, 2) ==
          (2.0 + 4.0) * 2.0 * T * (double)(g.heads + g.kv_heads) * g.head_dim);
    CHECK(px_calib_class_bytes(PX_MEM_XENT, &g, 2) == 16.0 * T * g.vocab);
    CHECK(px_calib_class_bytes(PX_MEM_ADAMW, &g, 2) == 30.0 * g.adam_params);
    CHECK(px_calib_class_bytes(PX_MEM_EMBED, &g, 2) == 3.0 * 2.0 * 2.0 * T * C);
    /* the GPU's operands fit its calibration buffers (1 GiB of random
     * inputs): the largest, SwiGLU's [T, 2F] input and [T, F] gradient */
    CHECK((2.0 * T * g.ffn_swiglu + T * g.ffn_swiglu) * 2.0 <= (double)(1u << 30));
    CHECK(T * g.vocab * 2.0 <= (double)(1u << 30));
}

static double step_s(const px_model *m, const px_hw *hw, const px_parallel *par)
{
    px_cost_ctx ctx;
    px_error err;
    px_error_clear(&err);
    px_prediction pred;
    memset(&pred, 0, sizeof pred);
    CHECK(px_cost_ctx_init(&ctx, m, hw, &err) == PX_OK);
    CHECK(px_cost_eval(&ctx, par, 0.0, 0.0, &pred, NULL, &err) == PX_OK);
    return pred.time.step_s;
}

static void round_trip(void)
{
    px_calib_ew_shape g = PX_CALIB_GPU_SHAPE;
    px_model m;
    px_hw hw;
    px_error err;
    px_error_clear(&err);
    CHECK(px_model_load("llama3-8b", NULL, &m, &err) == PX_OK);
    CHECK(px_hw_load("h200", NULL, &hw, &err) == PX_OK);
    /* one layer of the calibration's shape, one sequence of its tokens */
    m.n_layers = 1;
    m.hidden = g.hidden;
    m.n_heads = g.heads;
    m.n_kv_heads = g.kv_heads;
    m.head_dim = g.head_dim;
    m.ffn = g.ffn_swiglu;
    m.vocab = g.vocab;
    m.seq_len = g.tokens;
    CHECK(m.block == PX_BLOCK_LLAMA);
    hw.dtype_bytes = 2; /* as the GPU calibration writes */
    px_parallel par;
    px_parallel_init(&par);
    par.micro_batch = 1;
    par.n_micro = 1;
    par.seq_len = g.tokens;
    px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &m, &hw, &err) == PX_OK);

    /* made-up measured seconds of one calibration call per class, and the
     * profile the calibration would write from them */
    double t_call[PX_MEM_COUNT] = {0};
    for (int c = 1; c < PX_MEM_COUNT; c++) {
        t_call[c] = 1e-4 * (1.0 + 0.3 * c);
        *px_hw_class_bw(&hw, (px_mem_class)c) = px_calib_class_bytes((px_mem_class)c, &g, 2) /
                                          t_call[c];
    }
    /* calibration calls in the step: 3 norms (2 a layer + the final one)
     * where a call runs 2; 2 residual sums; one SwiGLU, RoPE, loss and
     * embedding; AdamW over the model's parameters */
    double calls[PX_MEM_COUNT] = {0};
    calls[PX_MEM_NORM] = 1.5;
    calls[PX_MEM_RESIDUAL] = 2.0;
    calls[PX_MEM_SWIGLU] = calls[PX_MEM_ROPE] = calls[PX_MEM_XENT] = calls[PX_MEM_EMBED] = 1.0;
    calls[PX_MEM_ADAMW] = (double)ctx.pc.total / (double)g.adam_params;

    double base = step_s(&m, &hw, &par);
    for (int c = 1; c < PX_MEM_COUNT; c++) {
        double *bw = px_hw_class_bw(&hw, (px_mem_class)c), b0 = *bw;
        *bw = 2.0 * b0; /* the class twice as fast: half its time saved */
        double saved = base - step_s(&m, &hw, &par);
        *bw = b0;
        double want = 0.5 * calls[c] * t_call[c];
        CHECK_MSG(fabs(saved - want) <= 1e-9 * base + 1e-12 * want,
                  "class %s: the model charges %.9g s, the calibration measured %.9g s",
                  class_name[c], 2.0 * saved, 2.0 * want);
    }
}

int main(void)
{
    counts();
    round_trip();
    return px_test_result("calib_class_bytes");
}
