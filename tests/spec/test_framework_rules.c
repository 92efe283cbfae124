/* test_framework_rules.c — a framework's verdict on a plan is px_plan_check's
 * under the framework's capability set: for every profile in frameworks/ and
 * a grid of (tp, ep, etp, pp, vpp, schedule, recompute, zero, split) over a
 * dense and a mixture-of-experts preset, the capability test the search,
 * `export` and `validate` apply (px_caps_allow) accepts exactly what
 * px_plan_check accepts, and names the capability px_plan_check's refusal
 * names in the caller's error record (px_error.cap).  Configurations no
 * consumer runs (broken divisibility) are left out: they are refused before
 * any framework is asked. */
#include <string.h>

#include "px_framework.h"
#include "px_plan_check.h"
#include "px_test.h"

static const char *const frameworks[] = {"parallax", "megatron", "torchtitan",
                                         "deepspeed", "llm-foundry", "maxtext"};

/* split: 0 none recorded, 1 an even split recorded, 2 an uneven one. */
static void set_split(const px_model *m, px_parallel *p, int split)
{
    p->n_chunks = 0;
    int chunks = p->pp * p->vpp;
    if (split == 0 || m->n_layers % chunks != 0)
        return;
    p->n_chunks = chunks;
    for (int i = 0; i < chunks; i++)
        p->layers_per_chunk[i] = (int)(m->n_layers / chunks);
    if (split == 2 && chunks > 1) {
        p->layers_per_chunk[0]--;
        p->layers_per_chunk[chunks - 1]++;
    }
}

/* recompute 0..2: uniform; 3: per layer none/full; 4: per layer none/selective;
 * 5: Megatron's block form, the first layer of every chunk in full (on the
 * split already set). */
static void set_recompute(const px_model *m, px_parallel *p, int rc)
{
    p->n_layer_recompute = 0;
    if (rc == 5) {
        p->recompute = PX_RECOMPUTE_NONE;
        px_parallel_set_block_recompute(p, m->n_layers, 1);
        return;
    }
    if (rc < PX_RECOMPUTE_COUNT) {
        p->recompute = (px_recompute)rc;
        return;
    }
    p->recompute = PX_RECOMPUTE_FULL;
    p->n_layer_recompute = (int)m->n_layers;
    for (int i = 0; i < m->n_layers; i++)
        p->layer_recompute[i] = i % 2 ? (rc == 3 ? PX_RECOMPUTE_FULL : PX_RECOMPUTE_SELECTIVE)
                                      : PX_RECOMPUTE_NONE;
}

static long n_compared, n_differ;

static void compare_one(const px_framework *fw, const px_model *m, const px_parallel *p,
                        const px_caps *any)
{
    if (px_plan_check(m, p, any, NULL) != PX_OK)
        return; /* no consumer runs it */
    n_compared++;
    px_error e;
    bool rules = px_plan_check(m, p, &fw->caps, &e) == PX_OK;
    const char *why = NULL;
    bool allow = px_caps_allow(&fw->caps, m, p, &why);
    /* the capability named: the caller's record says what px_caps_allow says */
    const char *rec = rules ? NULL : e.cap ? e.cap : "the plan rules";
    if (rules == allow && !rules && strcmp(rec, why) != 0) {
        if (n_differ++ < 100)
            fprintf(stderr, "%s %s: px_caps_allow names %s, px_plan_check's record %s\n",
                    fw->name, m->name, why, rec);
    }
    if (rules != allow) {
        if (n_differ++ < 100000)
            fprintf(stderr,
                    "%s %s tp %d ep %d etp %d pp %d vpp %d %s rc %s/%d zero %d chunks %d: "
                    "px_caps_allow %s (%s), px_plan_check %s (%s)\n",
                    fw->name, m->name, p->tp, p->ep, p->etp, p->pp, p->vpp,
                    px_schedule_name(p->schedule), px_recompute_name(p->recompute),
                    p->n_layer_recompute, p->zero, p->n_chunks, allow ? "allows" : "refuses",
                    why ? why : "-", rules ? "accepts" : "refuses", rules ? "-" : e.msg);
    }
}

