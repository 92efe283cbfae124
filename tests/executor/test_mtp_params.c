/* test_mtp_params — the executor holds exactly the parameters the planner
 * counts for a model with multi-token-prediction modules: for tiny-llama
 * with 1 and 2 modules (untied and tied embeddings), tiny-mla with 1 and
 * DeepSeek-V3's shapes (4 layers), at TP 1, 2 and 4 (where tp divides the
 * heads) and PP 1 and 2, the elements of every rank's table (TP-replicated
 * tensors once, the last stage's copy of the word embedding not at all)
 * equal px_model_count_params' total + mtp; the tensors with the modules'
 * ids (layer n_layers and on) hold exactly mtp; the modules live on the last
 * stage only, and look the tokens up in the word embedding itself (PP 1),
 * the tied LM head, or a copy summed with the first stage's (emb_copy). */
#include <string.h>

#include "px_model.h"
#include "px_params.h"
#include "px_test.h"

static void check_split(const px_model *m, const char *label, int tp, int pp)
{
    px_error err;
    px_param_count pc;
    px_model_count_params(m, &pc);
    px_parallel par;
    px_parallel_init(&par);
    par.tp = tp;
    par.pp = pp;
    int64_t total = 0, mtp = 0;
    for (int stage = 0; stage < pp; stage++)
        for (int r = 0; r < tp; r++) {
            px_param_table t;
            if (px_params_build(&t, m, &par, r, stage, &err)) {
                CHECK_MSG(0, "%s tp %d pp %d: %s", label, tp, pp, err.msg);
                return;
            }
            bool last = stage == pp - 1;
            CHECK_MSG(t.n_mtp == (last ? m->n_mtp_modules : 0),
                      "%s tp %d pp %d stage %d: %d MTP modules", label, tp, pp, stage, t.n_mtp);
            if (last && pp == 1)
                CHECK(t.mtp_emb == t.word_emb && t.emb_copy < 0);
            if (last && pp > 1) {
                CHECK(t.mtp_emb >= 0 && t.mtp_emb == t.emb_copy);
                CHECK(m->tied_embeddings ? t.mtp_emb == t.lm_head : t.mtp_emb != t.lm_head);
            }
            for (int i = 0; i < t.n_segs; i++) {
                const px_param_seg *s = &t.segs[i];
                bool replicated = s->tp_replicated || s->expert; /* ep 1: on every rank */
                bool copy = s->tensor_id == PX_T_WORD_EMB && stage > 0;
                if (copy || (r > 0 && replicated))
                    continue;
                total += s->n_rows * s->n_cols;
                if (s->tensor_id >= PX_TID_LAYER(m->n_layers, 0) && s->tensor_id < PX_TID_LORA0)
                    mtp += s->n_rows * s->n_cols;
            }
            px_params_free(&t);
        }
    CHECK_MSG(total == pc.total + pc.mtp,
              "%s tp %d pp %d: executor holds %lld parameters, planner counts %lld + %lld (MTP)",
              label, tp, pp, (long long)total, (long long)pc.total, (long long)pc.mtp);
    CHECK_MSG(mtp == pc.mtp, "%s tp %d pp %d: MTP modules hold %lld, planner counts %lld", label,
              tp, pp, (long long)mtp, (long long)pc.mtp);
    fprintf(stderr, "%s tp %d pp %d: %lld parameters, %lld in the MTP modules\n", label, tp, pp,
            (long long)total, (long long)mtp);
}

static void check_model(const char *name, int64_t layers, int64_t mtp, bool tied)
{
    px_error err;
    px_model m;
    if (px_model_load(name, NULL, &m, &err)) {
        CHECK_MSG(0, "%s: %s", name, err.msg);
        return;
    }
    if (layers > 0)
        m.n_layers = layers;
    m.n_mtp_modules = mtp;
    m.tied_embeddings = tied;
    char label[96];
    snprintf(label, sizeof label, "%s mtp %lld%s", name, (long long)mtp, tied ? " tied" : "");
    for (int tp = 1; tp <= 4; tp *= 2)
        for (int pp = 1; pp <= 2; pp++)
            if (m.n_heads % tp == 0)
                check_split(&m, label, tp, pp);
}

int main(void)
{
    check_model("tiny-llama", 0, 1, false);
    check_model("tiny-llama", 0, 2, false);
    check_model("tiny-llama", 0, 1, true);
    check_model("tiny-mla", 0, 1, false);
    check_model("deepseek-v3", 4, 1, false);
    return px_test_result("mtp_params");
}
