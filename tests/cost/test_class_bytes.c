/* test_class_bytes.c — px_cost_class_bytes, the one byte count per
 * element-wise class that calibrate divides by its measured time and the
 * cost model multiplies back:
 *  1. per class and storage dtype, against the read/write counts of
 *     docs/cost-model.md ("Element-wise time"), written out here
 *     independently (fp32 for the CPU calibration, bf16 for the GPU one);
 *  2. against px_cost_eval itself: on a profile with measured rates, halving
 *     one class's time (its rate doubled) must shorten the step by exactly
 *     half of (the class's bytes over the step) / rate, with those bytes
 *     counted through px_cost_class_bytes from the model's shape.  If the
 *     model charged a class other bytes than the function says (or the
 *     calibration's count drifted from the model's), this fails. */
#include <math.h>
#include <string.h>

#include "px_cost.h"
#include "px_efficiency.h"
#include "px_flops.h"
#include "px_test.h"

static const char *const class_name[PX_MEM_COUNT] = {
    "generic", "norm", "residual", "gelu", "swiglu", "rope", "xent", "adamw", "embed"};

/* 1. Per element, forward + backward; the per-layer classes' backward is
 * charged twice its forward. */
static void per_element(void)
{
    for (int e = 2; e <= 4; e += 2) {
        /* reads + writes of one forward pass, in elements of the dtype */
        const double fwd_rw[PX_MEM_COUNT] = {
            [PX_MEM_GENERIC] = 2, [PX_MEM_NORM] = 2, [PX_MEM_RESIDUAL] = 3,
            [PX_MEM_GELU] = 2, [PX_MEM_SWIGLU] = 3, [PX_MEM_ROPE] = 2};
        for (int c = 0; c < PX_MEM_COUNT; c++) {
            double n = 12345.0;
            double tot = px_cost_class_bytes((px_mem_class)c, n, e, true);
            double fwd = px_cost_class_fwd_bytes((px_mem_class)c, n, e);
            if (fwd_rw[c] > 0) {
                CHECK_MSG(fwd == fwd_rw[c] * e * n, "%s e=%d: fwd %.17g", class_name[c], e, fwd);
                CHECK_MSG(tot == 3.0 * fwd, "%s e=%d: total %.17g != 3 x fwd", class_name[c], e,
                          tot);
            } else {
                CHECK_MSG(fwd == 0.0, "%s: charged as a total, fwd %.17g", class_name[c], fwd);
            }
            /* linear in the elements */
            CHECK_CLOSE(px_cost_class_bytes((px_mem_class)c, 3.0 * n, e, true), 3.0 * tot,
                        1e-15, 0.0);
        }
        double n = 1e6;
        /* cross-entropy: 4 passes over fp32 logits whatever the storage */
        CHECK(px_cost_class_bytes(PX_MEM_XENT, n, e, true) == 16.0 * n);
        /* embedding: gather (read + write a row) forward, scatter-add
         * backward: a read + write each way, charged 3 x 2e */
        CHECK(px_cost_class_bytes(PX_MEM_EMBED, n, e, true) == 6.0 * e * n);
    }
    /* AdamW per parameter: fp32 master/m/v read + written, fp32 grad read,
     * and in mixed precision the bf16 copy written; fp32 training has no
     * master (the weights are it) and no copy */
    CHECK(px_cost_class_bytes(PX_MEM_ADAMW, 1.0, 4, true) == 2.0 * (4 + 4) + 4);
    CHECK(px_cost_class_bytes(PX_MEM_ADAMW, 1.0, 4, false) == 2.0 * (4 + 4) + 4);
    CHECK(px_cost_class_bytes(PX_MEM_ADAMW, 1.0, 2, true) == 2.0 * (4 + 4 + 4) + 4 + 2);
    CHECK(px_cost_class_bytes(PX_MEM_ADAMW, 1.0, 2, false) == 2.0 * (4 + 4 + 4) + 2 + 2);
    /* dtype 0 means bf16 */
    CHECK(px_cost_class_bytes(PX_MEM_NORM, 10.0, 0, true) ==
          px_cost_class_bytes(PX_MEM_NORM, 10.0, 2, true));
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

/* 2. One GPU (no TP, PP, DP: the class times add up, nothing overlaps
 * them), every class measured. */
static void against_model(const char *model, int dtype_bytes, bool grad_fp32)
{
    px_model m;
    px_hw hw;
    px_error err;
    px_error_clear(&err);
    CHECK(px_model_load(model, NULL, &m, &err) == PX_OK);
    CHECK(px_hw_load("h200", NULL, &hw, &err) == PX_OK);
    hw.dtype_bytes = dtype_bytes;
    for (int c = 1; c < PX_MEM_COUNT; c++)
        *px_hw_class_bw(&hw, (px_mem_class)c) = 1e12 * (1.0 + 0.25 * c);
    px_parallel par;
    px_parallel_init(&par);
    par.grad_fp32 = grad_fp32;
    par.micro_batch = 2;
    par.n_micro = 3;
    par.seq_len = m.seq_len < 512 ? m.seq_len : 512;
    px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &m, &hw, &err) == PX_OK);

    double L = (double)m.n_layers, mm = (double)par.n_micro;
    double T = (double)par.micro_batch * (double)par.seq_len, h = (double)m.hidden;
    bool gated = m.block == PX_BLOCK_LLAMA;
    double elems[PX_MEM_COUNT] = {0};
    /* per step: 2 norms a layer + the final norm; 2 residual sums a layer;
     * the activation over [T, f]; RoPE on the q and k heads; the loss over
     * [T, V]; the embedding's [T, h]; AdamW over every parameter */
    elems[PX_MEM_NORM] = mm * (2.0 * L + 1.0) * T * h;
    elems[PX_MEM_RESIDUAL] = mm * 2.0 * L * T * h;
    elems[gated ? PX_MEM_SWIGLU : PX_MEM_GELU] = mm * L * T * (double)m.ffn;
    if (gated)
        elems[PX_MEM_ROPE] =
            mm * L * T * (double)(m.n_heads + m.n_kv_heads) * (double)m.head_dim;
    elems[PX_MEM_XENT] = mm * T * (double)m.vocab;
    elems[PX_MEM_EMBED] = mm * T * h;
    elems[PX_MEM_ADAMW] = (double)ctx.pc.total;

    double base = step_s(&m, &hw, &par);
    for (int c = 1; c < PX_MEM_COUNT; c++) {
        double *bw = px_hw_class_bw(&hw, (px_mem_class)c), b0 = *bw;
        *bw = 2.0 * b0;
        double faster = step_s(&m, &hw, &par);
        *bw = b0;
        double bytes = px_cost_class_bytes((px_mem_class)c, elems[c], dtype_bytes, par.grad_fp32);
        double want = bytes / b0 - bytes / (2.0 * b0);
        CHECK_MSG(fabs((base - faster) - want) <= 1e-9 * base,
                  "%s, dtype %d, class %s: step shortened by %.9g s, the class's bytes say "
                  "%.9g s", model, dtype_bytes, class_name[c], base - faster, want);
        /* a class the model runs must weigh enough in the step for the check
         * to bite (one it does not run: the step must not change, above) */
        CHECK_MSG(elems[c] == 0.0 || want > 1e-7 * base, "%s class %s: %.3g s of a %.3g s step",
                  model, class_name[c], want, base);
    }
}

int main(void)
{
    per_element();
    against_model("tiny-llama", 4, true);
    against_model("tiny-llama", 2, true);
    against_model("tiny-gpt", 4, true);
    against_model("tiny-gpt", 2, true);
    against_model("llama3-8b", 2, true);
    against_model("llama3-8b", 2, false); /* bf16 gradients: 28 AdamW bytes a parameter */
    return px_test_result("class_bytes");
}