static void grid(const px_framework *fw, const px_model *m, const px_caps *any)
{
    static const int sizes[] = {1, 2, 4};
    static const int pps[] = {1, 2, 3, 5};
    px_parallel p;
    px_parallel_init(&p);
    p.dp = 8;
    p.cp = 1;
    p.micro_batch = 1;
    p.n_micro = 30; /* a multiple of every pp */
    p.seq_len = 2048;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++)
                for (int d = 0; d < 4; d++)
                    for (int vpp = 1; vpp <= 2; vpp++)
                        for (int s = 0; s < PX_SCHED_COUNT; s++)
                            for (int rc = 0; rc < 6; rc++)
                                for (int z = 0; z < 4; z++)
                                    for (int split = 0; split < 3; split++) {
                                        p.tp = sizes[a];
                                        p.sp = p.tp > 1;
                                        p.ep = sizes[b];
                                        p.etp = sizes[c];
                                        p.pp = pps[d];
                                        p.vpp = vpp;
                                        p.schedule = (px_schedule)s;
                                        p.zero = z;
                                        set_split(m, &p, split);
                                        set_recompute(m, &p, rc);
                                        compare_one(fw, m, &p, any);
                                    }
}

/* The capability is in the record the caller passed, and nowhere else: a
 * later check into another record leaves it as it was, and a record reused
 * for a refusal no capability lifts names none. */
static void record_is_callers(const px_framework *megatron, const px_model *m)
{
    px_parallel p;
    px_parallel_init(&p);
    p.dp = 8;
    p.pp = 2;
    p.micro_batch = 1;
    p.n_micro = 8;
    p.seq_len = 2048;
    p.schedule = PX_SCHED_ZB_H2; /* a schedule Megatron does not run */
    px_error a, b;
    CHECK(px_plan_check(m, &p, &megatron->caps, &a) == PX_ERR_UNSUPPORTED);
    CHECK(a.cap && !strcmp(a.cap, "schedules"));
    px_parallel broken = p;
    broken.tp = 5; /* divides nothing: a rule, no capability */
    broken.schedule = PX_SCHED_1F1B;
    CHECK(px_plan_check(m, &broken, &megatron->caps, &b) == PX_ERR_INVALID);
    CHECK(b.cap == NULL);
    CHECK(a.cap && !strcmp(a.cap, "schedules")); /* untouched by the other check */
    CHECK(px_plan_check(m, &broken, &megatron->caps, &a) == PX_ERR_INVALID);
    CHECK_MSG(a.cap == NULL, "a reused record still names %s", a.cap);
    /* the per-dimension rules fill it the same way */
    CHECK(px_rule_schedule(2, 1, PX_SCHED_ZB_H2, &megatron->caps, &b) == PX_ERR_UNSUPPORTED);
    CHECK(b.cap && !strcmp(b.cap, "schedules"));
}

/* px_parallel_block_recompute reads back what px_parallel_set_block_recompute
 * writes, on recorded uneven chunks and on the even split, and returns -1 for
 * every other mix; megatron takes the block form, torchtitan refuses it. */
