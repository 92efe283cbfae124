/* The partitioner on real candidates, costed by px_cost: never slower than
 * the uniform split; strictly faster for Llama 3 8B at PP 4 (large
 * vocabulary: the first and last stages get fewer layers); a candidate whose
 * uniform split does not fit but whose refined split does; DeepSeek-V3's
 * dense and MoE layers costed apart; under a framework's runtime traits, the
 * program's stage times and memory are the plan file's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "px_cost.h"
#include "px_framework.h"
#include "px_partition_refine.h"
#include "px_plan_predict.h"
#include "px_test.h"

static px_model model;
static px_hw hw;
static px_cost_ctx ctx; /* over model and hw, as loaded; no framework unless set */

static bool load(const char *m, const char *h)
{
    px_error err;
    px_status st = px_model_load(m, NULL, &model, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    if (st)
        return false;
    st = px_hw_load(h, NULL, &hw, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    if (st == PX_OK)
        st = px_cost_ctx_init(&ctx, &model, &hw, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    return st == PX_OK;
}

static px_status refine(px_parallel *par, px_prediction *pred, const px_partition_opts *o,
                        px_partition_report *rep, px_error *err)
{
    return px_partition_refine(&ctx, par, pred, o, 0u, rep, err);
}

static px_parallel base_par(int tp, int pp, int dp, int64_t b, int64_t m, int64_t s)
{
    px_parallel par;
    px_parallel_init(&par);
    par.tp = tp;
    par.sp = tp > 1;
    par.pp = pp;
    par.dp = dp;
    par.micro_batch = b;
    par.n_micro = m;
    par.seq_len = s;
    par.zero = 1;
    par.schedule = PX_SCHED_1F1B;
    par.recompute = PX_RECOMPUTE_NONE;
    return par;
}

static px_partition_opts opts(void)
{
    px_partition_opts o;
    px_partition_opts_init(&o);
    o.time_limit_s = 5.0;
    return o;
}

static int64_t limit(void) { return px_hw_usable_bytes(&hw); }

/* Llama 3 8B, PP 4 on H100: a 128K vocabulary makes the last stage (LM head
 * and loss) the slowest under the uniform 8/8/8/8 split. */
static void llama8b_pp4(void)
{
    if (!load("llama3-8b", "h100-sxm"))
        return;
    px_parallel par = base_par(1, 4, 8, 1, 32, 8192);
    px_prediction uni, pred;
    px_error err;
    CHECK_MSG(px_cost_evaluate(&model, &hw, &par, &uni, &err) == PX_OK, "%s", err.msg);
    CHECK(uni.mem.total <= limit());
    pred = uni;
    static px_partition_report rep;
    px_partition_opts o = opts();
    px_status st = refine(&par, &pred, &o, &rep, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    CHECK(rep.changed && rep.after.proven_optimal);
    CHECK(par.n_chunks == 4 && par.n_layer_recompute == 32);
    int sum = 0;
    for (int c = 0; c < 4; c++)
        sum += par.layers_per_chunk[c];
    CHECK(sum == 32);
    fprintf(stderr, "llama3-8b pp4: split %d,%d,%d,%d; slowest stage %.2f ms (uniform %.2f ms); "
                    "step %.3f s (uniform %.3f s)\n",
            par.layers_per_chunk[0], par.layers_per_chunk[1], par.layers_per_chunk[2],
            par.layers_per_chunk[3], 1e3 * rep.after.max_stage_time_s,
            1e3 * rep.before.max_stage_time_s, pred.time.step_s, uni.time.step_s);
    /* the first and the last stage carry the embedding and the head */
    CHECK(par.layers_per_chunk[3] < 8);
    CHECK(par.layers_per_chunk[0] <= 8);
    CHECK(par.layers_per_chunk[0] + par.layers_per_chunk[3] < 16);
    CHECK(rep.after.max_stage_time_s < rep.before.max_stage_time_s);
    /* and the cost model agrees: the step is strictly shorter */
    CHECK(pred.time.step_s < uni.time.step_s);
    CHECK(pred.mem.total <= limit());

    /* The --explain table: a header and one line per stage. */
    char table[2048];
    px_partition_format_stages(&rep.after, rep.mem_limit_bytes, table, sizeof table);
    fputs(table, stderr);
    int lines = 0;
    for (const char *c = table; *c; c++)
        lines += *c == '\n';
    CHECK(lines == 5 && table[0] == '#' && strstr(table, "time_ms"));

    /* Refining again changes nothing: the split is already optimal. */
    px_parallel again = par;
    px_prediction p2 = pred;
    st = refine(&again, &p2, &o, &rep, &err);
    CHECK(st == PX_OK && !rep.changed);
    CHECK(memcmp(again.layers_per_chunk, par.layers_per_chunk, sizeof par.layers_per_chunk) == 0);
}

/* The partitioner's answer is never slower than the split it was given. */
static void never_slower(void)
{
    struct {
        const char *model;
        int tp, pp, vpp, dp;
        int64_t b, m, s;
        px_schedule sched;
        px_recompute rc;
    } cases[] = {
        {"llama3-8b", 1, 2, 1, 8, 1, 16, 8192, PX_SCHED_1F1B, PX_RECOMPUTE_NONE},
        {"llama3-8b", 1, 8, 1, 4, 1, 32, 8192, PX_SCHED_1F1B, PX_RECOMPUTE_SELECTIVE},
        {"llama3-8b", 2, 4, 2, 4, 1, 32, 8192, PX_SCHED_INTERLEAVED, PX_RECOMPUTE_NONE},
        {"llama3-70b", 8, 4, 1, 32, 1, 64, 8192, PX_SCHED_1F1B, PX_RECOMPUTE_NONE},
        {"llama3-70b", 8, 8, 1, 16, 1, 64, 8192, PX_SCHED_GPIPE, PX_RECOMPUTE_FULL},
        {"gpt3-175b", 8, 8, 1, 16, 1, 64, 2048, PX_SCHED_1F1B, PX_RECOMPUTE_NONE},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (!load(cases[k].model, "h100-sxm"))
            continue;
        px_parallel par = base_par(cases[k].tp, cases[k].pp, cases[k].dp, cases[k].b,
                                   cases[k].m, cases[k].s);
        par.vpp = cases[k].vpp;
        par.schedule = cases[k].sched;
        par.recompute = cases[k].rc;
        px_prediction pred;
        memset(&pred, 0, sizeof pred); /* in/out: refine keeps its train_tokens */
        px_error err;
        static px_partition_report rep;
        px_partition_opts o = opts();
        o.time_limit_s = 2.0;
        px_status st = refine(&par, &pred, &o, &rep, &err);
        if (st == PX_ERR_INFEASIBLE) { /* nothing fits: then neither does the uniform split */
            CHECK_MSG(!rep.before.fits, "case %zu: %s", k, err.msg);
            continue;
        }
        CHECK_MSG(st == PX_OK, "case %zu (%s): %s", k, cases[k].model, err.msg);
        CHECK_MSG(rep.after.objective_s <= rep.before.objective_s * (1 + 1e-12),
                  "case %zu: %.6g > %.6g", k, rep.after.objective_s, rep.before.objective_s);
        CHECK(rep.after.fits || !rep.before.fits);
        fprintf(stderr, "%s pp %d vpp %d %s: slowest stage %.2f -> %.2f ms%s (%.2f s)\n",
                cases[k].model, cases[k].pp, cases[k].vpp, px_schedule_name(cases[k].sched),
                1e3 * rep.before.max_stage_time_s, 1e3 * rep.after.max_stage_time_s,
                rep.after.proven_optimal ? ", optimal" : "", rep.after.solve_s);
    }
}

/* Llama 3 8B, PP 4, micro-batch 2 at 8K tokens: the uniform split without
 * recomputation overflows stage 0 (four micro-batches in flight); the program
 * moves layers off it and recomputes where it must, and the cost model
 * confirms the result fits. */
static void uniform_does_not_fit(void)
{
    if (!load("llama3-8b", "h100-sxm"))
        return;
    int64_t b;
    px_parallel par;
    px_prediction uni;
    px_error err;
    for (b = 1; b <= 16; b++) { /* the smallest micro-batch whose uniform split overflows */
        par = base_par(1, 4, 8, b, 32, 8192);
        CHECK(px_cost_evaluate(&model, &hw, &par, &uni, &err) == PX_OK);
        if (uni.mem.total > limit())
            break;
    }
    CHECK(b <= 16);
    static px_partition_report rep;
    px_prediction pred = uni;
    px_partition_opts o = opts();
    px_status st = refine(&par, &pred, &o, &rep, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    CHECK(!rep.before.fits && rep.after.fits && rep.changed);
    CHECK_MSG(pred.mem.total <= limit(), "micro-batch %lld: refined %.2f GB > %.2f GB",
              (long long)b, pred.mem.total / 1e9, limit() / 1e9);
    int n_rc = 0;
    for (int i = 0; i < par.n_layer_recompute; i++)
        n_rc += par.layer_recompute[i] != PX_RECOMPUTE_NONE;
    fprintf(stderr, "llama3-8b pp4 b=%lld: uniform %.2f GB > %.2f GB; refined split %d,%d,%d,%d "
                    "with %d layers recomputing: %.2f GB\n",
            (long long)b, uni.mem.total / 1e9, limit() / 1e9, par.layers_per_chunk[0],
            par.layers_per_chunk[1], par.layers_per_chunk[2], par.layers_per_chunk[3], n_rc,
            pred.mem.total / 1e9);
    /* stage 0 holds the most micro-batches: it gets the fewest layers or
     * recomputes */
    CHECK(par.layers_per_chunk[0] < 8 || n_rc > 0);
}

/* DeepSeek-V3: the three dense layers and the MoE layers are costed apart. */
static void deepseek_layers(void)
{
    if (!load("deepseek-v3", "h100-sxm"))
        return;
    px_parallel par = base_par(1, 16, 64, 1, 64, 4096);
    par.ep = 64;
    static px_partition_problem pb;
    px_error err;
    px_status st = px_partition_build(&ctx, &par, &pb, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    CHECK(pb.n_layers == 61);
    CHECK(pb.layer_static_bytes[0] == pb.layer_static_bytes[2]);
    CHECK(pb.layer_static_bytes[0] != pb.layer_static_bytes[3]);
    CHECK(pb.layer_time_s[0][0] != pb.layer_time_s[3][0]);
    CHECK(pb.layer_time_s[3][0] == pb.layer_time_s[60][0]);
    static px_partition_solution sol, uni;
    px_partition_opts o = opts();
    o.time_limit_s = 2.0;
    st = px_partition_solve(&pb, &o, &sol, &err);
    if (st == PX_OK) {
        CHECK(px_partition_uniform(&pb, PX_RECOMPUTE_NONE, &uni, &err) == PX_OK);
        CHECK(!uni.fits || sol.max_stage_time_s <= uni.max_stage_time_s);
        char split[256];
        px_partition_format_split(&sol, split, sizeof split);
        fprintf(stderr, "deepseek-v3 pp16: split %s, slowest stage %.2f ms (uniform %.2f ms%s)\n",
                split, 1e3 * sol.max_stage_time_s, 1e3 * uni.max_stage_time_s,
                uni.fits ? "" : ", does not fit");
    } else {
        CHECK_MSG(st == PX_ERR_INFEASIBLE && strstr(err.msg, "stage"), "%s", err.msg);
    }
}

/* Under a framework whose runtime traits change a layer's cost (torchtitan:
 * FlashAttention 2, slower than FlashAttention 3 on an H100; no TP overlap),
 * the program costs stages as the search and the plan file do: its stage
 * times and memory are px_cost_stages' and px_plan_predict's under the same
 * traits, and differ from the planner's defaults (so the case tests
 * something). */
static void framework_traits(void)
{
    if (!load("llama3-8b", "h100-sxm"))
        return;
    static px_framework fw;
    px_error err;
    CHECK_MSG(px_framework_load("torchtitan", NULL, &fw, &err) == PX_OK, "%s", err.msg);
    px_parallel par = base_par(1, 4, 8, 1, 32, 4096);
    par.flash_attention = fw.run.fused_attention; /* as the search sets it */
    par.tp_overlap = fw.run.tp_overlap;
    static px_partition_report rep, rep_default;
    px_partition_opts o = opts();
    px_parallel plain = par;
    px_prediction pred, pred_default;
    memset(&pred, 0, sizeof pred);
    memset(&pred_default, 0, sizeof pred_default);
    CHECK_MSG(refine(&plain, &pred_default, &o, &rep_default, &err) == PX_OK, "%s", err.msg);
    /* a fresh context under the traits (its workspace caches layer shapes) */
    CHECK(px_cost_ctx_init(&ctx, &model, &hw, &err) == PX_OK);
    ctx.run = &fw.run;
    CHECK_MSG(refine(&par, &pred, &o, &rep, &err) == PX_OK, "%s", err.msg);
    static px_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.model = model;
    plan.hw = hw;
    plan.par = par;
    CHECK_MSG(px_plan_predict(&plan, &fw.run, &err) == PX_OK, "%s", err.msg);
    double t[PX_MAX_CHUNKS];
    px_cost_stages(&ctx, &par, t, NULL);
    bool differs = false;
    for (int s = 0; s < par.pp; s++) {
        CHECK_CLOSE(rep.after.stage_time_s[s], t[s], 1e-9, 0);
        CHECK_CLOSE(rep.after.stage_time_s[s], plan.stages[s].microbatch_s, 1e-9, 0);
        CHECK_MSG(rep.after.stage_mem_bytes[s] == plan.stages[s].total,
                  "stage %d: program %lld bytes, plan file %lld", s,
                  (long long)rep.after.stage_mem_bytes[s], (long long)plan.stages[s].total);
        differs = differs ||
                  fabs(rep_default.after.stage_time_s[s] - rep.after.stage_time_s[s]) >
                      1e-6 * rep.after.stage_time_s[s];
    }
    CHECK_MSG(differs, "torchtitan's traits do not move a stage time: the case tests nothing");
    fprintf(stderr, "llama3-8b pp4 under torchtitan: slowest stage %.3f ms (defaults %.3f ms), "
                    "fullest %.2f GB, as the plan file\n",
            1e3 * rep.after.max_stage_time_s, 1e3 * rep_default.after.max_stage_time_s,
            plan.stages[rep.after.fullest_stage].total / 1e9);
    ctx.run = NULL;
}

int main(void)
{
    llama8b_pp4();
    never_slower();
    uniform_does_not_fit();
    deepseek_layers();
    framework_traits();
    return px_test_result("refine");
}
