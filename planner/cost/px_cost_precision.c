/* px_cost_precision.c — the cost of low-precision GEMMs; rules and sources in
 * docs/cost-model.md, "Low-precision GEMMs". */
#include "px_cost_precision.h"

#include <assert.h>
#include <string.h>

#include "px_efficiency.h"

bool px_prec_is_low(px_precision p)
{
    return p != PX_PREC_BF16 && p != PX_PREC_FP16;
}

double px_prec_peak_flops(const px_hw *hw, px_precision p)
{
    switch (p) {
    case PX_PREC_BF16: return hw->fp16_only ? 0.0 : hw->peak_flops;
    case PX_PREC_FP16: return hw->peak_flops;
    case PX_PREC_FP8:
    case PX_PREC_FP8_CS:
    case PX_PREC_FP8_ROWWISE:
    case PX_PREC_FP8_BLOCK: return hw->fp8_flops;
    case PX_PREC_MXFP8: return hw->mxfp8_flops;
    case PX_PREC_NVFP4: return hw->fp4_flops;
    default: return 0.0;
    }
}

static const char *peak_field(px_precision p)
{
    if (p == PX_PREC_MXFP8)
        return "mxfp8_flops";
    if (p == PX_PREC_NVFP4)
        return "fp4_flops";
    return "fp8_flops";
}

px_status px_prec_check_hw(const px_hw *hw, px_precision p, px_error *err)
{
    if (p < 0 || p >= PX_PREC_COUNT)
        return PX_FAIL(err, PX_ERR_INVALID, "precision %d: out of range", (int)p);
    if (px_prec_peak_flops(hw, p) > 0.0)
        return PX_OK;
    if (p == PX_PREC_BF16)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "precision bf16: hardware profile %s has no bf16 tensor-core path "
                       "(fp16_only = true); give --precision fp16",
                       hw->name);
    return PX_FAIL(err, PX_ERR_INVALID,
                   "precision %s: hardware profile %s has no such tensor-core path (%s = 0); "
                   "it runs %s%s%s%s",
                   px_precision_name(p), hw->name, peak_field(p),
                   hw->fp16_only ? "fp16" : "bf16, fp16",
                   hw->fp8_flops > 0.0 ? ", fp8, fp8-cs, fp8-rowwise, fp8-block" : "",
                   hw->mxfp8_flops > 0.0 ? ", mxfp8" : "", hw->fp4_flops > 0.0 ? ", nvfp4" : "");
}

/* Element bytes and scale bytes per element of a quantised operand:
 * per-tensor scales are one fp32 per tensor (nothing per element); per-row
 * one fp32 per row of k elements (counted with k = 4096: 1/1024); 1x128
 * blocks one fp32 per 128; MX one E8M0 byte per 32; NVFP4 one E4M3 byte per
 * 16 elements of 4 bits. */
static double data_bytes(px_precision p)
{
    return p == PX_PREC_NVFP4 ? 0.5 : 1.0;
}

static double scale_bytes(px_precision p)
{
    switch (p) {
    case PX_PREC_FP8_ROWWISE: return 4.0 / 4096.0;
    case PX_PREC_FP8_BLOCK: return 4.0 / 128.0;
    case PX_PREC_MXFP8: return 1.0 / 32.0;
    case PX_PREC_NVFP4: return 1.0 / 16.0;
    default: return 0.0;
    }
}

double px_prec_elem_bytes(px_precision p, double e_b)
{
    if (!px_prec_is_low(p))
        return e_b;
    return data_bytes(p) + scale_bytes(p);
}

static double shape(double half_m, double half_n, double half_k, double m, double n, double k)
{
    return (m / (m + half_m)) * (n / (n + half_n)) * (k / (k + half_k));
}

/* Precision p's GEMM of shape (m, n, k) over the bf16 one of the same
 * FLOPs: 1 / r at full size, more where a dimension is short of its moved
 * half-efficiency point.  r: peak_p / peak. */
static double low_over_bf16(const px_hw *hw, px_precision p, double m, double n, double k)
{
    double half = hw->gemm_eff_half_dim > 0.0 ? hw->gemm_eff_half_dim : PX_EFF_GEMM_HALF_DIM_DEFAULT;
    double r = px_prec_peak_flops(hw, p) / hw->peak_flops, op = (data_bytes(p) + scale_bytes(p)) / 2.0;
    double s16 = shape(half, half, half, m, n, k);
    double sp = shape(half * r * op, half * r * op, half * r, m, n, k);
    return s16 / sp / r;
}

