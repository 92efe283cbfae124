/* test_lora.c — LoRA on a frozen base (docs/cost-model.md, "Fine-tuning")
 * against its closed forms: the adapter sizes of a Llama 3 8B layer, the
 * static bytes (frozen weights only in the activation dtype, the adapters'
 * gradients and Adam state), one layer's forward (plus the adapters) and
 * backward (less the frozen weight gradients and their accumulation, plus
 * the adapters), the DP all-reduce of the adapter gradients alone, the
 * FLOPs behind MFU; and SFT ("full") costing exactly as pre-training. */
#include <math.h>
#include <string.h>

#include "px_cost.h"
#include "px_cost_lora.h"
#include "px_cost_precision.h"
#include "px_efficiency.h"
#include "px_flops.h"
#include "px_grad_accum.h"
#include "px_test.h"

/* Llama 3 8B's layer: h 4096, 32 query and 8 key/value heads of 128, a
 * SwiGLU MLP of 14336 */
static void llama8b_shape(px_act_shape *sh)
{
    memset(sh, 0, sizeof *sh);
    sh->h = 4096;
    sh->a = 32;
    sh->kv = 8;
    sh->dq = sh->dv = 128;
    sh->f = 14336;
    sh->gated = true;
    sh->elem_bytes = 2;
}

static void one_gpu(px_parallel *par, px_ft_mode mode)
{
    px_parallel_init(par);
    par->micro_batch = 1;
    par->n_micro = 4;
    par->seq_len = 4096;
    par->recompute = PX_RECOMPUTE_FULL;
    par->dp_overlap = false; /* every DP second exposed */
    par->finetune.mode = mode;
}

static void check_sizes(void)
{
    px_act_shape sh;
    llama8b_shape(&sh);
    px_finetune ft;
    px_finetune_init(&ft);
    CHECK(px_lora_layer_params(&ft, &sh) == 0.0); /* pre-training: no adapters */
    ft.mode = PX_FT_LORA;
    /* r (in + out): qkv 4096 + 6144, proj 4096 + 4096, fc1 4096 + 2·14336,
     * fc2 14336 + 4096 = 69632 a rank */
    CHECK_CLOSE(px_lora_layer_params(&ft, &sh), 32.0 * 69632.0, 0, 0);
    ft.rank = 8;
    ft.targets = PX_LORA_QKV | PX_LORA_PROJ;
    CHECK_CLOSE(px_lora_layer_params(&ft, &sh), 8.0 * (10240.0 + 8192.0), 0, 0);
}

