/* test_eager_ops.c — a framework that runs the llama block's RMSNorm, RoPE
 * and gated activation as PyTorch's composite ops (fused_norm, fused_rope,
 * fused_swiglu false) pays their passes (px_cost_eager_norm_bytes,
 * _rope_bytes, _swiglu_bytes) instead of one kernel's; GPT's LayerNorm is
 * one kernel either way.  And the op-level
 * selective policy (selective_op_policy) reruns the even-numbered matmuls
 * of the block and its element-wise work, not the attention core.  Each
 * difference between two runtimes is checked against the closed form. */
#include "px_cost.h"
#include "px_cost_precision.h"
#include "px_efficiency.h"
#include "px_framework.h"
#include "px_test.h"

static px_parallel layout(int tp)
{
    px_parallel par;
    px_parallel_init(&par);
    par.tp = tp;
    par.sp = tp > 1;
    par.micro_batch = 2;
    par.n_micro = 4;
    par.seq_len = 4096;
    return par;
}

/* Seconds of the composite passes less the one-kernel ones, forward and
 * backward, for one layer of T tokens (datasheet profile: the NORM and ROPE
 * classes at their datasheet rates, the composite ops streamed). */
static void eager_extra(const px_hw *hw, const px_model *m, double T, int tp, double *fwd,
                        double *bwd)
{
    double e = 2.0, tsp = tp > 1 ? tp : 1.0, h = (double)m->hidden;
    double norm = 2.0 * T * h / tsp;
    double rot = T * ((double)m->n_heads + (double)m->n_kv_heads) / tp *
                 (double)px_model_qk_head_dim(m);
    double act = T * (double)m->ffn / tp;
    double nf, nb, rf, rb, af, ab;
    px_cost_eager_norm_bytes(norm, (int)e, &nf, &nb);
    px_cost_eager_rope_bytes(rot, (int)e, &rf, &rb);
    px_cost_eager_swiglu_bytes(act, (int)e, &af, &ab);
    double one_nf = px_time_mem_class_s(hw, PX_MEM_NORM, 2.0 * e * norm);
    double one_nb = px_time_mem_class_s(hw, PX_MEM_NORM, 3.0 * e * norm);
    double one_r = px_time_mem_class_s(hw, PX_MEM_ROPE, 2.0 * e * rot);
    double one_af = px_time_mem_class_s(hw, PX_MEM_SWIGLU, 3.0 * e * act);
    double one_ab = px_time_mem_class_s(hw, PX_MEM_SWIGLU, 5.0 * e * act);
    *fwd = px_time_mem_class_s(hw, PX_MEM_GENERIC, nf) - one_nf +
           px_time_mem_class_s(hw, PX_MEM_GENERIC, rf) - one_r +
           px_time_mem_class_s(hw, PX_MEM_GENERIC, af) - one_af;
    *bwd = px_time_mem_class_s(hw, PX_MEM_GENERIC, nb) - one_nb +
           px_time_mem_class_s(hw, PX_MEM_GENERIC, rb) - one_r +
           px_time_mem_class_s(hw, PX_MEM_GENERIC, ab) - one_ab;
}

/* The byte counts themselves: the op lists of px_cost_2_ops.c at bf16,
 * nine times a fused norm's traffic, five times a fused RoPE's. */
static void byte_counts(void)
{
    double f, b;
    px_cost_eager_norm_bytes(1.0, 2, &f, &b);
    CHECK(f == 36.0 && b == 76.0);
    CHECK((f + b) / px_cost_class_bytes(PX_MEM_NORM, 1.0, 2, false) > 9.0);
    px_cost_eager_rope_bytes(1.0, 2, &f, &b);
    CHECK(f == 20.0 && b == 20.0);
    px_cost_eager_rope_bytes(1.0, 4, &f, &b);
    CHECK(f == 24.0 && b == 24.0);
    px_cost_eager_swiglu_bytes(1.0, 2, &f, &b);
    CHECK(f == 10.0 && b == 18.0);
}

