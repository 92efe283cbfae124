/* test_cost_fsdp.c — ZeRO-3 / FSDP as frameworks run it (px_cost_fsdp.h):
 * the gathered-parameter buffers follow prefetch and reshard, the
 * per-layer gathers and reduce-scatters hide under the layers' compute but
 * the first and the last, hybrid sharding adds the replicas' all-reduce and
 * shards the state over the group only; Megatron's uneven split; a search
 * under a framework that has no hybrid sharding refuses --shard-group. */
#include <math.h>
#include <string.h>

#include "px_cost.h"
#include "px_cost_fsdp.h"
#include "px_framework.h"
#include "px_search.h"
#include "px_split_megatron.h"
#include "px_test.h"

static void buffers(void)
{
    px_fw_runtime run;
    memset(&run, 0, sizeof run);
    run.fsdp_prefetch_layers = 1;
    run.fsdp_reshard_after_forward = true;
    /* two layers gathered (bf16) and one unsharded gradient (bf16 + its
     * fp32 reduce copy) */
    CHECK_CLOSE(px_cost_fsdp_buffers(&run, 1e8, 32, 2, 4), 1e8 * (2 * 2 + 2 + 4), 1e-12, 0);
    /* kept gathered between forward and backward: every layer of the stage */
    run.fsdp_reshard_after_forward = false;
    CHECK_CLOSE(px_cost_fsdp_buffers(&run, 1e8, 32, 2, 2), 1e8 * (32 * 2 + 2), 1e-12, 0);
    double w, g, o;
    px_cost_fsdp_static(8e9, 8, 4, &w, &g, &o);
    CHECK_CLOSE(w + g + o, 8e9 * 16 / 8, 1e-12, 0); /* fp32 master + grads + Adam */
}

/* An A100 profile and a runtime that prefetches one layer and reshards
 * after forward; ag and rs: one 2e8-parameter layer's bf16 gather and fp32
 * reduce-scatter over 8 GPUs of a node. */
static void a100_layer(px_hw *hw, px_fw_runtime *run, double *ag, double *rs)
{
    px_error err;
    CHECK(px_hw_load("a100-80g", NULL, hw, &err) == PX_OK);
    memset(run, 0, sizeof *run);
    run->fsdp_prefetch_layers = 1;
    run->fsdp_reshard_after_forward = true;
    *ag = px_time_coll_s(hw, PX_COLL_ALLGATHER, 8, 2e8 * 2, false);
    *rs = px_time_coll_s(hw, PX_COLL_REDUCE_SCATTER, 8, 2e8 * 4, false);
}

static void timing(void)
{
    px_hw hw;
    px_fw_runtime run;
    double ag, rs;
    a100_layer(&hw, &run, &ag, &rs);
    px_fsdp_time t;
    /* long layers: only the first gather and the last reduce-scatter show */
    px_cost_fsdp_time(&hw, &run, 8, 1, false, false, 1.0, 2e8, 32, 2, 4, 1, 32.0, 64.0, 0.0, &t);
    CHECK_CLOSE(t.exposed_s, ag + rs, 1e-9, 0);
    CHECK_CLOSE(t.total_s, 32 * (2 * ag + rs) - ag, 1e-9, 0);
    /* no prefetch: every gather waits */
    run.fsdp_prefetch_layers = 0;
    px_cost_fsdp_time(&hw, &run, 8, 1, false, false, 1.0, 2e8, 32, 2, 4, 1, 32.0, 64.0, 0.0, &t);
    CHECK(t.exposed_s > 31 * ag);
    run.fsdp_prefetch_layers = 1;
    /* short layers: the communication that does not fit shows */
    px_cost_fsdp_time(&hw, &run, 8, 1, false, false, 1.0, 2e8, 32, 2, 4, 1, 32 * ag / 2, 32 * ag / 2,
                      0.0, &t);
    CHECK(t.exposed_s > 31 * (ag / 2) && t.exposed_s < t.total_s);
    /* hybrid: the gathers stay in the node; the replicas all-reduce once */
    px_fsdp_time full, hyb;
    px_cost_fsdp_time(&hw, &run, 64, 1, true, false, 1.0, 2e8, 32, 2, 4, 4, 1.0, 2.0, 0.0, &full);
    px_cost_fsdp_time(&hw, &run, 8, 8, false, true, 1.0, 2e8, 32, 2, 4, 4, 1.0, 2.0, 0.0, &hyb);
    CHECK_MSG(hyb.total_s < full.total_s, "hybrid %.3f s, full %.3f s", hyb.total_s,
              full.total_s);
    CHECK(hyb.total_s > 4 * 32 * (2 * ag + rs) - 4 * ag); /* + the replicas' all-reduce */
}