int main(void)
{
    check_sizes();
    px_model m;
    px_hw hw;
    px_error err;
    CHECK(px_model_load("llama3-8b", NULL, &m, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &m, &hw, &err) == PX_OK);
    px_act_shape sh;
    llama8b_shape(&sh);
    px_finetune lora_ft;
    px_finetune_init(&lora_ft);
    lora_ft.mode = PX_FT_LORA;
    double L = (double)m.n_layers, A = L * px_lora_layer_params(&lora_ft, &sh);

    /* static bytes, one GPU, ZeRO 0: pre-training 2 + 4 + 12 bytes a weight;
     * LoRA the 2-byte frozen weights and the adapters' 2 + 4 + 12 */
    px_parallel pre, lora, full;
    one_gpu(&pre, PX_FT_NONE);
    one_gpu(&lora, PX_FT_LORA);
    one_gpu(&full, PX_FT_FULL);
    px_prediction pp, pl, pf;
    CHECK(px_cost_eval(&ctx, &pre, 0, 0, &pp, NULL, &err) == PX_OK);
    CHECK(px_cost_eval(&ctx, &lora, 0, 0, &pl, NULL, &err) == PX_OK);
    CHECK(px_cost_eval(&ctx, &full, 0, 0, &pf, NULL, &err) == PX_OK);
    double N = (double)pp.mem.weights / 2.0;
    CHECK_CLOSE(pp.mem.grads, 4.0 * N, 1e-12, 1);
    CHECK_CLOSE(pl.mem.weights, 2.0 * N + 2.0 * A, 1e-12, 2);
    CHECK_CLOSE(pl.mem.grads, 4.0 * A, 1e-12, 1);
    CHECK_CLOSE(pl.mem.optimizer, 12.0 * A, 1e-12, 1);
    /* activations as pre-training: the targets' inputs are kept anyway */
    CHECK(pl.mem.activations == pp.mem.activations);
    /* the partitioner's per-layer and end views add up to the stage's */
    px_layer_cost lc;
    px_cost_layer(&ctx, &lora, 0, &lc);
    px_stage_extras ex;
    px_cost_stage_extras(&ctx, &lora, &ex);
    CHECK_CLOSE(L * lc.static_bytes + ex.first_static_bytes + ex.last_static_bytes,
                (double)(pl.mem.weights + pl.mem.grads + pl.mem.optimizer), 1e-12, 4);
    /* SFT: the costs of pre-training, to the byte and the second */
    CHECK(memcmp(&pf.mem, &pp.mem, sizeof pp.mem) == 0);
    CHECK(pf.time.step_s == pp.time.step_s);

    /* FLOPs: the forward F, the backward without the weights' gradients
     * (F less the attention cores) and the adapters' 6 A a token */
    double s = 4096.0, tokens = 4.0 * s;
    double F = px_flops_model_per_token(&m, 4096) / 3.0;
    double core = px_flops_attn_core_fwd_per_token(&m, 4096);
    CHECK_CLOSE(pl.model_flops_per_step, tokens * (2.0 * F + core + 6.0 * A), 1e-12, 0);
    CHECK_CLOSE(pp.model_flops_per_step, tokens * 3.0 * F, 1e-12, 0);

    /* one layer, one micro-batch: the forward gains the adapters; the
     * backward loses the four weight-gradient GEMMs (each the time of its
     * forward GEMM in bf16) and the fused accumulation into the main
     * gradients of the layer's weights, and gains the adapters' backward and
     * the accumulation of theirs */
    px_layer_cost cp, cl;
    px_cost_layer(&ctx, &pre, 0, &cp);
    px_cost_layer(&ctx, &lora, 0, &cl);
    double T = s, bwd = 0.0, b0;
    static const double shapes[4][2] = {{6144, 4096}, {4096, 4096}, {2.0 * 14336, 4096},
                                        {4096, 14336}}; /* n, k of qkv, proj, fc1, fc2 */
    double g_lin = 0.0;
    for (int i = 0; i < 4; i++) {
        g_lin += px_prec_time_linear_s(&hw, PX_PREC_BF16, T, shapes[i][0], shapes[i][1], &b0);
        bwd += b0;
    }
    CHECK_CLOSE(bwd, 2.0 * g_lin, 1e-12, 0); /* bf16: a backward is twice its forward */
    sh.s = sh.s_kv = s;
    sh.b = 1;
    double af, ab;
    px_lora_adapter_gemm_s(&hw, &lora, &sh, T, &af, &ab);
    CHECK(af > 0.0 && ab > 0.0);
    CHECK_CLOSE(cl.fwd_s - cp.fwd_s, af, 1e-9, 0);
    double acc = px_grad_accum_fused_s(&hw, &pre, false, (double)cp.params, 4.0) -
                 px_grad_accum_fused_s(&hw, &lora, false, A / L, 4.0);
    CHECK_CLOSE(cp.bwd_s - cl.bwd_s, g_lin + acc - ab, 1e-9, 0);
    /* the adapter GEMMs of one target on their roofline: fc2 alone, r 32 */
    px_parallel one = lora;
    one.finetune.targets = PX_LORA_FC2;
    px_lora_adapter_gemm_s(&hw, &one, &sh, T, &af, &ab);
    double ga = fmax(px_time_gemm_s(&hw, T, 32, 14336),
                     px_time_mem_s(&hw, 2.0 * (T * 14336 + 32 * 14336 + T * 32)));
    double gbm = fmax(px_time_gemm_s(&hw, T, 4096, 32),
                      px_time_mem_s(&hw, 2.0 * (T * 32 + 32 * 4096 + T * 4096)));
    CHECK_CLOSE(af, ga + gbm + px_time_mem_s(&hw, 5.0 * 2.0 * T * 4096), 1e-12, 0);
    CHECK_CLOSE(ab, 2.0 * (ga + gbm) + px_time_mem_s(&hw, 2.0 * T * (2.0 * 4096 + 3.0 * 14336)),
                1e-12, 0);

    /* DP over 8 GPUs of a node, ZeRO 0, not overlapped: LoRA all-reduces the
     * adapters' fp32 gradients alone (4 A bytes) */
    px_parallel dp8 = lora;
    dp8.dp = 8;
    px_cost_detail d;
    CHECK(px_cost_eval(&ctx, &dp8, 0, 0, &pl, &d, &err) == PX_OK);
    double want = px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 8, 4.0 * A, false) +
                  px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 8, 0.0, false);
    CHECK_CLOSE(d.dp_total_s, want, 1e-9, 0);
    return px_test_result("lora");
}
