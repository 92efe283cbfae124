/* px_plan_csv.c — plan --csv: the ranked plans (or, with --sweep, the best
 * plan of each point) as CSV for spreadsheets and scripts.  Columns are
 * --json's fields, their units in the names; numbers are written with 17
 * significant digits, so each row equals its --json plan. */
#include "px_plan_cmd_internal.h"
#include <errno.h>
#include <string.h>

#include "px_schedule.h"

#define CSV_PLAN_HEADER                                                                        \
    "tp,cp,ep,etp,pp,vpp,dp,sp,micro_batch,num_microbatches,global_batch,tokens_per_step,"    \
    "zero,recompute,schedule,precision,step_time_s,tokens_per_s,mfu,hfu,bubble_fraction,"     \
    "mem_total_bytes"

static void csv_plan_fields(FILE *out, const px_candidate *c, int64_t seq)
{
    const px_parallel *p = &c->par;
    const px_prediction *q = &c->pred;
    int64_t gbatch = px_parallel_global_batch(p);
    fprintf(out, "%d,%d,%d,%d,%d,%d,%d,%s,%lld,%lld,%lld,%lld,%d,%s,%s,%s,%.17g,%.17g,%.17g,"
                 "%.17g,%.17g,%lld",
            p->tp, p->cp, p->ep, p->etp, p->pp, p->vpp, p->dp, p->sp ? "true" : "false",
            (long long)p->micro_batch, (long long)p->n_micro, (long long)gbatch,
            (long long)(gbatch * seq), p->zero, px_recompute_name(p->recompute),
            px_schedule_name(p->schedule), px_precision_name(p->precision), q->time.step_s,
            q->tokens_per_s, q->mfu, q->hfu, q->bubble_fraction, (long long)q->mem.total);
}

/* A text field, quoted when it holds a comma, a quote or a line break. */
static void csv_text(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static px_status csv_done(FILE *out, px_error *err)
{
    errno = 0;
    if (fflush(out) != 0 || ferror(out))
        return PX_FAIL(err, PX_ERR_IO, "writing the CSV output failed: %s",
                       errno ? strerror(errno) : "an earlier write was refused");
    return PX_OK;
}

px_status write_csv(FILE *out, const px_search_result *res, px_error *err)
{
    fputs("position," CSV_PLAN_HEADER "\n", out);
    for (int i = 0; i < res->n_top; i++) {
        fprintf(out, "%d,", i + 1);
        csv_plan_fields(out, &res->top[i], res->seq_len);
        fputc('\n', out);
    }
    return csv_done(out, err);
}

/* A point's number: the swept value, else what the search resolved (0:
 * it did not get that far, an empty cell). */
static void csv_point_number(FILE *out, const px_sweep_spec *s, const px_sweep_row *r,
                             px_sweep_key k, int64_t resolved)
{
    for (int a = 0; a < s->n_axes; a++)
        if (s->axis[a].key == k)
            resolved = s->axis[a].num[r->idx[a]];
    if (resolved > 0)
        fprintf(out, "%lld", (long long)resolved);
}

/* One row a point: the point (GPUs, sequence, profiles), the search's
 * counts, the best plan's columns or, where none could be planned, those
 * columns empty but the point's global batch and precision, and the reason. */
px_status write_sweep_csv(FILE *out, const px_sweep_spec *s, const px_sweep_row *rows, int n,
                          px_error *err)
{
    fputs("gpus,seq_len,hw,framework,evaluated,valid,elapsed_s," CSV_PLAN_HEADER ",error\n",
          out);
    for (int i = 0; i < n; i++) {
        const px_sweep_row *r = &rows[i];
        fprintf(out, "%d,", r->gpus);
        csv_point_number(out, s, r, PX_SWEEP_SEQ, r->seq_len);
        fputc(',', out);
        csv_text(out, r->hw);
        fputc(',', out);
        csv_text(out, r->framework);
        fprintf(out, ",%lld,%lld,%.17g,", (long long)r->n_evaluated, (long long)r->n_valid,
                r->elapsed_s);
        if (r->st == PX_OK) {
            csv_plan_fields(out, &r->best, r->seq_len);
            fputs(",\n", out);
            continue;
        }
        /* the plan columns (CSV_PLAN_HEADER: global_batch is the 11th,
         * precision the 16th of 22), empty but those two */
        for (int k = 0; k < 22; k++) {
            if (k == 10)
                csv_point_number(out, s, r, PX_SWEEP_GLOBAL_BATCH, r->global_batch);
            else if (k == 15)
                csv_text(out, r->precision);
            fputc(',', out);
        }
        csv_text(out, r->msg);
        fputc('\n', out);
    }
    return csv_done(out, err);
}