static void llama_layer(const px_model *m, const px_hw *hw, const px_fw_runtime *base, int tp)
{
    px_fw_runtime fused = *base, eager = *base;
    fused.fused_norm = fused.fused_rope = fused.fused_swiglu = true;
    eager.fused_norm = eager.fused_rope = eager.fused_swiglu = false;
    fused.selective_op_policy = eager.selective_op_policy = false;
    static px_cost_ctx cf, ce;
    px_error err = {0};
    CHECK(px_cost_ctx_init(&cf, m, hw, &err) == PX_OK);
    CHECK(px_cost_ctx_init(&ce, m, hw, &err) == PX_OK);
    cf.run = &fused;
    ce.run = &eager;
    px_parallel par = layout(tp);
    px_layer_cost a, b;
    px_cost_layer(&ce, &par, 0, &a);
    px_cost_layer(&cf, &par, 0, &b);
    double f, bw;
    eager_extra(hw, m, 2.0 * 4096.0, tp, &f, &bw);
    CHECK(f > 0.0 && bw > f);
    CHECK_CLOSE(a.fwd_s - b.fwd_s, f, 1e-9, 0);
    CHECK_CLOSE(a.bwd_s - b.bwd_s, bw, 1e-9, 0);
    /* full recompute reruns the composite forward; Megatron's selective
     * policy only the attention core; memory is the same */
    CHECK_CLOSE(a.recompute_s[PX_RECOMPUTE_FULL] - b.recompute_s[PX_RECOMPUTE_FULL], f, 1e-9, 0);
    CHECK(a.recompute_s[PX_RECOMPUTE_SELECTIVE] == b.recompute_s[PX_RECOMPUTE_SELECTIVE]);
    CHECK(a.act_bytes[PX_RECOMPUTE_NONE] == b.act_bytes[PX_RECOMPUTE_NONE]);

    /* the op-level policy: the even-numbered matmuls (after torchtitan's
     * one wqkv: wo, w3) and the layer's element-wise forward (full
     * recompute's rerun less its GEMMs and attention core, without TP's
     * recomputed collectives: tp 1), the composite passes included */
    if (tp > 1)
        return;
    eager.selective_op_policy = true;
    px_layer_cost s;
    px_cost_layer(&ce, &par, 0, &s);
    double T = 2.0 * 4096.0, h = (double)m->hidden, t = tp, dq = px_model_qk_head_dim(m);
    double kv_t = (double)m->n_kv_heads / t, a_t = (double)m->n_heads / t, unused;
    CHECK(base->fused_qkv && !base->fused_gate_up); /* torchtitan: wqkv; w1 and w3 */
    double w3 = px_prec_time_linear_s(hw, par.precision, T, (double)m->ffn / t, h, &unused);
    double rerun = px_prec_time_linear_s(hw, par.precision, T, h, a_t * dq, &unused) + w3;
    /* full recompute reruns every GEMM, the core and the element-wise work;
     * the GEMMs: a projection's forward is its FLOPs at the GEMM rate */
    double q_f = px_prec_time_linear_s(hw, par.precision, T, a_t * dq + 2.0 * kv_t * dq, h,
                                       &unused),
           o_f = px_prec_time_linear_s(hw, par.precision, T, h, a_t * dq, &unused),
           up_f = 2.0 * w3,
           down_f = px_prec_time_linear_s(hw, par.precision, T, h, (double)m->ffn / t, &unused);
    double core = a.recompute_s[PX_RECOMPUTE_SELECTIVE];
    double elementwise = a.recompute_s[PX_RECOMPUTE_FULL] - (q_f + o_f + up_f + down_f) - core;
    CHECK(elementwise > f);
    CHECK_CLOSE(s.recompute_s[PX_RECOMPUTE_SELECTIVE], rerun + elementwise, 1e-9, 0);
}

/* GPT's LayerNorm is one ATen kernel and it has no RoPE: no difference. */
static void gpt_layer(const px_hw *hw, const px_fw_runtime *base)
{
    px_model m;
    px_error err = {0};
    CHECK_MSG(px_model_load("gpt3-175b", NULL, &m, &err) == PX_OK, "%s", err.msg);
    px_fw_runtime fused = *base, eager = *base;
    fused.fused_norm = fused.fused_rope = fused.fused_swiglu = true;
    eager.fused_norm = eager.fused_rope = eager.fused_swiglu = false;
    static px_cost_ctx cf, ce;
    CHECK(px_cost_ctx_init(&cf, &m, hw, &err) == PX_OK);
    CHECK(px_cost_ctx_init(&ce, &m, hw, &err) == PX_OK);
    cf.run = &fused;
    ce.run = &eager;
    px_parallel par = layout(2);
    px_layer_cost a, b;
    px_cost_layer(&ce, &par, 0, &a);
    px_cost_layer(&cf, &par, 0, &b);
    CHECK(a.fwd_s == b.fwd_s && a.bwd_s == b.bwd_s);
}

int main(void)
{
    byte_counts();
    px_model m;
    px_hw hw;
    px_framework fw;
    px_error err = {0};
    CHECK_MSG(px_model_load("llama3-8b", NULL, &m, &err) == PX_OK, "%s", err.msg);
    CHECK_MSG(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK, "%s", err.msg);
    CHECK_MSG(px_framework_load("torchtitan", NULL, &fw, &err) == PX_OK, "%s", err.msg);
    llama_layer(&m, &hw, &fw.run, 1);
    llama_layer(&m, &hw, &fw.run, 2); /* SP shards the norms' tokens, TP the heads */
    gpt_layer(&hw, &fw.run);
    return px_test_result("test_eager_ops");
}