double px_prec_time_gemm_s(const px_hw *hw, px_precision p, double m, double n, double k)
{
    double t = px_time_gemm_s(hw, m, n, k);
    if (!px_prec_is_low(p) || t <= 0.0 || px_prec_peak_flops(hw, p) <= 0.0)
        return t;
    return t * low_over_bf16(hw, p, m, n, k);
}

double px_prec_time_linear_s(const px_hw *hw, px_precision p, double m, double n, double k,
                             double *bwd_s)
{
    double t = px_time_gemm_s(hw, m, n, k);
    if (!px_prec_is_low(p) || t <= 0.0 || px_prec_peak_flops(hw, p) <= 0.0) {
        *bwd_s = 2.0 * t;
        return t;
    }
    *bwd_s = t * (low_over_bf16(hw, p, m, k, n) + low_over_bf16(hw, p, k, n, m));
    return t * low_over_bf16(hw, p, m, n, k);
}

/* Copies of a quantised operand the backward needs besides the forward's:
 * per-tensor FP8 on a GPU whose FP8 MMA reads only K-major operands (Hopper;
 * Transformer Engine's non_tn_fp8_gemm_supported() is false below SM 10.0)
 * keeps a transposed copy; block formats scale along k, so the wgrad GEMM
 * (k = tokens) needs the operand quantised along the other axis (TE's
 * rowwise + columnwise usages, torchao's 1x16 / 16x1 NVFP4 operands). */
static double copies(const px_hw *hw, px_precision p)
{
    switch (p) {
    case PX_PREC_FP8:
    case PX_PREC_FP8_CS:
        /* Blackwell-class parts (hardware block scales) take any layout */
        return hw->mxfp8_flops > 0.0 ? 1.0 : 2.0;
    default: return 2.0;
    }
}

/* Bytes one cast reads: the tensor once, and once more for its amax under
 * per-tensor current scaling (TE's compute_amax before the cast; torchao's
 * tensorwise tensor_to_amax). */
static double cast_read_bytes(px_precision p, double e_b)
{
    return p == PX_PREC_FP8_CS ? 2.0 * e_b : e_b;
}

/* Bytes of casting `elems` elements of an e_b-byte tensor: one read (two
 * under current scaling), the quantised copies written. */
static double cast_bytes(const px_hw *hw, px_precision p, double e_b, double elems, bool fused)
{
    double out = copies(hw, p) * (data_bytes(p) + scale_bytes(p));
    /* a norm that writes the quantised tensor itself (delayed scaling: the
     * scale is known before the kernel) saves its bf16 write and the re-read */
    if (fused && p == PX_PREC_FP8)
        return elems * (out > e_b ? out - e_b : 0.0);
    return elems * (cast_read_bytes(p, e_b) + out);
}

/* Bytes of one cast of `elems` elements to a single quantised copy (the
 * layout one GEMM reads). */
static double cast_once_bytes(px_precision p, double e_b, double elems)
{
    return elems * (cast_read_bytes(p, e_b) + data_bytes(p) + scale_bytes(p));
}

/* torchao's rowwise recipe runs its two gradient GEMMs (slow accumulation)
 * on cuBLAS's tensorwise kernel with unit scales and multiplies the bf16
 * output by the row and column scales afterwards, a pass of its own
 * (pytorch/ao torchao/float8/float8_ops.py addmm_float8_unwrapped: "the
 * rowwise CUTLASS-based kernel is so slow without fast-accum"; under
 * torch.compile one more kernel per GEMM, pytorch/ao#2184): that pass reads
 * and writes the input gradient (T x k) and the weight gradient (k x n). */
static double rowwise_rescale_bytes(px_precision p, double e_b, const px_prec_linear *l)
{
    if (p != PX_PREC_FP8_ROWWISE)
        return 0.0;
    return 2.0 * e_b * (l->T * l->k + l->k * l->n);
}