/* A pipeline stage kept gathered (torch.distributed.pipelining's FSDP
 * stages): one gather and one reduce-scatter of each layer a step, whatever
 * the micro-batches; the reduce-scatters after the last backward, exposed
 * in full; the replicas' all-reduce after them */
static void kept_stage(void)
{
    px_hw hw;
    px_fw_runtime run;
    double ag, rs;
    a100_layer(&hw, &run, &ag, &rs);
    CHECK(!px_cost_fsdp_stage_kept(&run, 4));
    run.fsdp_pp_grad_bytes = 2;
    CHECK(px_cost_fsdp_stage_kept(&run, 4) && !px_cost_fsdp_stage_kept(&run, 1));
    CHECK(!px_cost_fsdp_stage_kept(NULL, 4));
    px_fsdp_shard one = {8, false, 1.0, 2e8, 0.0, 0.0};
    px_fsdp_time k1, k8, per;
    /* long layers: the first gather and every reduce-scatter show */
    px_cost_fsdp_time_shards(&hw, &run, &one, 1, 1, false, 16, 2, 4, 1, true, 16.0, 32.0, 0.0,
                             &k1);
    px_cost_fsdp_time_shards(&hw, &run, &one, 1, 1, false, 16, 2, 4, 8, true, 16.0, 32.0, 0.0,
                             &k8);
    CHECK_CLOSE(k8.total_s, 16 * (ag + rs), 1e-9, 0);
    CHECK_CLOSE(k8.exposed_s, ag + 16 * rs, 1e-9, 0);
    CHECK(k1.total_s == k8.total_s && k1.exposed_s == k8.exposed_s && k1.bytes == k8.bytes);
    CHECK_CLOSE(k8.bytes, 16 * (px_coll_wire_bytes(PX_COLL_ALLGATHER, 8, 2e8 * 2) +
                                px_coll_wire_bytes(PX_COLL_REDUCE_SCATTER, 8, 2e8 * 4)),
                1e-12, 0);
    /* resharded every micro-batch instead: 8 times the gathers and
     * reduce-scatters, and twice the gathers */
    px_cost_fsdp_time_shards(&hw, &run, &one, 1, 1, false, 16, 2, 4, 8, false, 16.0, 32.0, 0.0,
                             &per);
    CHECK_CLOSE(per.total_s, 8 * (16 * (2 * ag + rs) - ag), 1e-9, 0);
    /* hybrid: the replicas' all-reduce has nothing left to hide under */
    px_fsdp_time hyb;
    px_cost_fsdp_time_shards(&hw, &run, &one, 1, 4, true, 16, 2, 4, 8, true, 16.0, 32.0, 0.0,
                             &hyb);
    double ar = px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 4, 16 * 2e8 * 4 / 8, true);
    CHECK_CLOSE(hyb.exposed_s - k8.exposed_s, ar, 1e-9, 0);
}

