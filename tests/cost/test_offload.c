/* test_offload.c — optimizer and parameter offload (docs/cost-model.md,
 * "Offload") against their closed forms: the offloaded share of the
 * optimizer state leaves the device and lands on the host with its fp32
 * gradient copy; the step gains the host's part (gradients down, Adam over
 * DRAM, weights up) or the device's rest, whichever is longer; with the
 * parameters offloaded the device keeps no shard and each gather and
 * reduce-scatter carries its shard's copy over the host link; the rules
 * that refuse them; and the search that falls back to offload only when
 * nothing fits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_cost.h"
#include "px_cost_offload.h"
#include "px_framework.h"
#include "px_plan_check.h"
#include "px_search.h"
#include "px_test.h"

static void sharded(px_parallel *par, double fraction)
{
    px_parallel_init(par);
    par->dp = 8;
    par->zero = 1;
    par->micro_batch = 1;
    par->n_micro = 8;
    par->seq_len = 4096;
    par->recompute = PX_RECOMPUTE_FULL;
    if (fraction > 0.0) {
        par->offload.kind = PX_OFFLOAD_OPTIMIZER;
        par->offload.fraction = fraction;
    }
}

/* Memory and time of Llama 3 8B over 8 H100s at ZeRO-1, offloading none, a
 * quarter and all of the optimizer. */
static void check_closed_forms(px_cost_ctx *ctx, const px_hw *hw)
{
    px_error err;
    px_parallel none, quarter, all;
    sharded(&none, 0.0);
    sharded(&quarter, 0.25);
    sharded(&all, 1.0);
    px_prediction pn, pq, pa;
    CHECK(px_cost_eval(ctx, &none, 0, 0, &pn, NULL, &err) == PX_OK);
    CHECK(px_cost_eval(ctx, &quarter, 0, 0, &pq, NULL, &err) == PX_OK);
    CHECK(px_cost_eval(ctx, &all, 0, 0, &pa, NULL, &err) == PX_OK);
    double n = (double)pn.mem.optimizer / 12.0; /* the shard's parameters */
    CHECK(pn.mem.host == 0 && pn.time.offload_s == 0.0);
    /* the device keeps weights and gradients; the state moves */
    CHECK(pa.mem.weights == pn.mem.weights && pa.mem.grads == pn.mem.grads);
    CHECK(pa.mem.optimizer == 0);
    CHECK_CLOSE((double)pa.mem.host, 16.0 * n, 1e-12, 1);
    CHECK_CLOSE((double)pq.mem.optimizer, 0.75 * 12.0 * n, 1e-12, 1);
    CHECK_CLOSE((double)pq.mem.host, 0.25 * 16.0 * n, 1e-12, 1);
    CHECK(pa.mem.total == pn.mem.total - pn.mem.optimizer);
    /* the host's part: fp32 gradients down, 30 bytes of Adam a parameter
     * over the host's DRAM, bf16 weights up */
    double per = 4.0 / hw->host_link_bw + 30.0 / hw->host_mem_bw + 2.0 / hw->host_link_bw;
    CHECK_CLOSE(pa.time.offload_s, n * per, 1e-12, 0);
    CHECK_CLOSE(pa.time.optimizer_s, n * per, 1e-12, 0); /* nothing left on the device */
    CHECK_CLOSE(pq.time.offload_s, 0.25 * n * per, 1e-12, 0);
    CHECK_CLOSE(pq.time.optimizer_s, fmax(0.75 * pn.time.optimizer_s, 0.25 * n * per), 1e-12,
                0);
    /* the rest of the step is the same */
    CHECK_CLOSE(pa.time.step_s - pa.time.optimizer_s, pn.time.step_s - pn.time.optimizer_s,
                1e-12, 0);
}

/* Under FSDP's accounting the fp32 master is the sharded weight: it moves to
 * the host and a 16-bit shard stays, unless the framework keeps one anyway
 * (DeepSpeed's zero_16bit_partitions). */
