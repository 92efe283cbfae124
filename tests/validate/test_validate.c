/* test_validate.c — predicts the published Megatron runs, prints the
 * table, and fails when the mean absolute error of predicted throughput (all
 * rows, or any group) or a full/selective recompute ratio passes the bounds
 * of px_validate.h.  Also checks the two FLOP conventions against the papers'
 * closed forms and the loader's errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_test.h"
#include "px_validate.h"

/* Narayanan et al. 2021 eq. 3 (full recompute counted), per token. */
static double narayanan_hw_flops_per_token(const px_model *m)
{
    double l = (double)m->n_layers, h = (double)m->hidden, s = (double)m->seq_len,
           V = (double)m->vocab;
    return 96.0 * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
}

/* Korthikanti et al. 2022 eq. 7 (model FLOPs), per token. */
static double korthikanti_model_flops_per_token(const px_model *m)
{
    double l = (double)m->n_layers, h = (double)m->hidden, s = (double)m->seq_len,
           V = (double)m->vocab;
    return 72.0 * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
}

static void check_loader_errors(const char *root)
{
    px_val_report rep;
    px_error err;
    CHECK(px_validate_load("/nonexistent/published.json", NULL, &rep, &err) == PX_ERR_IO);
    char path[1024];
    snprintf(path, sizeof path, "%s", "/tmp/px_validate_bad_XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    fputs("[\n {\"id\": \"x\",\n  \"group\": }\n]\n", f);
    fclose(f);
    px_status st = px_validate_load(path, NULL, &rep, &err);
    CHECK(st == PX_ERR_PARSE);
    CHECK_MSG(err.line == 3, "parse error line %d, want 3", err.line);
    f = fopen(path, "w");
    fputs("{\"rows\": []}\n", f);
    fclose(f);
    CHECK(px_validate_load(path, NULL, &rep, &err) == PX_ERR_INVALID);
    /* a row the harness cannot model is kept with a note; the others run */
    f = fopen(path, "w");
    fputs("[{\"id\": \"unknown-gpu\", \"group\": \"g\", \"framework\": \"x\",\n"
          "  \"model\": {\"layers\": 4, \"hidden\": 512, \"heads\": 8, \"vocab\": 1024,"
          " \"seq_len\": 512},\n"
          "  \"hardware\": {\"gpu\": \"MI300X\", \"num_gpus\": 8, \"gpus_per_node\": 8},\n"
          "  \"parallel\": {\"tp\": 1, \"pp\": 1, \"dp\": 8, \"global_batch\": 64},\n"
          "  \"measured\": {\"tflops_per_gpu\": 100, \"util_metric\": \"MFU\"}},\n"
          " {\"id\": \"small\", \"group\": \"g\", \"framework\": \"x\",\n"
          "  \"model\": {\"layers\": 4, \"hidden\": 512, \"heads\": 8, \"vocab\": 1024,"
          " \"seq_len\": 512},\n"
          "  \"hardware\": {\"gpu\": \"H100\", \"num_gpus\": 8, \"gpus_per_node\": 8},\n"
          "  \"parallel\": {\"tp\": 1, \"pp\": 1, \"dp\": 8, \"global_batch\": 64},\n"
          "  \"measured\": {\"tflops_per_gpu\": 100, \"util_metric\": \"MFU\"}}]\n", f);
    fclose(f);
    CHECK(px_validate_file(path, NULL, &rep, &err) == PX_OK);
    if (rep.rows) {
        CHECK(rep.n_rows == 2);
        CHECK(!rep.rows[0].mapped && !rep.rows[0].evaluated);
        CHECK_MSG(strstr(rep.rows[0].note, "hardware.gpu") != NULL, "note: %s",
                  rep.rows[0].note);
        CHECK(rep.rows[1].evaluated && rep.rows[1].pred_tflops > 0.0);
        const px_parallel *p1 = &rep.rows[1].res.best.par;
        CHECK(p1->micro_batch >= 1 && 64 % (p1->micro_batch * 8) == 0);
        CHECK(rep.overall_tflops.n == 1);
        px_validate_free(&rep);
    }
    remove(path);
    (void)root;
}

int main(void)
{
    const char *root = getenv("PARALLAX_SOURCE_ROOT");
    if (!root)
        root = PX_SOURCE_ROOT;
    char copy[1024], shared[1024];
    snprintf(copy, sizeof copy, "%s/tests/validate/data/published-megatron.json", root);
    snprintf(shared, sizeof shared, "%s/../shared/data/published-megatron.json", root);
    FILE *probe = fopen(shared, "rb");
    if (probe) {
        fclose(probe);
        CHECK_MSG(px_test_same_file(copy, shared),
                  "%s differs from %s: copy the shared file into tests/validate/data/", copy,
                  shared);
    }

    check_loader_errors(root);

    px_val_report rep;
    px_error err;
    px_error_clear(&err);
    px_status st = px_validate_file(copy, NULL, &rep, &err);
    if (st != PX_OK) {
        char msg[2048];
        px_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "validate: %s\n", msg);
        CHECK(st == PX_OK);
        return px_test_result("validate");
    }
    px_validate_write_table(&rep, stdout);
    fflush(stdout);

    CHECK(rep.n_rows == 48);
    int n_eval = 0, n_hfu = 0, n_mfu = 0;
    for (int i = 0; i < rep.n_rows; i++) {
        const px_val_row *w = &rep.rows[i];
        /* a row the planner refuses (DeepSpeed ZeRO-3's 530B rows: no layout of
         * the README's call fits) keeps the planner's reason */
        CHECK_MSG(w->evaluated || (w->mapped && strstr(w->note, "fits")),
                  "row %s not evaluated: %s", w->id, w->note);
        if (!w->evaluated)
            continue;
        n_eval++;
        /* every published dimension is the one predicted */
        const px_row_call *c = &w->call;
        const px_parallel *par = &w->res.best.par;
        CHECK(par->tp == c->tp && par->pp == c->pp && par->dp == c->dp);
        if (c->micro_batch > 0)
            CHECK(par->micro_batch == c->micro_batch);
        if (c->recompute >= 0)
            CHECK((int)par->recompute == c->recompute);
        if (c->vpp > 0)
            CHECK(par->vpp == c->vpp);
        /* the row's FLOP convention, against the papers' closed forms for
         * the GPT block with f = 4h */
        double tokens = (double)par->micro_batch * (double)par->n_micro * par->dp *
                        (double)c->seq_len;
        double counted = w->pred_tflops * 1e12 * w->res.best.pred.time.step_s * c->gpus;
        const px_model *m = &c->model;
        if (m->ffn == 4 * m->hidden) {
            if (w->conv == PX_VAL_CONV_HW && par->recompute == PX_RECOMPUTE_FULL) {
                n_hfu++;
                CHECK_CLOSE(counted / tokens, narayanan_hw_flops_per_token(m), 1e-9, 0);
            } else if (w->conv == PX_VAL_CONV_MODEL) {
                n_mfu++;
                CHECK_CLOSE(counted / tokens, korthikanti_model_flops_per_token(m), 1e-9, 0);
            }
        }
    }
    CHECK(n_eval >= 46);
    CHECK(n_hfu >= 20 && n_mfu >= 20);
    CHECK(rep.overall_tflops.n >= 37);
    CHECK(rep.n_ratios >= 5);

    char why[512];
    bool ok = px_validate_within_bounds(&rep, why, sizeof why);
    CHECK_MSG(ok, "%s", why);
    CHECK_MSG(rep.overall_tflops.mean_abs <= PX_VALIDATE_MAX_MAE,
              "throughput MAE %.3f > %.2f", rep.overall_tflops.mean_abs, PX_VALIDATE_MAX_MAE);
    for (int g = 0; g < rep.n_groups; g++)
        CHECK_MSG(rep.groups[g].mean_abs <= PX_VALIDATE_MAX_GROUP_MAE, "group %s MAE %.3f > %.2f",
                  rep.groups[g].name, rep.groups[g].mean_abs, PX_VALIDATE_MAX_GROUP_MAE);
    px_validate_free(&rep);
    return px_test_result("validate");
}
