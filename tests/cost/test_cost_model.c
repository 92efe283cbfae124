/* test_cost_model.c — the pieces of the cost model against independent hand
 * formulas: Korthikanti's six rows per operator, GQA/SwiGLU exactness, the
 * schedules' in-flight counts and bubbles, communication volumes, node
 * crossing, ZeRO stages, the efficiency model and the goodput math. */
#include <math.h>
#include <string.h>

#include "px_cost.h"
#include "px_efficiency.h"
#include "px_test.h"

static px_act_shape gpt(double s, double b, double h, double a, int t, bool sp,
                        px_recompute rc)
{
    px_act_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.s = sh.s_kv = s;
    sh.b = b;
    sh.h = h;
    sh.a = sh.kv = a;
    sh.dq = sh.dv = h / a;
    sh.f = 4 * h;
    sh.dropout = true;
    sh.elem_bytes = 2;
    sh.tp = t;
    sh.sp = sp;
    sh.flash = false; /* Korthikanti's table stores the s x s scores */
    sh.recompute = rc;
    return sh;
}

static void korthikanti_rows(void)
{
    /* sizes chosen so that no two terms coincide: s != h, b > 1 */
    const double s = 2048, b = 2, h = 4096, a = 32;
    const int t = 4;
    struct {
        const char *name;
        int t;
        bool sp;
        px_recompute rc;
        int row;
    } rows[6] = {
        {"no parallelism", 1, false, PX_RECOMPUTE_NONE, 0},
        {"tensor parallel", t, false, PX_RECOMPUTE_NONE, 1},
        {"tensor + sequence parallel", t, true, PX_RECOMPUTE_NONE, 2},
        {"tensor parallel + selective", t, false, PX_RECOMPUTE_SELECTIVE, 3},
        {"tensor + sequence + selective", t, true, PX_RECOMPUTE_SELECTIVE, 4},
        {"full recompute (SP)", t, true, PX_RECOMPUTE_FULL, 5},
    };
    for (int i = 0; i < 6; i++) {
        px_act_shape sh = gpt(s, b, h, a, rows[i].t, rows[i].sp, rows[i].rc);
        px_act_ops o;
        px_cost_act_layer(&sh, &o);
        double want = px_cost_korthikanti_row(rows[i].row, s, b, h, a, rows[i].t, rows[i].sp);
        double sum = o.norm1_in + o.norm2_in + o.qkv_in + o.q + o.k + o.v + o.softmax_out +
                     o.score_mask + o.score_drop + o.proj_in + o.attn_mask + o.mlp_in +
                     o.fc1_out + o.act_out + o.mlp_mask;
        CHECK_MSG(fabs(sum - want) <= 1e-9 * want, "%s: per-operator sum %.6g != table %.6g",
                  rows[i].name, sum, want);
        CHECK_MSG(fabs(o.total - want) <= 1e-9 * want, "%s: total %.6g != %.6g", rows[i].name,
                  o.total, want);
    }
    /* the decomposition of the 34: attention 11 + 5as/h, MLP 19, norms 4 */
    px_act_shape sh = gpt(s, b, h, a, 1, false, PX_RECOMPUTE_NONE);
    px_act_ops o;
    px_cost_act_layer(&sh, &o);
    double sbh = s * b * h;
    CHECK_CLOSE(o.attention, sbh * (11 + 5 * a * s / h), 1e-12, 0);
    CHECK_CLOSE(o.mlp, 19 * sbh, 1e-12, 0);
    CHECK_CLOSE(o.norm, 4 * sbh, 1e-12, 0);
    /* full recompute without SP: 2sbh */
    sh = gpt(s, b, h, a, t, false, PX_RECOMPUTE_FULL);
    px_cost_act_layer(&sh, &o);
    CHECK_CLOSE(o.total, 2 * sbh, 1e-12, 0);
    /* FlashAttention drops the 5as/h term and keeps fp32 row statistics */
    sh = gpt(s, b, h, a, t, true, PX_RECOMPUTE_NONE);
    sh.flash = true;
    px_cost_act_layer(&sh, &o);
    CHECK_CLOSE(o.total, sbh * 34 / t + 4 * s * b * a / t, 1e-12, 0);
}