static void check_fsdp(const px_model *m, const px_hw *hw)
{
    px_error err;
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, m, hw, &err) == PX_OK);
    px_fw_runtime run;
    memset(&run, 0, sizeof run);
    run.fsdp_reshard_after_forward = true;
    ctx.run = &run;
    px_parallel z3, z3o;
    sharded(&z3, 0.0);
    sharded(&z3o, 1.0);
    z3.zero = z3o.zero = 3;
    px_prediction p0, p1;
    CHECK(px_cost_eval(&ctx, &z3, 0, 0, &p0, NULL, &err) == PX_OK);
    CHECK(px_cost_eval(&ctx, &z3o, 0, 0, &p1, NULL, &err) == PX_OK);
    double n = (double)p0.mem.optimizer / 8.0; /* Adam's two moments */
    CHECK_CLOSE((double)p1.mem.weights, (double)p0.mem.weights - 2.0 * n, 1e-12, 1);
    CHECK_CLOSE((double)p1.mem.host, 16.0 * n, 1e-12, 1);
    run.zero_16bit_partitions = true;
    CHECK(px_cost_eval(&ctx, &z3, 0, 0, &p0, NULL, &err) == PX_OK);
    CHECK(px_cost_eval(&ctx, &z3o, 0, 0, &p1, NULL, &err) == PX_OK);
    CHECK_CLOSE((double)p1.mem.weights, (double)p0.mem.weights - 4.0 * n, 1e-12, 1);
}

/* Parameter offload under each framework's ZeRO-3 (FSDP2's accounting, and
 * DeepSpeed's with its 16-bit shard): the device keeps no weight, gradient
 * or optimizer shard; the host holds 16 bytes a parameter (18 with
 * DeepSpeed's 16-bit shard); every gather copies its shard up (fp32 under
 * FSDP2) and every reduce-scatter its gradient's shard down; the host's
 * step is Adam alone. */
static void check_params(const px_model *m, const px_hw *hw)
{
    px_error err;
    const char *names[2] = {"torchtitan", "deepspeed"};
    for (int f = 0; f < 2; f++) {
        px_framework fw;
        CHECK(px_framework_load(names[f], NULL, &fw, &err) == PX_OK);
        static px_cost_ctx ctx;
        CHECK(px_cost_ctx_init(&ctx, m, hw, &err) == PX_OK);
        ctx.run = &fw.run;
        px_parallel none, params;
        sharded(&none, 0.0);
        none.zero = 3;
        params = none;
        params.offload.kind = PX_OFFLOAD_PARAMS;
        CHECK_MSG(px_plan_check(m, &params, &fw.caps, &err) == PX_OK, "%s", err.msg);
        px_prediction pn, pp;
        CHECK(px_cost_eval(&ctx, &none, 0, 0, &pn, NULL, &err) == PX_OK);
        CHECK(px_cost_eval(&ctx, &params, 0, 0, &pp, NULL, &err) == PX_OK);
        double n = (double)pn.mem.optimizer / 8.0; /* the shard's parameters */
        bool ds = fw.run.zero_16bit_partitions;
        double e = (double)hw->dtype_bytes;
        CHECK(pp.mem.weights == 0 && pp.mem.grads == 0 && pp.mem.optimizer == 0);
        CHECK_CLOSE((double)pp.mem.host, (16.0 + (ds ? e : 0.0)) * n, 1e-9, 1);
        CHECK_CLOSE(pp.time.offload_s, n * 30.0 / hw->host_mem_bw, 1e-9, 0);
        /* the copies ride the gathers and reduce-scatters: per micro-batch
         * every layer's shard up twice (forward, and the backward's gather
         * again but the last layer's) and its gradient down once */
        double L = (double)m->n_layers, mb = (double)none.n_micro;
        double up = (ds ? e : 4.0) / hw->host_link_bw, down = 4.0 / hw->host_link_bw;
        double shard_l = n / L; /* a layer's share of the stage's shard */
        double want = mb * (L * shard_l * (2.0 * up + down) - shard_l * up);
        CHECK_CLOSE(pp.time.dp_comm_total_s - pn.time.dp_comm_total_s, want, 1e-9, 0);
    }
}

/* Who may offload: a framework that runs it, a sharded optimizer, a share
 * only where the framework splits it. */
