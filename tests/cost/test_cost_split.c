/* test_cost_split.c — the cost model with uneven and per-layer splits:
 *  - a split the configuration does not record (n_chunks == 0) and pp·vpp does
 *    not divide the layers costs every layer (DeepSeek-V3's 61 layers on 16
 *    stages: the remainder goes to the middle chunks) and is what
 *    px_cost_record_split writes into the plan;
 *  - per-layer recompute choices and explicit splits: px_cost_stages agrees
 *    with the partition program's own evaluation (px_partition_evaluate) stage
 *    by stage, in time exactly and in memory up to the one-layer rerun buffer
 *    that the program takes off its limit instead (docs/partition.md), for
 *    Llama 3 8B, Mixtral, Qwen3 and DeepSeek-V3;
 *  - first and last chunks holding only the embedding or the loss: legal
 *    for the cost model, refused by the executor's capabilities. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "px_cost.h"
#include "px_partition_refine.h"
#include "px_plan_check.h"
#include "px_split_megatron.h"
#include "px_test.h"

static px_model model;
static px_hw hw;

static bool load(const char *m)
{
    px_error err;
    bool ok = px_model_load(m, NULL, &model, &err) == PX_OK;
    CHECK_MSG(ok, "%s: %s", m, err.msg);
    if (ok)
        ok = px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK;
    return ok;
}

static px_parallel base(int tp, int pp, int dp, int ep)
{
    px_parallel par;
    px_parallel_init(&par);
    par.tp = tp;
    par.sp = tp > 1;
    par.pp = pp;
    par.dp = dp;
    par.ep = ep;
    par.micro_batch = 1;
    par.n_micro = 64;
    par.seq_len = 4096;
    par.zero = 1;
    par.schedule = PX_SCHED_1F1B;
    return par;
}

/* DeepSeek-V3 (61 layers) at PP 16 without a recorded split. */
static void uneven_default_split(void)
{
    if (!load("deepseek-v3"))
        return;
    px_parallel par = base(1, 16, 64, 64);
    px_error err;
    CHECK_MSG(px_cost_check(&model, &par, &err) == PX_OK, "%s", err.msg);
    px_prediction implicit, recorded;
    CHECK_MSG(px_cost_evaluate(&model, &hw, &par, &implicit, &err) == PX_OK, "%s", err.msg);

    /* the rule: 3 layers a chunk, the 13 extra ones to chunks 1..13 */
    int split[16];
    px_cost_default_split(61, 16, split);
    int sum = 0;
    for (int c = 0; c < 16; c++) {
        sum += split[c];
        CHECK(split[c] == ((c >= 1 && c <= 13) ? 4 : 3));
    }
    CHECK(sum == 61);

    px_parallel rec = par;
    CHECK(px_cost_record_split(&model, &rec));
    CHECK(rec.n_chunks == 16 && memcmp(rec.layers_per_chunk, split, sizeof split) == 0);
    CHECK(!px_cost_record_split(&model, &rec)); /* already recorded */
    CHECK_MSG(px_cost_evaluate(&model, &hw, &rec, &recorded, &err) == PX_OK, "%s", err.msg);
    /* the implicit split is costed exactly as the recorded one (before the
     * fix it dropped the 13 extra layers: a shorter step, less memory) */
    CHECK_CLOSE(implicit.time.step_s, recorded.time.step_s, 1e-12, 0);
    CHECK(implicit.mem.total == recorded.mem.total);

    /* the slowest stage holds 4 MoE layers: against 3 per stage it is slower
     * by about a third of the layers' share */
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &model, &hw, &err) == PX_OK);
    double t4[16], t3[16];
    int64_t m4[16], m3[16];
    px_cost_stages(&ctx, &par, t4, m4);
    px_parallel even = par; /* 3 layers everywhere, 13 more on the last chunk */
    even.n_chunks = 16;
    for (int c = 0; c < 16; c++)
        even.layers_per_chunk[c] = 3;
    even.layers_per_chunk[15] += 13;
    px_cost_stages(&ctx, &even, t3, m3);
    CHECK(t4[5] > 1.2 * t3[5] && m4[5] > m3[5]);
    double slowest = 0.0;
    for (int s = 0; s < 16; s++)
        slowest = t4[s] > slowest ? t4[s] : slowest;
    fprintf(stderr, "deepseek-v3 pp16, no recorded split: slowest stage %.1f ms, %.1f GB "
                    "(stage 5: %.1f ms with 4 layers, %.1f ms with 3)\n",
            1e3 * slowest, implicit.mem.total / 1e9, 1e3 * t4[5], 1e3 * t3[5]);

    /* pp x vpp above the layer count stays invalid */
    px_parallel big = par;
    big.pp = 64;
    CHECK(px_cost_check(&model, &big, &err) == PX_ERR_INVALID);
    CHECK(strstr(err.msg, "every chunk needs a layer") != NULL);
}