/* Llama block: GQA, SwiGLU, RMSNorm, no dropout; each tensor by hand. */
static void llama_exact(void)
{
    px_act_shape sh;
    memset(&sh, 0, sizeof sh);
    double s = 1024, b = 3, h = 2048, a = 16, kv = 4, d = 128, f = 5632;
    int t = 2;
    sh.s = sh.s_kv = s;
    sh.b = b;
    sh.h = h;
    sh.a = a;
    sh.kv = kv;
    sh.dq = sh.dv = d;
    sh.f = f;
    sh.gated = true;
    sh.dropout = false;
    sh.elem_bytes = 2;
    sh.tp = t;
    sh.sp = true;
    sh.flash = true;
    px_act_ops o;
    px_cost_act_layer(&sh, &o);
    double e = 2, sb = s * b;
    double want = e * sb * h / t * 4          /* 2 norm inputs, qkv input, mlp input (SP) */
                  + e * sb * a * d / t        /* Q */
                  + 2 * e * sb * kv * d / t   /* K, V (GQA) */
                  + 4.0 * sb * a / t          /* flash row statistics, fp32 */
                  + e * sb * a * d / t        /* output projection input */
                  + 2 * e * sb * f / t        /* gate and up outputs */
                  + e * sb * f / t;           /* down-projection input */
    CHECK_CLOSE(o.total, want, 1e-12, 0);
    CHECK(o.score_mask == 0 && o.attn_mask == 0 && o.mlp_mask == 0); /* no dropout */
    /* fp32 (the CPU backend) doubles every tensor but the fp32 statistics */
    sh.elem_bytes = 4;
    px_act_ops o4;
    px_cost_act_layer(&sh, &o4);
    CHECK_CLOSE(o4.total - o4.softmax_stats, 2 * (o.total - o.softmax_stats), 1e-12, 0);

    /* DTensor's SP (torchtitan): the QKV and MLP inputs kept gathered, the
     * whole sequence each; the rest as Megatron's */
    sh.elem_bytes = 2;
    sh.sp_gathered_in = true;
    px_act_ops g;
    px_cost_act_layer(&sh, &g);
    CHECK_CLOSE(g.qkv_in, e * sb * h, 1e-12, 0);
    CHECK_CLOSE(g.mlp_in, e * sb * h, 1e-12, 0);
    CHECK_CLOSE(g.total - o.total, 2 * e * sb * h * (1.0 - 1.0 / t), 1e-12, 0);
    /* full recompute keeps the layer input alone, sharded */
    sh.recompute = PX_RECOMPUTE_FULL;
    px_cost_act_layer(&sh, &g);
    CHECK_CLOSE(g.total, e * sb * h / t, 1e-12, 0);
    sh.recompute = PX_RECOMPUTE_NONE;
    /* a MoE layer's router reads the shard: only the QKV input is gathered */
    sh.moe = true;
    sh.n_experts = 8;
    sh.top_k = 2;
    sh.moe_f = 1024;
    sh.ep = sh.etp = 1;
    px_cost_act_layer(&sh, &g);
    CHECK_CLOSE(g.qkv_in, e * sb * h, 1e-12, 0);
    CHECK_CLOSE(g.mlp_in, e * sb * h / t, 1e-12, 0);
}