void px_prec_cast_bytes(const px_hw *hw, px_precision p, double e_b, const px_prec_linear *lin,
                        int n_lin, bool recast, double *fwd_bytes, double *bwd_bytes,
                        double *weight_bytes_step)
{
    *fwd_bytes = *bwd_bytes = *weight_bytes_step = 0.0;
    if (!px_prec_is_low(p))
        return;
    for (int i = 0; i < n_lin; i++) {
        const px_prec_linear *l = &lin[i];
        double in = l->T * l->k, out = l->T * l->n, wt = l->k * l->n;
        *bwd_bytes += rowwise_rescale_bytes(p, e_b, l);
        if (recast) {
            /* torchao (matmul_with_hp_or_float8_args, mx_mm): the forward
             * casts the input and the weight for its GEMM; the backward
             * casts the output gradient once for each of its two GEMMs and
             * the saved bf16 input and weight again, along the axis each
             * GEMM reduces over; nothing is cached between micro-batches */
            *fwd_bytes += cast_once_bytes(p, e_b, in) + cast_once_bytes(p, e_b, wt);
            *bwd_bytes += 2.0 * cast_once_bytes(p, e_b, out) + cast_once_bytes(p, e_b, in) +
                          cast_once_bytes(p, e_b, wt);
            continue;
        }
        *fwd_bytes += cast_bytes(hw, p, e_b, in, l->input_from_norm);
        *bwd_bytes += cast_bytes(hw, p, e_b, out, false);
        /* the bf16 weight cast once per step (TE caches it over the
         * micro-batches: is_first_microbatch) */
        *weight_bytes_step += cast_bytes(hw, p, e_b, wt, false);
    }
}

double px_prec_weight_bytes_per_param(const px_hw *hw, px_precision p, double e_b,
                                      bool quantized_params)
{
    if (!px_prec_is_low(p))
        return 0.0;
    return copies(hw, p) * (data_bytes(p) + scale_bytes(p)) - (quantized_params ? e_b : 0.0);
}

double px_prec_param_gather_bytes(px_precision p, double e_b)
{
    return px_prec_elem_bytes(p, e_b);
}

double px_prec_saved_act_bytes(px_precision p, double e_b)
{
    return px_prec_elem_bytes(p, e_b);
}

/* The most linear layers one layer has: MLA with a query LoRA (4), the
 * output projection (1), the routed experts' pair (2) and the shared
 * experts' pair (2). */
enum { PX_LAYER_MAX_LINEARS = 4 + 1 + 2 + 2 };

/* The linear layers of one layer as the quantisation sees them; lin holds
 * PX_LAYER_MAX_LINEARS. */
static int layer_linears(const px_act_shape *sh, px_prec_linear *lin)
{
    double t = sh->tp > 0 ? sh->tp : 1, T = sh->s * sh->b, h = sh->h;
    double a_t = sh->a / t, kv_t = sh->kv >= t ? sh->kv / t : 1.0;
    double up = sh->gated ? 2.0 : 1.0;
    int n = 0;
    if (px_shape_mamba(sh)) { /* in_proj (norm-fused) and out_proj */
        lin[n++] = (px_prec_linear){T, h, sh->m_in / t, true};
        lin[n++] = (px_prec_linear){T, sh->m_inner / t, h, false};
    }
    if (!px_shape_attention(sh)) {
        /* no attention projections */
    } else if (sh->q_lora > 0.0 || sh->kv_lora > 0.0) {
        double nope = sh->dq - sh->rope_dim;
        if (sh->q_lora > 0.0) {
            lin[n++] = (px_prec_linear){T, h, sh->q_lora, true};
            lin[n++] = (px_prec_linear){T, sh->q_lora, a_t * sh->dq, false};
        } else {
            lin[n++] = (px_prec_linear){T, h, a_t * sh->dq, true};
        }
        lin[n++] = (px_prec_linear){T, h, sh->kv_lora + sh->rope_dim, true};
        lin[n++] = (px_prec_linear){T, sh->kv_lora, a_t * (nope + sh->dv), false};
    } else {
        lin[n++] = (px_prec_linear){T, h, a_t * sh->dq + kv_t * (sh->dq + sh->dv), true};
    }
    if (px_shape_attention(sh))
        lin[n++] = (px_prec_linear){T, a_t * sh->dv, h, false};
    if (sh->moe) {
        double etp = sh->etp > 0 ? sh->etp : 1;
        double tok = T * sh->top_k * etp / t, fe = sh->moe_f / etp;
        /* the routed rows are cast after the dispatch (not norm-fused); the
         * other local experts' weights: px_prec_layer_cast_s */
        lin[n++] = (px_prec_linear){tok, h, up * fe, false};
        lin[n++] = (px_prec_linear){tok, fe, h, false};
        if (sh->n_shared > 0.0) {
            double fs = sh->n_shared * sh->moe_f / t;
            lin[n++] = (px_prec_linear){T, h, up * fs, true};
            lin[n++] = (px_prec_linear){T, fs, h, false};
        }
    } else if (px_shape_dense_mlp(sh)) {
        lin[n++] = (px_prec_linear){T, h, up * sh->f / t, true};
        lin[n++] = (px_prec_linear){T, sh->f / t, h, false};
    }
    assert(n <= PX_LAYER_MAX_LINEARS);
    return n;
}