static void block_form(const px_framework *megatron, const px_framework *torchtitan,
                       const px_model *m)
{
    px_parallel p;
    px_parallel_init(&p);
    p.pp = 2;
    p.vpp = 2;
    p.n_chunks = 4;
    const int lens[4] = {3, 2, 3, 2};
    memcpy(p.layers_per_chunk, lens, sizeof lens);
    for (int n = 0; n <= 3; n++) {
        px_parallel_set_block_recompute(&p, 10, n);
        CHECK(p.n_layer_recompute == 10);
        CHECK(p.layer_recompute[0] == (n > 0 ? PX_RECOMPUTE_FULL : PX_RECOMPUTE_NONE));
        CHECK(p.layer_recompute[2] == (n > 2 ? PX_RECOMPUTE_FULL : PX_RECOMPUTE_NONE));
        CHECK(p.layer_recompute[4] == (n > 1 ? PX_RECOMPUTE_FULL : PX_RECOMPUTE_NONE));
        CHECK_MSG(px_parallel_block_recompute(&p, 10) == n, "n %d read back as %d", n,
                  px_parallel_block_recompute(&p, 10));
    }
    px_parallel_set_block_recompute(&p, 10, 1);
    p.layer_recompute[3] = PX_RECOMPUTE_NONE; /* chunk 1 starts without recompute */
    CHECK(px_parallel_block_recompute(&p, 10) == -1);
    px_parallel_set_block_recompute(&p, 10, 2);
    p.layer_recompute[1] = PX_RECOMPUTE_SELECTIVE;
    CHECK(px_parallel_block_recompute(&p, 10) == -1);
    px_parallel_set_block_recompute(&p, 10, 1);
    p.layer_recompute[2] = PX_RECOMPUTE_FULL; /* a full layer after a none one */
    CHECK(px_parallel_block_recompute(&p, 10) == -1);
    p.n_chunks = 0; /* no recorded split: 12 layers, four chunks of three */
    px_parallel_set_block_recompute(&p, 12, 2);
    CHECK(p.layer_recompute[7] == PX_RECOMPUTE_FULL && p.layer_recompute[8] == PX_RECOMPUTE_NONE);
    CHECK(px_parallel_block_recompute(&p, 12) == 2);
    CHECK(px_parallel_block_recompute(&p, 10) == -1); /* 10 over 4 chunks: would be recorded */
    /* on a model: the block form runs under megatron, not under torchtitan */
    px_parallel q;
    px_parallel_init(&q);
    q.dp = 8;
    q.pp = 2;
    q.micro_batch = 1;
    q.n_micro = 8;
    q.seq_len = 2048;
    px_parallel_set_block_recompute(&q, m->n_layers, 3);
    CHECK(px_parallel_block_recompute(&q, m->n_layers) == 3);
    px_error e;
    CHECK(px_plan_check(m, &q, &megatron->caps, &e) == PX_OK);
    CHECK(px_plan_check(m, &q, &torchtitan->caps, &e) == PX_ERR_UNSUPPORTED);
    q.layer_recompute[0] = PX_RECOMPUTE_NONE;
    CHECK(px_plan_check(m, &q, &megatron->caps, &e) == PX_ERR_UNSUPPORTED);
    CHECK(e.cap && !strcmp(e.cap, "per_layer_recompute"));
    CHECK_MSG(strstr(e.msg, "--recompute-method block") != NULL, "%s", e.msg);
}

/* The expert all-to-all overlap as Megatron-Core checks it: megatron runs it
 * with ep > 1, virtual chunks under a pipeline, no layer fully recomputed
 * (the per-layer table's too) and one MTP module at most; the executor's set
 * refuses it by capability, a dense model by rule.  The flex dispatchers
 * likewise, over more than one expert rank. */