static void schedules(void)
{
    /* 1F1B: stage i holds p − i micro-batches (at most m) */
    for (int i = 0; i < 8; i++)
        CHECK(px_cost_inflight(PX_SCHED_1F1B, 8, 1, 64, i) == 8 - i);
    CHECK(px_cost_inflight(PX_SCHED_1F1B, 8, 1, 3, 0) == 3);
    CHECK(px_cost_inflight(PX_SCHED_GPIPE, 8, 1, 64, 5) == 64);
    /* ZB-H1: W right after B, so 1F1B's count on every stage (and
     * interleaved's with v > 1); one micro-batch (chunk) past B */
    for (int i = 0; i < 8; i++) {
        CHECK(px_cost_inflight(PX_SCHED_ZB_H1, 8, 1, 64, i) == 8 - i);
        CHECK(px_cost_inflight_bw(PX_SCHED_ZB_H1, 8, 1, 64, i) == 1);
        CHECK(px_cost_inflight(PX_SCHED_ZB_H1, 8, 2, 64, i) ==
              px_cost_inflight(PX_SCHED_INTERLEAVED, 8, 2, 64, i));
    }
    CHECK(px_cost_inflight(PX_SCHED_ZB_H1, 8, 1, 3, 0) == 3);
    CHECK(px_cost_inflight_bw(PX_SCHED_ZB_H1, 4, 2, 8, 0) == 0.5);
    /* no W, nothing past B waits */
    CHECK(px_cost_inflight_bw(PX_SCHED_1F1B, 8, 1, 64, 0) == 0);
    CHECK(px_cost_inflight_bw(PX_SCHED_INTERLEAVED, 8, 2, 64, 0) == 0);
    /* ZB-H2 past B at the peak: p + i with enough micro-batches (the W tail
     * of the later stages), m − 2(p−1−i) when the warm-up eats them, >= 1 */
    CHECK(px_cost_inflight_bw(PX_SCHED_ZB_H2, 4, 1, 64, 0) == 4);
    CHECK(px_cost_inflight_bw(PX_SCHED_ZB_H2, 4, 1, 64, 3) == 7);
    CHECK(px_cost_inflight_bw(PX_SCHED_ZB_H2, 4, 1, 8, 0) == 2);
    CHECK(px_cost_inflight_bw(PX_SCHED_ZB_H2, 4, 1, 8, 2) == 6);
    CHECK(px_cost_inflight_bw(PX_SCHED_ZB_H2, 4, 1, 3, 1) == 1);
    /* ZB-H2: 2p − 1 on every stage (tests/unit/test_schedule.c checks
     * that the executor's order holds exactly that) */
    CHECK(px_cost_inflight(PX_SCHED_ZB_H2, 8, 1, 64, 0) == 15);
    CHECK(px_cost_inflight(PX_SCHED_ZB_H2, 8, 1, 64, 7) == 15);
    CHECK(px_cost_inflight(PX_SCHED_ZB_H2, 8, 1, 5, 3) == 5);
    /* interleaved: stage 0 holds L layers' worth × (1 + (p−1)/(p·v)) */
    int p = 4, v = 2;
    double L = 80;
    double layers = px_cost_inflight(PX_SCHED_INTERLEAVED, p, v, 64, 0) * (L / p);
    CHECK_CLOSE(layers, L * (1.0 + (p - 1.0) / (p * v)), 1e-12, 0);
    p = 8;
    v = 5;
    layers = px_cost_inflight(PX_SCHED_INTERLEAVED, p, v, 64, 0) * (L / p);
    CHECK_CLOSE(layers, L * (1.0 + (p - 1.0) / (p * v)), 1e-12, 0);
    /* bubbles: GPipe = 1F1B (p−1)/m of ideal; interleaved /v; ZB-H1 a third; ZB-H2 0 */
    CHECK_CLOSE(px_cost_bubble_over_ideal(PX_SCHED_GPIPE, 4, 1, 64), 3.0 / 64, 1e-12, 0);
    CHECK_CLOSE(px_cost_bubble_over_ideal(PX_SCHED_1F1B, 4, 1, 64), 3.0 / 64, 1e-12, 0);
    CHECK_CLOSE(px_cost_bubble_over_ideal(PX_SCHED_INTERLEAVED, 4, 2, 64), 3.0 / 128, 1e-12, 0);
    CHECK_CLOSE(px_cost_bubble_over_ideal(PX_SCHED_ZB_H1, 4, 1, 64), 1.0 / 64, 1e-12, 0);
    CHECK(px_cost_bubble_over_ideal(PX_SCHED_ZB_H2, 4, 1, 64) == 0.0);
    /* too few micro-batches to fill the bubble with W work */
    CHECK_CLOSE(px_cost_bubble_over_ideal(PX_SCHED_ZB_H2, 4, 1, 6), 3.0 / 18, 1e-12, 0);
    CHECK_CLOSE(px_cost_bubble_over_ideal(PX_SCHED_ZB_H2, 4, 1, 2), 3.0 / 2, 1e-12, 0);
    CHECK_CLOSE(px_cost_bubble_over_ideal(PX_SCHED_ZB_H1, 4, 1, 3), 1.0, 1e-12, 0);
    CHECK(px_cost_bubble_over_ideal(PX_SCHED_1F1B, 1, 1, 64) == 0.0);
    CHECK_CLOSE(px_cost_bubble_fraction(PX_SCHED_1F1B, 8, 1, 8), 7.0 / 15, 1e-12, 0);
}