/* Chunks holding only the embedding or the loss (Megatron-Core's split with
 * both counted as layers): legal for the cost model, not for the executor,
 * and costed as the layers they hold. */
static void empty_end_chunks(void)
{
    if (!load("llama3-8b"))
        return;
    px_parallel par = base(1, 2, 8, 1);
    par.vpp = 17; /* 32 layers + 2 = 34 slots: one a chunk, the ends empty */
    par.schedule = PX_SCHED_INTERLEAVED;
    px_megatron_split how = {0, 0, true, true, true};
    CHECK(px_split_megatron(model.n_layers, par.pp, par.vpp, &how, par.layers_per_chunk));
    par.n_chunks = 34;
    CHECK(par.layers_per_chunk[0] == 0 && par.layers_per_chunk[33] == 0);
    px_error err;
    CHECK_MSG(px_cost_check(&model, &par, &err) == PX_OK, "%s", err.msg);
    px_caps engine;
    px_caps_cpu_executor(&engine);
    CHECK(px_plan_check(&model, &par, &engine, &err) != PX_OK);
    /* an empty chunk in the middle is never legal */
    px_parallel mid = par;
    mid.layers_per_chunk[0] = 1;
    mid.layers_per_chunk[5] = 0;
    CHECK(px_cost_check(&model, &mid, &err) == PX_ERR_INVALID);
    px_prediction pred;
    CHECK_MSG(px_cost_evaluate(&model, &hw, &par, &pred, &err) == PX_OK, "%s", err.msg);
    CHECK(pred.time.step_s > 0.0);
}

/* Per-stage agreement between px_cost and the partition program, with an
 * uneven split and a mixed per-layer recompute pattern. */