void px_prec_layer_cast_s(const px_hw *hw, const px_act_shape *sh, px_precision p,
                          int64_t n_micro, double *fwd_s, double *bwd_s)
{
    *fwd_s = *bwd_s = 0.0;
    if (!px_prec_is_low(p))
        return;
    px_prec_linear lin[PX_LAYER_MAX_LINEARS];
    int n = layer_linears(sh, lin);
    double e_b = sh->elem_bytes > 0 ? sh->elem_bytes : 2;
    double f = 0.0, b = 0.0, w = 0.0;
    px_prec_cast_bytes(hw, p, e_b, lin, n, sh->quant_hp_input, &f, &b, &w);
    if (sh->moe) {
        /* every local expert's weights are cast, not one: E/ep - 1 more
         * pairs of expert matrices */
        double etp = sh->etp > 0 ? sh->etp : 1, ep = sh->ep > 0 ? sh->ep : 1;
        double up = sh->gated ? 2.0 : 1.0, fe = sh->moe_f / etp;
        double extra = sh->n_experts / ep - 1.0;
        if (extra > 0.0) {
            px_prec_linear wl[2] = {{0, sh->h, up * fe, false}, {0, fe, sh->h, false}};
            double f2, b2, w2;
            px_prec_cast_bytes(hw, p, e_b, wl, 2, sh->quant_hp_input, &f2, &b2, &w2);
            f += extra * f2;
            b += extra * b2;
            w += extra * w2;
        }
    }
    double m = n_micro > 0 ? (double)n_micro : 1.0;
    *fwd_s = px_time_mem_s(hw, f + w / m);
    *bwd_s = px_time_mem_s(hw, b);
}

void px_prec_act_adjust(const px_act_shape *sh, px_precision p, px_act_ops *o)
{
    if (!px_prec_is_low(p) || sh->recompute == PX_RECOMPUTE_FULL || sh->quant_hp_input)
        return;
    double e = sh->elem_bytes > 0 ? sh->elem_bytes : 2;
    double r = px_prec_saved_act_bytes(p, e) / e; /* quantised / activation bytes */
    /* the output projection's input is the attention core's output, which
     * the flash kernel keeps in the activation dtype for its own backward;
     * Megatron lets linear_proj save that tensor instead of a quantised copy
     * for every recipe but delayed scaling (attention.py,
     * set_save_original_input), which keeps both */
    double proj_r = p == PX_PREC_FP8 ? 1.0 + r : 1.0;
    double d_att = (r - 1.0) * o->qkv_in + (proj_r - 1.0) * o->proj_in;
    /* an MoE layer's norm output feeds the bf16 router and the dispatch:
     * it stays in the activation dtype */
    double mlp_in_q = sh->moe ? 0.0 : o->mlp_in;
    double d_mlp = (r - 1.0) * (mlp_in_q + o->act_out);
    o->qkv_in *= r;
    o->proj_in *= proj_r;
    if (!sh->moe)
        o->mlp_in *= r;
    o->act_out *= r;
    if (sh->moe) {
        /* the experts' down-projection input, one of the (up + 1) f-wide
         * tensors of moe_gate_up */
        double up = sh->gated ? 2.0 : 1.0;
        double down_in = o->moe_gate_up / (up + 1.0);
        o->moe_gate_up -= (1.0 - r) * down_in;
        /* the routed rows received are the first grouped GEMM's input: TE's
         * GroupedLinear saves its quantised copy for the backward, not the
         * bf16 rows (transformer_engine/pytorch/module/grouped_linear.py,
         * save_for_backward of inputmats; Megatron's experts.py asks for the
         * original input only when it offloads fc1) */
        double recv_saved = (1.0 - r) * o->moe_recv;
        o->moe_recv -= recv_saved;
        o->expert -= (1.0 - r) * down_in + recv_saved;
        d_mlp -= (1.0 - r) * down_in + recv_saved;
    }
    o->attention += d_att;
    o->mlp += d_mlp;
    o->total += d_att + d_mlp;
}