static void comm_volumes(void)
{
    /* ring factors (nccl-tests): all-reduce 2(n−1)/n, gather/scatter/a2a (n−1)/n */
    CHECK_CLOSE(px_coll_wire_bytes(PX_COLL_ALLREDUCE, 4, 1000), 1500, 1e-12, 0);
    CHECK_CLOSE(px_coll_wire_bytes(PX_COLL_ALLGATHER, 4, 1000), 750, 1e-12, 0);
    CHECK_CLOSE(px_coll_wire_bytes(PX_COLL_REDUCE_SCATTER, 8, 800), 700, 1e-12, 0);
    CHECK_CLOSE(px_coll_wire_bytes(PX_COLL_ALLTOALL, 2, 800), 400, 1e-12, 0);
    CHECK(px_coll_wire_bytes(PX_COLL_ALLREDUCE, 1, 800) == 0);
    CHECK(px_coll_steps(PX_COLL_ALLREDUCE, 8) == 14 && px_coll_steps(PX_COLL_ALLGATHER, 8) == 7);
    /* α·steps + bytes/bw */
    px_hw hw;
    memset(&hw, 0, sizeof hw);
    hw.intra_bw = 100e9;
    hw.intra_lat_s = 1e-6;
    hw.inter_bw = 10e9;
    hw.inter_lat_s = 1e-5;
    hw.gpus_per_node = 8;
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 4, 1e9, false), 6e-6 + 1.5e9 / 100e9,
                1e-12, 0);
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 4, 1e9, true), 6e-5 + 1.5e9 / 10e9,
                1e-12, 0);
    /* a torus has no cliff */
    hw.torus = true;
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 4, 1e9, true), 6e-6 + 1.5e9 / 100e9,
                1e-12, 0);
    hw.torus = false;
    /* measured all-reduce points replace α and bw */
    hw.n_coll_points = 1;
    hw.allreduce_points[0].n_ranks = 2;
    hw.allreduce_points[0].lat_s = 2e-5;
    hw.allreduce_points[0].bw = 4e9;
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 2, 1e8, false), 2e-5 + 1e8 / 4e9, 1e-12,
                0);
    /* TP per layer: 4 all-reduces of 2bsh */
    CHECK_CLOSE(px_cost_tp_bytes_per_layer(1024, 2, 1024, 4, 2),
                4 * 1.5 * 2.0 * 1024 * 2 * 1024, 1e-12, 0);
    CHECK_CLOSE(px_cost_pp_msg_bytes(1024, 2, 1024, 4, true, 2), 2.0 * 2 * 1024 * 1024 / 4,
                1e-12, 0);
}