static void moe_overlap(const px_framework *megatron, const px_model *moe, const px_model *dense)
{
    px_parallel p;
    px_parallel_init(&p);
    p.ep = 8;
    p.dp = 8;
    p.micro_batch = 1;
    p.n_micro = 8;
    p.seq_len = 4096;
    p.moe_a2a_overlap = true;
    px_error e;
    CHECK_MSG(px_plan_check(moe, &p, &megatron->caps, &e) == PX_OK, "%s", e.msg);
    px_caps exec;
    px_caps_cpu_executor(&exec);
    CHECK(px_plan_check(moe, &p, &exec, &e) == PX_ERR_UNSUPPORTED);
    CHECK(e.cap && !strcmp(e.cap, "moe_a2a_overlap"));
    px_parallel q = p;
    q.ep = 1;
    CHECK(px_plan_check(moe, &q, &megatron->caps, &e) == PX_ERR_INVALID && e.cap == NULL);
    q = p;
    q.pp = 2;
    q.dp = 4;
    q.ep = 4;
    CHECK(px_plan_check(moe, &q, &megatron->caps, &e) == PX_ERR_INVALID);
    CHECK_MSG(strstr(e.msg, "vpp") != NULL, "%s", e.msg);
    q.vpp = 2;
    q.schedule = PX_SCHED_INTERLEAVED;
    CHECK_MSG(px_plan_check(moe, &q, &megatron->caps, &e) == PX_OK, "%s", e.msg);
    /* one fully recomputed layer in a per-layer table is full recompute */
    q = p;
    q.n_layer_recompute = (int)moe->n_layers;
    memset(q.layer_recompute, PX_RECOMPUTE_NONE, sizeof q.layer_recompute);
    CHECK_MSG(px_plan_check(moe, &q, &megatron->caps, &e) == PX_OK, "%s", e.msg);
    q.layer_recompute[0] = PX_RECOMPUTE_FULL; /* Megatron's block form, n = 1 */
    CHECK(px_plan_check(moe, &q, &megatron->caps, &e) == PX_ERR_INVALID);
    CHECK_MSG(strstr(e.msg, "full recompute") != NULL, "%s", e.msg);
    q = p;
    q.recompute = PX_RECOMPUTE_SELECTIVE;
    CHECK(px_plan_check(moe, &q, &megatron->caps, &e) == PX_OK);
    /* MTP: one module overlaps, two do not */
    px_model mtp = *moe;
    mtp.n_mtp_modules = 1;
    CHECK_MSG(px_rule_moe_a2a_overlap(&mtp, 8, 1, 1, false, &megatron->caps, &e) == PX_OK, "%s",
              e.msg);
    mtp.n_mtp_modules = 2;
    CHECK(px_rule_moe_a2a_overlap(&mtp, 8, 1, 1, false, &megatron->caps, &e) == PX_ERR_INVALID);
    CHECK(px_rule_moe_a2a_overlap(dense, 8, 1, 1, false, &megatron->caps, &e) == PX_ERR_INVALID);
    CHECK_MSG(strstr(e.msg, "no experts") != NULL, "%s", e.msg);
    /* the flex dispatchers: megatron runs both over more than one expert
     * rank; the executor neither */
    q = p;
    q.moe_a2a_overlap = false;
    for (int d = PX_MOE_DEEPEP; d <= PX_MOE_HYBRIDEP; d++) {
        q.moe_dispatcher = (px_moe_dispatch)d;
        q.ep = 8;
        CHECK_MSG(px_plan_check(moe, &q, &megatron->caps, &e) == PX_OK, "%s", e.msg);
        CHECK(px_plan_check(moe, &q, &exec, &e) == PX_ERR_UNSUPPORTED);
        CHECK(e.cap && !strcmp(e.cap, d == PX_MOE_DEEPEP ? "moe_deepep" : "moe_hybridep"));
        q.ep = 1;
        CHECK(px_plan_check(moe, &q, &megatron->caps, &e) == PX_ERR_INVALID && e.cap == NULL);
    }
    CHECK(px_rule_moe_dispatcher(dense, PX_MOE_DEEPEP, 8, 1, &megatron->caps, &e) ==
          PX_ERR_INVALID);
    CHECK(px_rule_moe_dispatcher(dense, PX_MOE_ALLTOALL, 1, 1, &exec, &e) == PX_OK);
}

/* --recompute-modules: megatron runs a list on selective layers, the
 * executor the default only; a list needs a selective layer (a per-layer
 * table's counts) and modules the model has; moe_act and layernorm never
 * under delayed FP8, and under other quantised GEMMs only where the
 * framework says so. */
