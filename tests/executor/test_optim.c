/* test_optim — AdamW's weight decay reaches the weight matrices only: one
 * step of the same model, data and gradients with weight decay 0.5 and with
 * none leaves every norm weight and bias bit-equal and moves every matrix
 * element by exactly -lr * wd * p0 more (AdamW's decoupled decay); with
 * --weight-decay-all (vector_wd_mult 1) the norms and biases move by it too.
 * tiny-gpt has LayerNorm weights and biases everywhere, tiny-qwen3 RMSNorm
 * and qk_norm weights, tiny-mla the MLA latent norms. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "px_backend.h"
#include "px_exec.h"
#include "px_test.h"

static const float LR = 1e-2f, WD = 0.5f;

static px_exec *make(const char *model, float wd, float vector_mult, px_backend *be)
{
    px_error err;
    px_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.version = PX_PLAN_VERSION;
    if (px_model_load(model, NULL, &plan.model, &err)) {
        fprintf(stderr, "%s: %s\n", model, err.msg);
        return NULL;
    }
    plan.hw.peak_flops = 1e10;
    plan.hw.dtype_bytes = 4;
    px_parallel_init(&plan.par);
    plan.par.micro_batch = 1;
    plan.par.n_micro = 1;
    plan.par.seq_len = 8;
    px_exec_options opt;
    px_exec_options_default(&opt);
    opt.lr = LR;
    opt.weight_decay = wd;
    opt.vector_wd_mult = vector_mult;
    px_exec *ex = NULL;
    if (px_exec_create(&ex, &plan, &opt, be, MPI_COMM_WORLD, &err)) {
        fprintf(stderr, "%s: %s\n", model, err.msg);
        px_exec_destroy(ex);
        return NULL;
    }
    return ex;
}

/* The weights after one updating step (caller frees); p0: before it. */
static float *stepped(const char *model, float wd, float vector_mult, px_backend *be,
                      float **p0, int64_t *n)
{
    px_exec *ex = make(model, wd, vector_mult, be);
    if (!ex)
        return NULL;
    float *p = px_exec_params(ex, n);
    if (p0) {
        *p0 = malloc((size_t)*n * sizeof **p0);
        memcpy(*p0, p, (size_t)*n * sizeof **p0);
    }
    double loss;
    px_error err;
    if (px_exec_step(ex, 0, true, &loss, &err)) {
        fprintf(stderr, "%s: %s\n", model, err.msg);
        px_exec_destroy(ex);
        return NULL;
    }
    float *out = malloc((size_t)*n * sizeof *out);
    memcpy(out, px_exec_params(ex, n), (size_t)*n * sizeof *out);
    px_exec_destroy(ex);
    return out;
}

/* |(a - b) - want| within 4 roundings of the values involved (a and b are
 * p0 - lr (u + wd p0) and p0 - lr u with |u| <= ~1 on the first step). */
static bool decayed_by(float a, float b, double want, float p0)
{
    double tol = 4.0 * FLT_EPSILON * (fabs(p0) + 2.0 * LR);
    return fabs(((double)a - b) - want) <= tol;
}

static void check_model(const char *model, px_backend *be)
{
    int64_t n = 0, n1 = 0, n2 = 0;
    float *p0 = NULL;
    float *dec = stepped(model, WD, 0.0f, be, &p0, &n);
    float *none = stepped(model, 0.0f, 0.0f, be, NULL, &n1);
    float *all = stepped(model, WD, 1.0f, be, NULL, &n2);
    CHECK_MSG(dec && none && all && n == n1 && n == n2, "%s: engines failed", model);
    if (!(dec && none && all && n == n1 && n == n2))
        return;
    px_exec *ex = make(model, WD, 0.0f, be);
    const px_param_table *tab = px_exec_table(ex);
    int64_t vec = 0, mat = 0, bad_vec = 0, bad_mat = 0, bad_all = 0;
    for (int i = 0; i < tab->n_segs; i++) {
        const px_param_seg *s = &tab->segs[i];
        bool vector = s->full_cols == 1;
        for (int64_t e = s->offset; e < s->offset + s->n_rows * s->n_cols; e++) {
            double want = -(double)LR * WD * p0[e];
            if (vector) {
                vec++;
                bad_vec += memcmp(&dec[e], &none[e], sizeof *dec) != 0;
                bad_all += !decayed_by(all[e], none[e], want, p0[e]);
            } else {
                mat++;
                bad_mat += !decayed_by(dec[e], none[e], want, p0[e]);
            }
        }
    }
    px_exec_destroy(ex);
    fprintf(stderr, "%s: %lld norm/bias and %lld matrix elements\n", model, (long long)vec,
            (long long)mat);
    CHECK_MSG(vec > 0 && mat > 0, "%s: nothing to check", model);
    CHECK_MSG(bad_vec == 0, "%s: %lld norm/bias elements decayed", model, (long long)bad_vec);
    CHECK_MSG(bad_mat == 0, "%s: %lld matrix elements not decayed by lr*wd*p0", model,
              (long long)bad_mat);
    CHECK_MSG(bad_all == 0, "%s: --weight-decay-all left %lld norm/bias elements undecayed",
              model, (long long)bad_all);
    free(p0);
    free(dec);
    free(none);
    free(all);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 1) {
        fprintf(stderr, "test_optim runs on one rank\n");
        MPI_Finalize();
        return 1;
    }
    px_backend be;
    px_error err;
    px_backend_cpu_create(&be, &err);
    check_model("tiny-gpt", &be);
    check_model("tiny-qwen3", &be);
    check_model("tiny-mla", &be);
    be.destroy(&be);
    int rc = px_test_result("optim");
    MPI_Finalize();
    return rc;
}