static void zero_stages(void)
{
    px_memory m0, m1, m2, m3;
    double n = 1e9;
    px_cost_static_formula(n, 2, 2, 8, 0, 2, true, &m0);
    px_cost_static_formula(n, 2, 2, 8, 1, 2, true, &m1);
    px_cost_static_formula(n, 2, 2, 8, 2, 2, true, &m2);
    px_cost_static_formula(n, 2, 2, 8, 3, 2, true, &m3);
    double per = n / 4;
    CHECK_CLOSE(m0.weights, 2 * per, 1e-12, 0);
    CHECK_CLOSE(m0.grads, 4 * per, 1e-12, 0);
    CHECK_CLOSE(m0.optimizer, 12 * per, 1e-12, 0);
    CHECK_CLOSE(m1.optimizer, 12 * per / 8, 1e-12, 0);
    CHECK(m1.grads == m0.grads && m1.weights == m0.weights);
    CHECK_CLOSE(m2.grads, 4 * per / 8, 1e-12, 0);
    CHECK(m2.weights == m0.weights);
    CHECK_CLOSE(m3.weights, 2 * per / 8, 1e-12, 0);
    CHECK_CLOSE(m3.total, 18 * per / 8, 1e-9, 0);
    /* the fp32 CPU backend: 4 + 4 + 8 */
    px_bytes_per_param b4 = px_cost_bytes_per_param(4, false);
    CHECK(b4.weights == 4 && b4.grads == 4 && b4.optimizer == 8);
    px_bytes_per_param b2 = px_cost_bytes_per_param(2, false);
    CHECK(b2.weights == 2 && b2.grads == 2 && b2.optimizer == 12);
}

/* The once-a-step gradient all-reduce (ZeRO 0) hides under the backward:
 * one micro-batch's with one chunk a stage; with Megatron's interleaved
 * schedule each of the v chunks' share is launched when that chunk's last
 * backward ends, p chunk-steps apart, so it hides under ((v - 1)·p + 1)
 * chunk-backwards of w / v (and each share under its own w / v).  The
 * hidden part still costs comm_overlap_cost of its time in SMs. */
static void dp_chunked_overlap(void)
{
    px_model m;
    px_hw hw;
    px_error err;
    CHECK(px_model_load("llama3-70b", NULL, &m, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &m, &hw, &err) == PX_OK);
    double exposed[2], total[2], w[2];
    int v_of[2] = {1, 4};
    for (int i = 0; i < 2; i++) {
        px_parallel par;
        px_parallel_init(&par);
        par.tp = 8;
        par.pp = 4;
        par.dp = 64; /* a ring over 64 nodes: far longer than the windows */
        par.vpp = v_of[i];
        par.schedule = v_of[i] > 1 ? PX_SCHED_INTERLEAVED : PX_SCHED_1F1B;
        par.micro_batch = 1;
        par.n_micro = 16;
        par.seq_len = 4096;
        par.zero = 0;
        par.recompute = PX_RECOMPUTE_NONE;
        par.dp_overlap = true;
        px_prediction pred;
        px_cost_detail d;
        CHECK(px_cost_eval(&ctx, &par, 0, 0, &pred, &d, &err) == PX_OK);
        double f = hw.comm_overlap_cost;
        total[i] = d.dp_total_s;
        exposed[i] = (d.dp_exposed_s - f * d.dp_total_s) / (1.0 - f);
        w[i] = d.compute_bwd_s / (double)par.n_micro;
    }
    CHECK_CLOSE(total[1], total[0], 1e-12, 0);
    CHECK_CLOSE(exposed[0], total[0] - w[0], 1e-9, 0);
    double v = 4, p = 4, k = ((v - 1) * p + 1) / v;
    CHECK(total[1] - k * w[1] > (total[1] - w[1]) / v);
    CHECK_CLOSE(exposed[1], total[1] - k * w[1], 1e-9, 0);
    CHECK(exposed[1] < exposed[0]);
}