static void agree(const char *name, int tp, int pp, int dp, int ep)
{
    if (!load(name))
        return;
    px_parallel par = base(tp, pp, dp, ep);
    int L = (int)model.n_layers;
    /* uneven: every chunk one layer off the default, moved to the next */
    px_cost_default_split(L, pp, par.layers_per_chunk);
    par.n_chunks = pp;
    for (int c = 0; c + 1 < pp; c += 2)
        if (par.layers_per_chunk[c] > 1) {
            par.layers_per_chunk[c]--;
            par.layers_per_chunk[c + 1]++;
        }
    par.n_layer_recompute = L;
    int n_rc[PX_RECOMPUTE_COUNT] = {0, 0, 0};
    for (int i = 0; i < L; i++) {
        par.layer_recompute[i] = (unsigned char)((i * 7 / 3) % PX_RECOMPUTE_COUNT);
        n_rc[par.layer_recompute[i]]++;
    }
    CHECK(n_rc[0] > 0 && n_rc[1] > 0 && n_rc[2] > 0);
    px_error err;
    CHECK_MSG(px_cost_check(&model, &par, &err) == PX_OK, "%s: %s", name, err.msg);

    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &model, &hw, &err) == PX_OK);
    static px_partition_problem pb;
    CHECK_MSG(px_partition_build(&ctx, &par, &pb, &err) == PX_OK, "%s: %s", name, err.msg);
    static px_partition_solution sol;
    memset(&sol, 0, sizeof sol);
    sol.n_chunks = pp;
    memcpy(sol.layers_per_chunk, par.layers_per_chunk, (size_t)pp * sizeof(int));
    memcpy(sol.layer_recompute, par.layer_recompute, (size_t)L);
    CHECK_MSG(px_partition_evaluate(&pb, &sol, &err) == PX_OK, "%s: %s", name, err.msg);

    double t[PX_MAX_CHUNKS];
    int64_t mem[PX_MAX_CHUNKS];
    px_cost_stages(&ctx, &par, t, mem);
    double worst_t = 0.0;
    int64_t worst_m = 0;
    int first = 0;
    for (int s = 0; s < pp; s++) {
        CHECK_CLOSE(t[s], sol.stage_time_s[s], 1e-9, 0);
        /* the rerun buffer: the largest full-recompute layer on the stage */
        int64_t rerun = 0;
        for (int i = first; i < first + par.layers_per_chunk[s]; i++)
            if (par.layer_recompute[i] == PX_RECOMPUTE_FULL &&
                pb.layer_act_bytes[i][PX_RECOMPUTE_NONE] > rerun)
                rerun = pb.layer_act_bytes[i][PX_RECOMPUTE_NONE];
        first += par.layers_per_chunk[s];
        double want = (double)(sol.stage_mem_bytes[s] + rerun);
        CHECK_MSG(fabs((double)mem[s] - want) <= 1e-9 * want + 4.0 * L,
                  "%s stage %d: cost %lld bytes, program %lld + rerun %lld", name, s,
                  (long long)mem[s], (long long)sol.stage_mem_bytes[s], (long long)rerun);
        if (t[s] > worst_t)
            worst_t = t[s];
        if (mem[s] > worst_m)
            worst_m = mem[s];
    }
    /* and the step's own numbers use the same stages */
    px_prediction pred;
    px_cost_detail d;
    CHECK(px_cost_eval(&ctx, &par, 0.0, 0.0, &pred, &d, &err) == PX_OK);
    CHECK_CLOSE(d.stage_mb_s, worst_t, 1e-12, 0);
    CHECK(pred.mem.total == worst_m);
    /* hardware FLOPs count each layer's rerun: between none and full */
    px_parallel none = par, full = par;
    none.n_layer_recompute = full.n_layer_recompute = 0;
    none.recompute = PX_RECOMPUTE_NONE;
    full.recompute = PX_RECOMPUTE_FULL;
    px_prediction pn, pf;
    CHECK(px_cost_eval(&ctx, &none, 0.0, 0.0, &pn, NULL, &err) == PX_OK);
    CHECK(px_cost_eval(&ctx, &full, 0.0, 0.0, &pf, NULL, &err) == PX_OK);
    CHECK(pred.hw_flops_per_step > pn.hw_flops_per_step &&
          pred.hw_flops_per_step < pf.hw_flops_per_step);
    CHECK(pred.mem.total < pn.mem.total || pred.time.step_s > pn.time.step_s);
    fprintf(stderr, "%s pp %d, mixed recompute (%d/%d/%d): slowest stage %.2f ms, %.2f GB\n",
            name, pp, n_rc[0], n_rc[1], n_rc[2], 1e3 * worst_t, worst_m / 1e9);
}

/* A refined candidate whose program mixed the recompute choices: the cost
 * model's prediction for the refined split fits, with per-stage times equal
 * to the program's. */
static void refined_mixed(void)
{
    if (!load("llama3-8b"))
        return;
    px_parallel par = base(1, 4, 8, 1);
    par.seq_len = 8192;
    par.n_micro = 32;
    px_prediction pred;
    px_error err;
    /* the smallest micro-batch whose uniform split does not fit */
    for (par.micro_batch = 1; par.micro_batch <= 8; par.micro_batch++) {
        CHECK(px_cost_evaluate(&model, &hw, &par, &pred, &err) == PX_OK);
        if (pred.mem.total > px_hw_usable_bytes(&hw))
            break;
    }
    static px_partition_report rep;
    px_partition_opts o;
    px_partition_opts_init(&o);
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &model, &hw, &err) == PX_OK);
    CHECK_MSG(px_partition_refine(&ctx, &par, &pred, &o, 0u, &rep, &err) == PX_OK, "%s",
              err.msg);
    CHECK(rep.changed && par.n_layer_recompute == 32);
    CHECK(pred.mem.total <= px_hw_usable_bytes(&hw));
    double t[4];
    px_cost_stages(&ctx, &par, t, NULL);
    for (int s = 0; s < 4; s++)
        CHECK_CLOSE(t[s], rep.after.stage_time_s[s], 1e-9, 0);
}