/* flat per-layer collectives over whole nodes use every NIC of the node */
static void rails(void)
{
    px_hw hw;
    px_error err;
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    px_fw_runtime run;
    memset(&run, 0, sizeof run);
    run.fsdp_flat_collectives = true;
    /* 8 NICs, but each GPU forwards at NVLink's bus rate: 370.8 / 47 GB/s */
    double nvlink_cap = 450e9 * 0.824 / (50e9 * 0.94);
    CHECK_CLOSE(px_cost_fsdp_rails(&hw, &run, 256, 1), nvlink_cap, 1e-12, 0);
    CHECK_CLOSE(px_cost_fsdp_rails(&hw, &run, 256, 2), 4.0, 1e-12, 0); /* TP 2: 4 a node */
    CHECK_CLOSE(px_cost_fsdp_rails(&hw, &run, 32, 8), 1.0, 1e-12, 0);  /* TP 8: one a node */
    run.fsdp_flat_collectives = false;
    CHECK_CLOSE(px_cost_fsdp_rails(&hw, &run, 256, 1), 1.0, 1e-12, 0);
    run.fsdp_flat_collectives = true;
    run.fsdp_prefetch_layers = 1;
    run.fsdp_reshard_after_forward = true;
    px_fsdp_time one, eight;
    px_cost_fsdp_time(&hw, &run, 256, 1, true, false, 1.0, 1e9, 80, 2, 2, 1, 1.0, 2.0, 0.0, &one);
    px_cost_fsdp_time(&hw, &run, 256, 1, true, false, 8.0, 1e9, 80, 2, 2, 1, 1.0, 2.0, 0.0,
                      &eight);
    /* the bandwidth term 8x shorter, the 255 latency steps the same */
    CHECK(eight.total_s < one.total_s / 4.0 && eight.total_s > one.total_s / 8.0 - 1e-9);
}

/* MoE under ZeRO-3: the experts' shard group (expert data parallel) is
 * gathered beside the dense one, its own size, node crossing and NICs; a
 * layer's two gathers add before the windows apply */
static void expert_shards(void)
{
    px_hw hw;
    px_error err;
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    px_fw_runtime run;
    memset(&run, 0, sizeof run);
    run.fsdp_prefetch_layers = 1;
    run.fsdp_reshard_after_forward = true;
    /* dense 1e8 over 64 ranks on 8 NICs a node; experts 1e9 over 8 ranks
     * one a node (EP 8 inside each node): one NIC */
    px_fsdp_shard sh[2] = {{64, true, 8.0, 1e8, 0.0, 0.0}, {8, true, 1.0, 1e9, 0.0, 0.0}};
    double ag = px_time_coll_s(&hw, PX_COLL_ALLGATHER, 64, 1e8 * 2 / 8.0, true) +
                px_time_coll_s(&hw, PX_COLL_ALLGATHER, 8, 1e9 * 2, true);
    double rs = px_time_coll_s(&hw, PX_COLL_REDUCE_SCATTER, 64, 1e8 * 4 / 8.0, true) +
                px_time_coll_s(&hw, PX_COLL_REDUCE_SCATTER, 8, 1e9 * 4, true);
    px_fsdp_time t, lumped;
    px_cost_fsdp_time_shards(&hw, &run, sh, 2, 1, false, 10, 2, 4, 3, false, 1e3, 2e3, 0.0, &t);
    CHECK_CLOSE(t.total_s, 3 * (10 * (2 * ag + rs) - ag), 1e-9, 0);
    CHECK_CLOSE(t.exposed_s, 3 * (ag + rs), 1e-9, 0); /* long layers: first and last show */
    /* pricing the experts with the dense group's 8 NICs is 8x too cheap on
     * their bandwidth term */
    px_cost_fsdp_time(&hw, &run, 64, 1, true, false, 8.0, 1.1e9, 10, 2, 4, 3, 1e3, 2e3, 0.0,
                      &lumped);
    CHECK_MSG(t.total_s > 4.0 * lumped.total_s, "shards %.3f s, lumped %.3f s", t.total_s,
              lumped.total_s);
    /* one shard is px_cost_fsdp_time exactly */
    px_fsdp_shard one = {8, false, 1.0, 2e8, 0.0, 0.0};
    px_fsdp_time a, b;
    px_cost_fsdp_time_shards(&hw, &run, &one, 1, 1, false, 32, 2, 4, 2, false, 1.0, 2.0, 0.0, &a);
    px_cost_fsdp_time(&hw, &run, 8, 1, false, false, 1.0, 2e8, 32, 2, 4, 2, 1.0, 2.0, 0.0, &b);
    CHECK(a.total_s == b.total_s && a.exposed_s == b.exposed_s && a.bytes == b.bytes);
}

