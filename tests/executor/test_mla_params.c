/* test_mla_params — the executor holds exactly the parameters the planner
 * counts for a multi-head latent attention model: for tiny-mla, tiny-mla
 * with one q projection (q_lora_rank 0) and DeepSeek-V3's shapes (without
 * its shared expert), at TP 1, 2, 4 and 8 (where tp divides the heads), the
 * elements of every TP rank's parameter table (replicated tensors counted
 * once) equal px_model_count_params' total (+ mtp: DeepSeek-V3's MTP
 * module, exec_mtp_params); and at TP 1 each layer's matrix
 * elements equal px_model_layer_matmul_params, the weights the FLOP count
 * (px_flops.c) multiplies by 2 per token.  Also: the MLA tensors' TP split
 * (downs and latent norms replicated and summed over TP, ups and Wo sliced
 * by heads). */
#include <string.h>

#include "px_model.h"
#include "px_params.h"
#include "px_test.h"

/* Sum over the TP ranks of their tables, replicated tensors once. */
static int64_t table_params(const px_model *m, int tp, px_error *err, int *ok)
{
    px_parallel par;
    px_parallel_init(&par);
    par.tp = tp;
    int64_t total = 0;
    *ok = 1;
    for (int r = 0; r < tp; r++) {
        px_param_table t;
        if (px_params_build(&t, m, &par, r, 0, err)) {
            *ok = 0;
            return 0;
        }
        for (int i = 0; i < t.n_segs; i++) {
            const px_param_seg *s = &t.segs[i];
            bool replicated = s->tp_replicated || s->expert; /* experts: ep 1, on every rank */
            if (r == 0 || !replicated)
                total += s->n_rows * s->n_cols;
        }
        px_params_free(&t);
    }
    return total;
}

/* At TP 1: matrix elements (columns > 1) of layer l's tensors. */
static int64_t layer_matrices(const px_param_table *t, int64_t l)
{
    int64_t n = 0;
    for (int i = 0; i < t->n_segs; i++) {
        const px_param_seg *s = &t->segs[i];
        if (s->tensor_id >= PX_TID_LAYER(l, 0) && s->tensor_id < PX_TID_LAYER(l + 1, 0) &&
            s->n_cols > 1)
            n += s->n_rows * s->n_cols;
    }
    return n;
}

static void check_model(const px_model *m, const char *label)
{
    px_error err;
    px_param_count pc;
    px_model_count_params(m, &pc);
    for (int tp = 1; tp <= 8; tp *= 2) {
        if (m->n_heads % tp != 0)
            continue;
        int ok;
        int64_t got = table_params(m, tp, &err, &ok);
        CHECK_MSG(ok, "%s tp %d: %s", label, tp, err.msg);
        CHECK_MSG(got == pc.total + pc.mtp,
                  "%s tp %d: executor holds %lld parameters, planner counts %lld + %lld (MTP)",
                  label, tp, (long long)got, (long long)pc.total, (long long)pc.mtp);
        fprintf(stderr, "%s tp %d: %lld parameters (planner %lld + %lld)\n", label, tp,
                (long long)got, (long long)pc.total, (long long)pc.mtp);
    }
    px_parallel par;
    px_parallel_init(&par);
    px_param_table t;
    if (px_params_build(&t, m, &par, 0, 0, &err)) {
        CHECK_MSG(0, "%s: %s", label, err.msg);
        return;
    }
    for (int64_t l = 0; l < m->n_layers; l++) {
        int64_t want = px_model_layer_matmul_params(m, l, false), got = layer_matrices(&t, l);
        CHECK_MSG(got == want, "%s layer %lld: %lld matrix elements, planner's FLOP count %lld",
                  label, (long long)l, (long long)got, (long long)want);
    }
    px_params_free(&t);
}

/* The TP split of one MLA layer's tensors at tp 2, rank 1. */
static void check_split(const px_model *m)
{
    px_error err;
    px_parallel par;
    px_parallel_init(&par);
    par.tp = 2;
    px_param_table t;
    if (px_params_build(&t, m, &par, 1, 0, &err)) {
        CHECK_MSG(0, "split: %s", err.msg);
        return;
    }
    int64_t a = m->n_heads, qk = m->qk_nope_head_dim + m->qk_rope_head_dim;
    int seen = 0;
    for (int i = 0; i < t.n_segs; i++) {
        const px_param_seg *s = &t.segs[i];
        if (s->tensor_id < PX_TID_LAYER(0, 0) || s->tensor_id >= PX_TID_LAYER(1, 0))
            continue;
        int64_t kind = s->tensor_id - PX_TID_LAYER(0, 0);
        switch (kind) {
        case PX_T_MLA_WQ_A: case PX_T_MLA_WKV_A: case PX_T_MLA_Q_NORM: case PX_T_MLA_KV_NORM:
            CHECK(s->tp_replicated && s->tp_sum && s->row0 == 0 && s->n_rows == s->full_rows);
            seen++;
            break;
        case PX_T_MLA_WQ_B:
            CHECK(s->full_rows == a * qk && s->row0 == a / 2 * qk && s->n_rows == a / 2 * qk);
            CHECK(!s->tp_replicated && s->n_cols == m->q_lora_rank);
            seen++;
            break;
        case PX_T_MLA_WKV_B: {
            int64_t w = m->qk_nope_head_dim + m->v_head_dim;
            CHECK(s->full_rows == a * w && s->row0 == a / 2 * w && s->n_rows == a / 2 * w);
            CHECK(!s->tp_replicated && s->n_cols == m->kv_lora_rank);
            seen++;
            break;
        }
        case PX_T_WO:
            CHECK(s->full_cols == a * m->v_head_dim && s->col0 == a / 2 * m->v_head_dim);
            CHECK(s->n_rows == m->hidden && !s->tp_replicated);
            seen++;
            break;
        default:
            break;
        }
    }
    CHECK_MSG(seen == 7, "layer 0: %d of the 7 MLA tensors found", seen);
    px_params_free(&t);
}

int main(void)
{
    px_error err;
    px_model m;
    if (px_model_load("tiny-mla", NULL, &m, &err)) {
        fprintf(stderr, "tiny-mla: %s\n", err.msg);
        return 1;
    }
    check_model(&m, "tiny-mla");
    check_split(&m);
    m.q_lora_rank = 0;
    check_model(&m, "tiny-mla (q_lora_rank 0)");
    if (px_model_load("deepseek-v3", NULL, &m, &err)) {
        fprintf(stderr, "deepseek-v3: %s\n", err.msg);
        return 1;
    }
    m.n_shared_experts = 0; /* the engine's MLA and routed experts only */
    check_model(&m, "deepseek-v3 (no shared expert)");
    return px_test_result("mla_params");
}
