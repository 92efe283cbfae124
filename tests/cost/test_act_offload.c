/* test_act_offload.c — activation offload (docs/cost-model.md, "Offload")
 * against its closed forms: an offloaded layer's activations leave the
 * device for the host; blocking copies cost their bytes over the host link
 * twice a micro-batch, asynchronous ones only what the layer's compute does
 * not hide; a count of leading layers offloads exactly those; the rules of
 * each framework's form; the search's least count that fits; the fallback
 * when nothing fits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_cost.h"
#include "px_cost_offload.h"
#include "px_framework.h"
#include "px_plan_check.h"
#include "px_search.h"
#include "px_test.h"

/* Llama 3 8B over 8 H100s, ZeRO-1, one pipeline stage, no recompute. */
static void layout(px_parallel *par, bool activations, int layers)
{
    px_parallel_init(par);
    par->dp = 8;
    par->zero = 1;
    par->micro_batch = 1;
    par->n_micro = 8;
    par->seq_len = 4096;
    par->recompute = PX_RECOMPUTE_NONE;
    par->offload.activations = activations;
    par->offload.act_layers = layers;
}

static void eval(px_cost_ctx *ctx, const px_parallel *par, px_prediction *pred)
{
    px_error err;
    CHECK_MSG(px_cost_eval(ctx, par, 0, 0, pred, NULL, &err) == PX_OK, "%s", err.msg);
}

/* Every layer, then the first ten, with blocking copies (no framework
 * runtime) and with copies a framework hides under the compute. */
static void check_closed_forms(const px_model *m, const px_hw *hw)
{
    static px_cost_ctx ctx;
    px_error err;
    CHECK(px_cost_ctx_init(&ctx, m, hw, &err) == PX_OK);
    double L = (double)m->n_layers;
    px_parallel none, every, lead;
    layout(&none, false, 0);
    layout(&every, true, 0);
    layout(&lead, true, 10);
    px_prediction pn, pe, pl;
    eval(&ctx, &none, &pn);
    eval(&ctx, &every, &pe);
    eval(&ctx, &lead, &pl);
    double layer = (double)pn.mem.activations / L; /* one layer, one micro-batch in flight */
    CHECK(pn.mem.host == 0 && pn.time.act_offload_s == 0.0);
    /* every layer: the activations move to the host; the layer in its
     * backward holds its set again */
    CHECK(pe.mem.activations == 0);
    CHECK_CLOSE((double)pe.mem.host_activations, (double)pn.mem.activations, 1e-12, 1);
    CHECK(pe.mem.host == pe.mem.host_activations);
    CHECK_CLOSE((double)(pe.mem.buffers - pn.mem.buffers), layer, 1e-9, 1);
    /* blocking: down in the forward, up in the backward, every layer and
     * micro-batch; nothing else in the step changes */
    double copies = 8.0 * L * 2.0 * layer / hw->host_link_bw;
    CHECK_CLOSE(pe.time.act_offload_s, copies, 1e-9, 0);
    CHECK_CLOSE(pe.time.step_s - pn.time.step_s, copies, 1e-9, 0);
    /* the first ten layers only, and no reload buffer */
    CHECK_CLOSE((double)pl.mem.host_activations, 10.0 * layer, 1e-9, 1);
    CHECK_CLOSE((double)pl.mem.activations, (L - 10.0) * layer, 1e-9, 1);
    CHECK(pl.mem.buffers == pn.mem.buffers);
    CHECK_CLOSE(pl.time.act_offload_s, copies * 10.0 / L, 1e-9, 0);

    /* asynchronous copies hide under the compute: at most the blocking
     * time, none with a link fast enough, all but the windows otherwise */
    px_fw_runtime run;
    memset(&run, 0, sizeof run);
    run.act_offload_async = run.act_offload_prefetch = true;
    ctx.run = &run;
    px_prediction pa;
    eval(&ctx, &every, &pa);
    CHECK(pa.time.act_offload_s < copies);
    px_hw fast = *hw;
    fast.host_link_bw = 1e18;
    static px_cost_ctx fctx;
    CHECK(px_cost_ctx_init(&fctx, m, &fast, &err) == PX_OK);
    fctx.run = &run;
    eval(&fctx, &every, &pa);
    CHECK(pa.time.act_offload_s == 0.0);
    px_hw slow = *hw;
    slow.host_link_bw = 1e6; /* copies far longer than any window */
    static px_cost_ctx sctx;
    CHECK(px_cost_ctx_init(&sctx, m, &slow, &err) == PX_OK);
    sctx.run = &run;
    eval(&sctx, &every, &pa);
    double slow_copies = 8.0 * L * 2.0 * layer / slow.host_link_bw;
    CHECK(pa.time.act_offload_s < slow_copies && pa.time.act_offload_s > 0.99 * slow_copies);
}

/* Each framework's form: Megatron a count below the layers, without a
 * pipeline or recompute; DeepSpeed full recompute's checkpoints of every
 * layer; torchtitan and the executor none. */