/* A whole plan: Mixtral 8x7B on 64 H100 at EP 8 under Megatron's ZeRO-3:
 * the dense half gathered over DP 64 on 8 NICs a node, the experts over
 * their expert-data-parallel group of 8, one GPU a node (one NIC); the
 * step's DP total is the two groups' per-layer collectives (a total does
 * not depend on the overlap windows). */
static void expert_group_in_plan(void)
{
    px_model m;
    px_hw hw;
    px_framework fw;
    px_error err = {0};
    CHECK(px_model_load("mixtral-8x7b", NULL, &m, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    CHECK(px_framework_load("megatron", NULL, &fw, &err) == PX_OK);
    px_parallel par;
    px_parallel_init(&par);
    par.tp = 1;
    par.ep = 8;
    par.etp = 1;
    par.dp = 64;
    par.zero = 3;
    par.micro_batch = 1;
    par.n_micro = 2;
    par.seq_len = 4096;
    CHECK(px_cost_check(&m, &par, &err) == PX_OK);
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &m, &hw, &err) == PX_OK);
    ctx.run = &fw.run;
    px_prediction p;
    px_cost_detail d;
    CHECK(px_cost_eval(&ctx, &par, 0.0, 0.0, &p, &d, &err) == PX_OK);
    double n = (double)m.n_layers, e = 2.0, g = 4.0; /* bf16 gathers, fp32 reduce */
    /* the stage's dense parameters (embedding and head included) spread
     * over its layers, as the framework's per-layer units carry them */
    double experts = (double)ctx.expert_params / 8.0;
    double dense = ((double)d.params_per_gpu - n * experts) / n;
    px_fsdp_shard sh[2] = {{64, true, px_cost_fsdp_rails(&hw, &fw.run, 64, 1), dense, 0.0, 0.0},
                           {8, true, px_cost_fsdp_rails(&hw, &fw.run, 8, 8), experts, 0.0, 0.0}};
    CHECK_CLOSE(sh[0].rails, 450e9 * 0.824 / (50e9 * 0.94), 1e-12, 0); /* NVLink's cap */
    CHECK_CLOSE(sh[1].rails, 1.0, 1e-12, 0);
    px_fsdp_time want;
    px_cost_fsdp_time_shards(&hw, &fw.run, sh, 2, 1, false, n, e, g, 2.0, false, 1.0, 2.0, 0.0,
                             &want);
    CHECK_MSG(fabs(d.dp_total_s - want.total_s) <= 1e-9 * want.total_s, "dp total %.6f s, want %.6f s",
              d.dp_total_s, want.total_s);
    /* the gathered layer is what this GPU holds unsharded: the layer's
     * other parameters and its E/ep local experts, not all E */
    double b8 = d.buf_p2p; /* pp 1: the ZeRO-3 gathers alone */
    par.ep = 1;
    CHECK(px_cost_eval(&ctx, &par, 0.0, 0.0, &p, &d, &err) == PX_OK);
    double other = (double)(ctx.kind_params[PX_LAYER_MOE] - ctx.expert_params);
    double x = (double)ctx.expert_params;
    CHECK(b8 > 0.0);
    CHECK_CLOSE(b8 / d.buf_p2p, (other + x / 8.0) / (other + x), 1e-9, 0);
}

