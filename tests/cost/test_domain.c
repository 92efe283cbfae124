/* test_domain.c — the fast domain a job sees (px_domain.h) and the node
 * crossings of a framework that puts pp outermost (Megatron's rank order):
 * NVL72 segments against their closed form, and every group's crossing
 * against px_layout's exact answer under order "tp-cp-ep-dp-pp". */
#include "px_cost.h"
#include "px_domain.h"
#include "px_framework.h"
#include "px_layout.h"
#include "px_test.h"

static void load_hw(const char *name, px_hw *hw)
{
    px_error err = {0};
    CHECK_MSG(px_hw_load(name, NULL, hw, &err) == PX_OK, "%s: %s", name, err.msg);
}

static void segments(void)
{
    px_hw nvl, h100;
    load_hw("gb200-nvl72", &nvl);
    load_hw("h100-sxm", &h100);
    CHECK(nvl.gpus_per_node == 72 && nvl.gpus_per_host == 4);
    /* inside one rack: the whole domain */
    CHECK(px_domain_job_gpus(&nvl, 64) == 72);
    CHECK(px_domain_job_gpus(&nvl, 72) == 72);
    /* beyond a rack: the largest tray count <= 18 that divides the job's */
    CHECK(px_domain_job_gpus(&nvl, 128) == 64);  /* 32 trays: 16 */
    CHECK(px_domain_job_gpus(&nvl, 512) == 64);  /* 128 trays: 16 */
    CHECK(px_domain_job_gpus(&nvl, 144) == 72);  /* 36 trays: 18 */
    CHECK(px_domain_job_gpus(&nvl, 96) == 48);   /* 24 trays: 12 */
    CHECK(px_domain_job_gpus(&nvl, 76) == 4);    /* 19 trays, prime: one tray */
    CHECK(px_domain_job_gpus(&nvl, 130) == 72);  /* not whole trays: the profile's */
    /* a node of one host: the profile's node, whatever the job */
    CHECK(px_domain_job_gpus(&h100, 1024) == 8);
    CHECK(px_domain_job_gpus(&h100, 4) == 8);
}

/* Every dense and expert dimension's crossing equals px_layout's under
 * Megatron's order, on the segments of a multi-rack GB200 job. */
static void pp_outermost_matches_layout(const char *model_name)
{
    px_model m;
    px_hw hw;
    px_error err = {0};
    CHECK_MSG(px_model_load(model_name, NULL, &m, &err) == PX_OK, "%s", err.msg);
    load_hw("gb200-nvl72", &hw);
    px_framework fw;
    CHECK_MSG(px_framework_load("megatron", NULL, &fw, &err) == PX_OK, "%s", err.msg);
    CHECK(fw.run.pp_outermost);
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &m, &hw, &err) == PX_OK);
    ctx.run = &fw.run;
    int tps[] = {1, 2, 4, 8}, pps[] = {1, 2, 4, 8}, eps[] = {1, 2, 4, 8};
    int checked = 0, crossed = 0;
    for (int a = 0; a < 4; a++)
        for (int cp = 1; cp <= 2; cp++)
            for (int p = 0; p < 4; p++)
                for (int dp = 1; dp <= 32; dp *= 2)
                    for (int e = 0; e < (m.n_experts > 0 ? 4 : 1); e++) {
                        px_parallel par;
                        px_parallel_init(&par);
                        par.tp = tps[a];
                        par.cp = cp;
                        par.pp = pps[p];
                        par.dp = dp;
                        par.ep = eps[e];
                        par.n_micro = 8;
                        par.seq_len = 4096;
                        if ((par.tp * par.cp * par.dp) % par.ep)
                            continue;
                        int gpus = par.tp * par.cp * par.pp * par.dp;
                        int g = px_domain_job_gpus(&hw, gpus);
                        px_parallel lp = par;
                        snprintf(lp.order, sizeof lp.order, "%s", "tp-cp-ep-dp-pp");
                        px_layout lay;
                        CHECK(px_layout_init(&lay, &lp, &err) == PX_OK);
                        px_prediction pr;
                        px_cost_detail d;
                        CHECK(px_cost_eval(&ctx, &par, 0, 0, &pr, &d, &err) == PX_OK);
                        bool tp = px_layout_crosses_node(&lay, PX_DIM_TP, g);
                        bool dpx = px_layout_crosses_node(&lay, PX_DIM_DP, g);
                        bool ppx = px_layout_crosses_node(&lay, PX_DIM_PP, g);
                        bool cpx = px_layout_crosses_node(&lay, PX_DIM_CP, g);
                        bool epx = px_layout_crosses_node(&lay, PX_DIM_EP, g);
                        CHECK_MSG(d.tp_crosses == tp && d.dp_crosses == dpx &&
                                      d.pp_crosses == ppx && d.cp_crosses == cpx &&
                                      (m.n_experts == 0 || d.ep_crosses == epx),
                                  "%s tp %d cp %d pp %d dp %d ep %d on %d GPUs (domain %d)",
                                  model_name, par.tp, par.cp, par.pp, par.dp, par.ep, gpus, g);
                        checked++;
                        crossed += dpx || ppx;
                    }
    CHECK(checked > 100 && crossed > 10);
}

int main(void)
{
    segments();
    pp_outermost_matches_layout("llama3-8b");
    pp_outermost_matches_layout("mixtral-8x7b");
    return px_test_result("test_domain");
}