static void check_rules(const px_model *m)
{
    px_error err;
    px_framework meg, ds, titan;
    CHECK(px_framework_load("megatron", NULL, &meg, &err) == PX_OK);
    CHECK(px_framework_load("deepspeed", NULL, &ds, &err) == PX_OK);
    CHECK(px_framework_load("torchtitan", NULL, &titan, &err) == PX_OK);
    CHECK(meg.caps.offload_activations == PX_ACT_OFFLOAD_LEADING);
    CHECK(ds.caps.offload_activations == PX_ACT_OFFLOAD_CHECKPOINTS);
    px_parallel p;
    layout(&p, true, 4);
    CHECK(px_plan_check(m, &p, &meg.caps, &err) == PX_OK);
    p.offload.act_layers = 0;
    CHECK(px_plan_check(m, &p, &meg.caps, &err) == PX_ERR_INVALID);
    p.offload.act_layers = (int)m->n_layers;
    CHECK(px_plan_check(m, &p, &meg.caps, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "fewer than the model's") != NULL, "%s", err.msg);
    layout(&p, true, 4);
    p.recompute = PX_RECOMPUTE_FULL;
    CHECK(px_plan_check(m, &p, &meg.caps, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "allowed: pp 1, recompute none") != NULL, "%s", err.msg);
    /* DeepSpeed: every layer, full recompute */
    CHECK(px_plan_check(m, &p, &ds.caps, &err) == PX_ERR_UNSUPPORTED); /* a count */
    p.offload.act_layers = 0;
    CHECK(px_plan_check(m, &p, &ds.caps, &err) == PX_OK);
    p.recompute = PX_RECOMPUTE_NONE;
    CHECK(px_plan_check(m, &p, &ds.caps, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "allowed: recompute full") != NULL, "%s", err.msg);
    /* none: named by its capability */
    p.zero = 3; /* FSDP2 */
    CHECK(px_plan_check(m, &p, &titan.caps, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strcmp(err.cap, "offload_activations") == 0, "%s", err.cap);
    px_caps engine;
    px_caps_cpu_executor(&engine);
    CHECK(px_plan_check(m, &p, &engine, &err) == PX_ERR_UNSUPPORTED);
    /* a count without activation offload is no plan */
    layout(&p, false, 3);
    CHECK(px_plan_check(m, &p, &meg.caps, &err) == PX_ERR_INVALID);
}

/* A search as framework fw (loaded from `name`) runs it, without the GLPK
 * program. */
static void framework_search(const char *name, px_framework *fw, px_search_opts *o)
{
    px_error err;
    CHECK_MSG(px_framework_load(name, NULL, fw, &err) == PX_OK, "%s", err.msg);
    px_search_opts_init(o);
    o->caps = &fw->caps;
    o->run = &fw->run;
    o->milp = false;
}

/* Megatron with the count left to the search: the plan's count fits and one
 * fewer does not. */
static void check_least_count(const px_model *m, const px_hw *hw)
{
    px_error err;
    px_framework fw;
    px_search_opts o;
    framework_search("megatron", &fw, &o);
    o.tp = o.pp = o.cp = 1;
    o.dp = 8;
    o.micro_batch = 2;
    o.seq_len = 8192;
    o.recompute = PX_RECOMPUTE_NONE;
    o.offload.activations = true;
    o.offload_auto = false;
    px_search_result *res = malloc(sizeof *res);
    CHECK(res != NULL);
    CHECK_MSG(px_search_run(m, hw, 8, &o, res, &err) == PX_OK, "%s", err.msg);
    CHECK(res->n_top > 0);
    const px_candidate *c = &res->top[0];
    int n = c->par.offload.act_layers;
    CHECK_MSG(n >= 1 && n < m->n_layers, "%d", n);
    CHECK(c->pred.mem.total <= res->mem_limit_bytes);
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, m, hw, &err) == PX_OK);
    ctx.run = &fw.run;
    px_parallel fewer = c->par;
    fewer.offload.act_layers = n - 1;
    px_memory mem;
    px_cost_memory(&ctx, &fewer, &mem, NULL);
    CHECK_MSG(n == 1 || mem.total > res->mem_limit_bytes, "%d layers fit: %lld", n - 1,
              (long long)mem.total);
    free(res);
}

/* Llama 3 70B at 8K on 8 H100s under DeepSpeed without TP, PP or CP fits
 * neither with the optimizer nor with the activations on the host, nor with
 * both: the fallback goes on to the parameters' shards. */
static void check_fallback(const px_hw *hw)
{
    px_model m70;
    px_error err;
    CHECK(px_model_load("llama3-70b", NULL, &m70, &err) == PX_OK);
    px_framework fw;
    px_search_opts o;
    framework_search("deepspeed", &fw, &o);
    o.seq_len = 8192;
    o.tp = o.pp = o.cp = 1;
    px_search_result *res = malloc(sizeof *res);
    CHECK(res != NULL);
    CHECK_MSG(px_search_run(&m70, hw, 8, &o, res, &err) == PX_OK, "%s", err.msg);
    CHECK(res->offload_auto_used && res->n_top > 0);
    for (int i = 0; i < res->n_top; i++) {
        const px_candidate *c = &res->top[i];
        CHECK(c->par.offload.kind == PX_OFFLOAD_PARAMS && !c->par.offload.activations);
        CHECK(c->pred.mem.total <= res->mem_limit_bytes);
        CHECK(c->pred.mem.host > 0 && c->pred.mem.host <= hw->host_mem_bytes);
    }
    /* what came before it in the order does not fit */
    o.offload_auto = false;
    const px_offload_kind kinds[3] = {PX_OFFLOAD_OPTIMIZER, PX_OFFLOAD_NONE, PX_OFFLOAD_OPTIMIZER};
    const bool acts[3] = {false, true, true};
    for (int i = 0; i < 3; i++) {
        o.offload.kind = kinds[i];
        o.offload.activations = acts[i];
        CHECK_MSG(px_search_run(&m70, hw, 8, &o, res, &err) == PX_ERR_INFEASIBLE, "try %d", i);
    }
    free(res);
}

int main(void)
{
    px_model m;
    px_hw hw;
    px_error err;
    CHECK(px_model_load("llama3-8b", NULL, &m, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    check_closed_forms(&m, &hw);
    check_rules(&m);
    check_least_count(&m, &hw);
    check_fallback(&hw);
    return px_test_result("act_offload");
}