static void efficiency(void)
{
    px_hw hw;
    memset(&hw, 0, sizeof hw);
    hw.peak_flops = 1e15;
    hw.gemm_eff_max = 0.8;
    hw.gemm_eff_half_dim = 128;
    hw.hbm_bw = 3e12;
    hw.mem_bound_eff = 0.5;
    double big = px_eff_gemm(&hw, 8192, 8192, 8192);
    double thin = px_eff_gemm(&hw, 8192, 128, 8192);
    CHECK(big > thin && big < 0.8 && big > 0.7);
    CHECK_CLOSE(thin, 0.8 * 0.5 * pow(8192.0 / (8192 + 128), 2), 1e-12, 0);
    CHECK_CLOSE(px_time_gemm_s(&hw, 8192, 8192, 8192), 2.0 * 8192 * 8192 * 8192 / (1e15 * big),
                1e-12, 0);
    CHECK_CLOSE(px_time_mem_s(&hw, 1.5e12), 1.0, 1e-12, 0);
    /* measured points: exact at a point, between neighbours in between */
    hw.n_gemm_points = 2;
    hw.gemm_points[0] = (px_gemm_point){256, 256, 256, 0.2e15};
    hw.gemm_points[1] = (px_gemm_point){4096, 4096, 4096, 0.6e15};
    CHECK_CLOSE(px_eff_gemm(&hw, 256, 256, 256), 0.2, 1e-12, 0);
    CHECK_CLOSE(px_eff_gemm(&hw, 4096, 4096, 4096), 0.6, 1e-12, 0);
    double mid = px_eff_gemm(&hw, 1024, 1024, 1024);
    CHECK(mid > 0.2 && mid < 0.6);
}

static void goodput(void)
{
    double mtbf_h = 50000, gpus = 16384, bytes = 2e9, bw = 1e9, restart = 600;
    px_goodput g = px_cost_goodput(mtbf_h, (int)gpus, bytes, bw, restart);
    double job = mtbf_h * 3600 / gpus, delta = bytes / bw, tau = sqrt(2 * delta * job);
    CHECK_CLOSE(g.job_mtbf_s, job, 1e-12, 0);
    CHECK_CLOSE(g.ckpt_write_s, 2.0, 1e-12, 0);
    CHECK_CLOSE(g.interval_s, tau, 1e-12, 0);
    CHECK_CLOSE(g.lost_fraction, delta / tau + tau / (2 * job) + restart / job, 1e-12, 0);
    /* more GPUs: fails more often, loses more */
    px_goodput g2 = px_cost_goodput(mtbf_h, 2 * (int)gpus, bytes, bw, restart);
    CHECK(g2.lost_fraction > g.lost_fraction);
    CHECK(g2.interval_s < g.interval_s);
}

/* An MoE layer keeps what the executor's tracked allocator holds for it
 * (docs/executor.md): per routed copy (top_k of each of the GPU's T/t
 * tokens) the received row, the gate and up outputs, the SwiGLU output
 * (kept by Megatron, rebuilt as a temporary by the executor) and the
 * returned expert output; fp32 router probabilities over all experts; four
 * 4-byte routing entries per copy.  h != moe_f so that the terms cannot stand in
 * for each other. */