static void recompute_modules(const px_framework *megatron, const px_model *moe,
                              const px_model *dense)
{
    px_parallel p;
    px_parallel_init(&p);
    p.ep = p.dp = 8;
    p.micro_batch = 1;
    p.n_micro = 8;
    p.seq_len = 4096;
    p.recompute = PX_RECOMPUTE_SELECTIVE;
    p.recompute_modules = (1u << PX_RCM_MOE_ACT) | (1u << PX_RCM_LAYERNORM);
    px_error e;
    CHECK_MSG(px_plan_check(moe, &p, &megatron->caps, &e) == PX_OK, "%s", e.msg);
    px_caps exec;
    px_caps_cpu_executor(&exec);
    CHECK(px_plan_check(moe, &p, &exec, &e) == PX_ERR_UNSUPPORTED);
    CHECK(e.cap && !strcmp(e.cap, "recompute_modules"));
    px_parallel q = p;
    q.recompute_modules = PX_RCM_DEFAULT; /* the default runs anywhere */
    CHECK_MSG(px_plan_check(moe, &q, &exec, &e) == PX_OK, "%s", e.msg);
    q = p;
    q.recompute = PX_RECOMPUTE_NONE;
    CHECK(px_plan_check(moe, &q, &megatron->caps, &e) == PX_ERR_INVALID && e.cap == NULL);
    /* one selective layer of a per-layer table suffices (for a framework
     * that runs such tables) */
    px_caps tables = megatron->caps;
    tables.per_layer_recompute = true;
    q.n_layer_recompute = (int)moe->n_layers;
    memset(q.layer_recompute, PX_RECOMPUTE_NONE, sizeof q.layer_recompute);
    CHECK(px_plan_check(moe, &q, &tables, &e) == PX_ERR_INVALID);
    q.layer_recompute[3] = PX_RECOMPUTE_SELECTIVE;
    CHECK_MSG(px_plan_check(moe, &q, &tables, &e) == PX_OK, "%s", e.msg);
    q = p;
    q.recompute_modules = 0;
    CHECK(px_plan_check(moe, &q, &megatron->caps, &e) == PX_ERR_INVALID);
    const px_caps *c = &megatron->caps;
    unsigned act = 1u << PX_RCM_MOE_ACT;
    CHECK(px_rule_recompute_modules(dense, act, true, PX_PREC_BF16, c, &e) == PX_ERR_INVALID);
    CHECK_MSG(strstr(e.msg, "needs experts") != NULL, "%s", e.msg);
    CHECK(px_rule_recompute_modules(dense, 1u << PX_RCM_MLP, true, PX_PREC_BF16, c, &e) == PX_OK);
    CHECK(px_rule_recompute_modules(moe, 1u << PX_RCM_MLP, true, PX_PREC_BF16, c, &e) ==
          PX_ERR_INVALID);
    CHECK(px_rule_recompute_modules(moe, 1u << PX_RCM_MLA_UP_PROJ, true, PX_PREC_BF16, c, &e) ==
          PX_ERR_INVALID);
    CHECK(px_rule_recompute_modules(moe, 1u << PX_RCM_SHARED_EXPERTS, true, PX_PREC_BF16, c,
                                    &e) == PX_ERR_INVALID);
    CHECK(px_rule_recompute_modules(moe, act, true, PX_PREC_FP8, c, &e) == PX_ERR_INVALID);
    CHECK(px_rule_recompute_modules(moe, act, true, PX_PREC_MXFP8, c, &e) == PX_OK);
    CHECK(px_rule_recompute_modules(moe, 1u << PX_RCM_MOE, true, PX_PREC_FP8, c, &e) == PX_OK);
    px_caps early = *c;
    early.recompute_modules_quantized = false;
    CHECK(px_rule_recompute_modules(moe, act, true, PX_PREC_MXFP8, &early, &e) ==
          PX_ERR_UNSUPPORTED);
    CHECK(e.cap && !strcmp(e.cap, "recompute_modules_quantized"));
    CHECK(px_rule_recompute_modules(moe, act, true, PX_PREC_BF16, &early, &e) == PX_OK);
}

int main(void)
{
    px_caps any;
    px_caps_any(&any);
    px_model dense, moe;
    px_error err;
    if (px_model_load("gpt3-175b", NULL, &dense, &err) != PX_OK ||
        px_model_load("mixtral-8x7b", NULL, &moe, &err) != PX_OK) {
        fprintf(stderr, "model presets: %s\n", err.msg);
        return 1;
    }
    for (size_t i = 0; i < sizeof frameworks / sizeof frameworks[0]; i++) {
        px_framework fw;
        if (px_framework_load(frameworks[i], NULL, &fw, &err) != PX_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        grid(&fw, &dense, &any);
        grid(&fw, &moe, &any);
        if (!strcmp(fw.name, "megatron"))
            record_is_callers(&fw, &dense);
    }
    px_framework megatron, torchtitan;
    if (px_framework_load("megatron", NULL, &megatron, &err) != PX_OK ||
        px_framework_load("torchtitan", NULL, &torchtitan, &err) != PX_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    block_form(&megatron, &torchtitan, &dense);
    moe_overlap(&megatron, &moe, &dense);
    recompute_modules(&megatron, &moe, &dense);
    printf("%ld configurations legal for some consumer compared, %ld verdicts differ\n",
           n_compared, n_differ);
    CHECK(n_compared > 10000);
    CHECK(n_differ == 0);
    return px_test_result("framework_rules");
}