/* The stage loops score only the first of the middle stages that hold the
 * same layers (the others are no slower and, the in-flight count never
 * growing with the stage, no fuller): the step's memory and slowest stage
 * must still be the maximum over every stage, which px_cost_stages computes
 * stage by stage without that shortcut. */
static void worst_stage_shortcut(void)
{
    const struct {
        const char *model;
        int tp, pp, dp, ep;
        px_schedule sched;
        bool mixed; /* per-layer recompute choices */
    } cases[] = {
        {"llama3-405b", 8, 64, 32, 1, PX_SCHED_1F1B, false},
        {"llama3-405b", 8, 48, 32, 1, PX_SCHED_ZB_H2, false},
        {"llama3-405b", 8, 48, 32, 1, PX_SCHED_GPIPE, true},
        {"deepseek-v3", 1, 32, 64, 8, PX_SCHED_ZB_H1, false},
        {"deepseek-v3", 1, 16, 128, 8, PX_SCHED_1F1B, true},
        {"llama3-8b", 1, 3, 32, 1, PX_SCHED_1F1B, false},
    };
    static px_cost_ctx ctx;
    static px_parallel par;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!load(cases[i].model))
            continue;
        px_error err;
        CHECK(px_cost_ctx_init(&ctx, &model, &hw, &err) == PX_OK);
        px_parallel_init(&par);
        par.tp = cases[i].tp;
        par.sp = par.tp > 1;
        par.pp = cases[i].pp;
        par.dp = cases[i].dp;
        par.ep = cases[i].ep;
        par.zero = 1;
        par.micro_batch = 1;
        par.n_micro = 2 * par.pp;
        par.schedule = cases[i].sched;
        par.seq_len = model.seq_len;
        px_cost_record_split(&model, &par);
        if (cases[i].mixed) {
            /* every third layer full, every fifth selective: stages differ */
            par.n_layer_recompute = (int)model.n_layers;
            for (int64_t l = 0; l < model.n_layers; l++)
                par.layer_recompute[l] = (unsigned char)(l % 3 == 0   ? PX_RECOMPUTE_FULL
                                                         : l % 5 == 0 ? PX_RECOMPUTE_SELECTIVE
                                                                      : PX_RECOMPUTE_NONE);
        }
        CHECK_MSG(px_cost_check(&model, &par, &err) == PX_OK, "%s", err.msg);
        px_prediction pred;
        CHECK(px_cost_eval(&ctx, &par, 0, 0, &pred, NULL, &err) == PX_OK);
        static double mb_s[PX_MAX_CHUNKS];
        static int64_t mem[PX_MAX_CHUNKS];
        px_cost_stages(&ctx, &par, mb_s, mem);
        int arg = 0;
        for (int st = 1; st < par.pp; st++)
            if (mem[st] > mem[arg])
                arg = st;
        CHECK_MSG(pred.mem.total == mem[arg] && pred.mem.worst_stage == arg,
                  "%s pp %d: memory %lld on stage %d, stage by stage %lld on %d",
                  cases[i].model, par.pp, (long long)pred.mem.total, pred.mem.worst_stage,
                  (long long)mem[arg], arg);
        /* the slowest stage, one micro-batch, as the step used it */
        double worst_mb = 0.0;
        for (int st = 0; st < par.pp; st++)
            worst_mb = mb_s[st] > worst_mb ? mb_s[st] : worst_mb;
        px_cost_detail d;
        CHECK(px_cost_eval(&ctx, &par, 0, 0, &pred, &d, &err) == PX_OK);
        CHECK_MSG(fabs(d.stage_mb_s - worst_mb) <= 1e-12 * worst_mb,
                  "%s pp %d: slowest stage %.9g s, stage by stage %.9g s", cases[i].model,
                  par.pp, d.stage_mb_s, worst_mb);
    }
}

int main(void)
{
    worst_stage_shortcut();
    uneven_default_split();
    empty_end_chunks();
    agree("llama3-8b", 2, 4, 8, 1);
    agree("mixtral-8x7b", 2, 4, 8, 8);
    agree("qwen3-235b-a22b", 4, 4, 8, 8);
    agree("deepseek-v3", 1, 16, 64, 64);
    refined_mixed();
    return px_test_result("cost_split");
}