static void moe_activations(void)
{
    for (int sp = 0; sp <= 1; sp++)
        for (int t = 1; t <= 4; t *= 2) {
            px_act_shape sh;
            memset(&sh, 0, sizeof sh);
            sh.s = sh.s_kv = 4096;
            sh.b = 2;
            sh.h = 4096;
            sh.a = sh.kv = 32;
            sh.dq = sh.dv = 128;
            sh.gated = true;
            sh.elem_bytes = 2;
            sh.tp = t;
            sh.sp = sp && t > 1;
            sh.flash = true;
            sh.recompute = PX_RECOMPUTE_NONE;
            sh.moe = true;
            sh.n_experts = 8;
            sh.top_k = 2;
            sh.moe_f = 14336;
            sh.ep = 8;
            sh.etp = 1;
            px_act_ops o;
            px_cost_act_layer(&sh, &o);
            double tm = sh.s * sh.b / t, copies = tm * sh.top_k;
            CHECK_CLOSE(o.router, 4.0 * tm * sh.n_experts, 1e-12, 0.0);
            CHECK_CLOSE(o.moe_recv, 2.0 * copies * sh.h, 1e-12, 0.0);
            CHECK_CLOSE(o.moe_gate_up, 2.0 * copies * 3.0 * sh.moe_f, 1e-12, 0.0);
            CHECK_CLOSE(o.moe_combine, 2.0 * copies * sh.h, 1e-12, 0.0);
            CHECK_CLOSE(o.moe_meta, 16.0 * copies, 1e-12, 0.0);
            CHECK_CLOSE(o.expert, o.moe_recv + o.moe_gate_up + o.moe_combine + o.moe_meta, 1e-12, 0.0);
            /* no dense MLP tensors in a routed layer without shared experts */
            CHECK(o.fc1_out == 0.0 && o.act_out == 0.0);
            /* full recomputation keeps only the layer input */
            sh.recompute = PX_RECOMPUTE_FULL;
            px_cost_act_layer(&sh, &o);
            CHECK(o.expert == 0.0 && o.router == 0.0);
        }
}

/* The output gradients a zero-bubble stage keeps from B to W, against the
 * hand formula for tiny-llama (h 64, 4 heads of 16, 2 kv heads, SwiGLU f
 * 176) at TP 2 + SP, PP 2 (one layer a stage), bf16: per layer dY of QKV
 * (a + 2kv) d/t, of the output projection h/t (SP shard), of gate|up 2f/t
 * and of down h/t, times the micro-batches past B on the worst stage. */
static void zb_gradients(void)
{
    px_model model;
    px_hw hw;
    px_error err;
    if (px_model_load("tiny-llama", NULL, &model, &err) != PX_OK ||
        px_hw_load("h100-sxm", NULL, &hw, &err) != PX_OK) {
        CHECK_MSG(0, "load: %s", err.msg);
        return;
    }
    px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &model, &hw, &err) == PX_OK);
    px_parallel par;
    px_parallel_init(&par);
    par.tp = 2;
    par.sp = true;
    par.pp = 2;
    par.micro_batch = 2;
    par.n_micro = 8;
    par.seq_len = 32;
    const double t = 2, tok = 32 * 2, e = hw.dtype_bytes > 0 ? hw.dtype_bytes : 2;
    const double layer = e * tok * ((4 + 2 * 2) * 16 / t + 64 / t + 2 * 176 / t + 64 / t);
    px_schedule scheds[3] = {PX_SCHED_1F1B, PX_SCHED_ZB_H1, PX_SCHED_ZB_H2};
    px_memory mem[3];
    for (int i = 0; i < 3; i++) {
        par.schedule = scheds[i];
        px_cost_detail d;
        memset(&d, 0, sizeof d);
        px_cost_memory(&ctx, &par, &mem[i], &d);
        double want_bw = px_cost_inflight_bw(par.schedule, 2, 1, 8, mem[i].worst_stage);
        CHECK_MSG(d.inflight_bw == want_bw && fabs(d.buf_zb_grads - want_bw * layer) <= 1e-6,
                  "%s: %g past B keep %g bytes, want %g x %g", px_schedule_name(scheds[i]),
                  d.inflight_bw, d.buf_zb_grads, want_bw, layer);
    }
    CHECK(mem[0].total < mem[1].total && mem[1].total < mem[2].total);
}

int main(void)
{
    zb_gradients();
    moe_activations();
    korthikanti_rows();
    llama_exact();
    schedules();
    comm_volumes();
    zero_stages();
    dp_chunked_overlap();
    efficiency();
    goodput();
    return px_test_result("cost_model");
}