static void check_rules(const px_model *m)
{
    px_error err;
    px_caps any, cpu, cuda;
    px_caps_parallax(&any);
    px_caps_cpu_executor(&cpu);
    px_caps_cuda_executor(&cuda);
    px_parallel p;
    sharded(&p, 1.0);
    CHECK(px_plan_check(m, &p, &any, &err) == PX_OK);
    /* the CPU executor steps a share of any size on the host; the CUDA one
     * none */
    CHECK(px_plan_check(m, &p, &cpu, &err) == PX_OK);
    CHECK(px_plan_check(m, &p, &cuda, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "does not offload the optimizer") != NULL, "%s", err.msg);
    sharded(&p, 0.5);
    CHECK(px_plan_check(m, &p, &cpu, &err) == PX_OK);
    sharded(&p, 1.0);
    p.zero = 0;
    CHECK(px_plan_check(m, &p, &any, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "allowed: ZeRO 1, 2 or 3") != NULL, "%s", err.msg);
    sharded(&p, 0.5);
    any.offload_fraction = false;
    CHECK(px_plan_check(m, &p, &any, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "allowed: 1") != NULL, "%s", err.msg);
    p.offload.fraction = 1.5;
    CHECK(px_plan_check(m, &p, &any, &err) == PX_ERR_INVALID);
    /* parameters: over ZeRO-3, where the framework offloads them, and for
     * torchtitan over more than one rank */
    px_framework meg, titan;
    CHECK(px_framework_load("megatron", NULL, &meg, &err) == PX_OK);
    CHECK(px_framework_load("torchtitan", NULL, &titan, &err) == PX_OK);
    sharded(&p, 1.0);
    p.offload.kind = PX_OFFLOAD_PARAMS;
    p.zero = 3;
    CHECK(px_plan_check(m, &p, &meg.caps, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strcmp(err.cap, "offload_params") == 0, "%s", err.cap);
    CHECK(px_plan_check(m, &p, &titan.caps, &err) == PX_OK);
    p.zero = 2;
    CHECK(px_plan_check(m, &p, &titan.caps, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "allowed: ZeRO 3") != NULL, "%s", err.msg);
    p.zero = 3;
    p.dp = 1;
    CHECK(px_plan_check(m, &p, &titan.caps, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "dp x cp >= 2") != NULL, "%s", err.msg);
}

/* Llama 3 70B on 8 H100s fits only with the optimizer on the host: the
 * search says so, every plan it keeps offloads and fits the host too; with
 * the fallback off it refuses; a profile without the host refuses a request
 * to offload by its fields. */
static void check_search(const px_hw *hw)
{
    px_model m70;
    px_error err;
    CHECK(px_model_load("llama3-70b", NULL, &m70, &err) == PX_OK);
    px_framework fw;
    CHECK(px_framework_load("megatron", NULL, &fw, &err) == PX_OK);
    px_search_opts o;
    px_search_opts_init(&o);
    o.caps = &fw.caps;
    o.run = &fw.run;
    o.milp = false;
    px_search_result *res = malloc(sizeof *res);
    CHECK(res != NULL);
    CHECK(px_search_run(&m70, hw, 8, &o, res, &err) == PX_OK);
    CHECK(res->offload_auto_used && res->n_top > 0);
    for (int i = 0; i < res->n_top; i++) {
        CHECK(res->top[i].par.offload.kind == PX_OFFLOAD_OPTIMIZER);
        CHECK(res->top[i].pred.mem.total <= res->mem_limit_bytes);
        CHECK(res->top[i].pred.mem.host > 0 && res->top[i].pred.mem.host <= hw->host_mem_bytes);
    }
    o.offload_auto = false;
    CHECK(px_search_run(&m70, hw, 8, &o, res, &err) == PX_ERR_INFEASIBLE);
    /* 8B on 8 GPUs fits as it is: no offload */
    px_model m8;
    CHECK(px_model_load("llama3-8b", NULL, &m8, &err) == PX_OK);
    o.offload_auto = true;
    CHECK(px_search_run(&m8, hw, 8, &o, res, &err) == PX_OK);
    CHECK(!res->offload_auto_used && res->top[0].par.offload.kind == PX_OFFLOAD_NONE);
    px_hw bare = *hw;
    bare.host_mem_bytes = 0;
    o.offload.kind = PX_OFFLOAD_OPTIMIZER;
    CHECK(px_search_run(&m8, &bare, 8, &o, res, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "host_mem_bytes") != NULL, "%s", err.msg);
    free(res);
}

int main(void)
{
    px_model m;
    px_hw hw;
    px_error err;
    CHECK(px_model_load("llama3-8b", NULL, &m, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    CHECK(px_cost_offload_hw_known(&hw));
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &m, &hw, &err) == PX_OK);
    check_closed_forms(&ctx, &hw);
    check_fsdp(&m, &hw);
    check_params(&m, &hw);
    check_rules(&m);
    check_search(&hw);
    return px_test_result("offload");
}