static void megatron_split(void)
{
    int lpc[64];
    px_megatron_split how = {0, 0, true, true, false};
    CHECK(px_split_megatron(126, 8, 8, &how, lpc));
    int sum = 0;
    for (int i = 0; i < 64; i++)
        sum += lpc[i];
    CHECK(sum == 126 && lpc[0] == 1 && lpc[63] == 1 && lpc[1] == 2 && lpc[8] == 2);
    /* 30 layers on 32 chunks: the first and last chunks would be empty */
    CHECK(!px_split_megatron(30, 4, 8, &how, lpc));
    /* ... which Megatron-Core runs: the embedding and the loss alone */
    px_megatron_split ends = {0, 0, true, true, true};
    CHECK(px_split_megatron(30, 4, 8, &ends, lpc));
    CHECK(lpc[0] == 0 && lpc[31] == 0 && lpc[1] == 1 && lpc[30] == 1);
    /* only the embedding's and the loss's chunks may be empty */
    CHECK(!px_split_megatron(29, 4, 8, &ends, lpc));
    /* fixed first and last stages */
    px_megatron_split fl = {3, 5, false, false, false};
    CHECK(px_split_megatron(32, 4, 1, &fl, lpc));
    CHECK(lpc[0] == 3 && lpc[1] == 12 && lpc[2] == 12 && lpc[3] == 5);
    CHECK(!px_split_megatron(33, 4, 1, &fl, lpc));
}

static void search_shard_group(void)
{
    px_model m;
    px_hw hw;
    px_error err;
    CHECK(px_model_load("llama3-8b", NULL, &m, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    px_fw_runtime run;
    memset(&run, 0, sizeof run);
    run.dp_overlap = run.tp_overlap = run.fused_attention = true;
    run.fsdp_prefetch_layers = 1;
    run.fsdp_reshard_after_forward = true;
    px_caps caps;
    memset(&caps, 0, sizeof caps);
    snprintf(caps.name, sizeof caps.name, "test");
    caps.schedules[PX_SCHED_1F1B] = true;
    caps.recompute[PX_RECOMPUTE_NONE] = true;
    caps.zero[0] = caps.zero[3] = true;
    caps.model_features = PX_FEAT_LLAMA_BLOCK;
    caps.precisions = PX_PREC_BIT(PX_PREC_BF16);
    caps.max_pp = 1;
    caps.precisions = PX_PREC_BIT(PX_PREC_BF16);
    static px_search_result res;
    px_search_opts o;
    px_search_opts_init(&o);
    o.caps = &caps;
    o.run = &run;
    o.milp = false;
    o.tp = o.pp = 1;
    o.dp = 64;
    o.zero = 3;
    o.micro_batch = 1;
    o.global_batch = 256;
    CHECK(px_search_run(&m, &hw, 64, &o, &res, &err) == PX_OK);
    double full_mem = (double)res.top[0].pred.mem.total;
    o.shard_group = 8;
    /* no hybrid sharding in the capabilities: refused by name */
    CHECK(px_search_run(&m, &hw, 64, &o, &res, &err) == PX_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "hybrid_shard") != NULL, "%s", err.msg);
    caps.hybrid_shard = true;
    CHECK_MSG(px_search_run(&m, &hw, 64, &o, &res, &err) == PX_OK, "%s", err.msg);
    CHECK(res.top[0].par.shard_group == 8);
    /* the state is sharded over 8, not 64: more memory */
    CHECK((double)res.top[0].pred.mem.total > full_mem + 8e9 * 16 * (1.0 / 8 - 1.0 / 64) * 0.9);
    o.shard_group = 48; /* does not tile dp 64 */
    CHECK(px_search_run(&m, &hw, 64, &o, &res, &err) == PX_ERR_INFEASIBLE);
}

int main(void)
{
    buffers();
    timing();
    kept_stage();
    rails();
    expert_shards();
    expert_group_in_plan();
    megatron_split();
    search_shard_group();
    return px_test_result("cost_fsdp");
}
