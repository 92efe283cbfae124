/* px_measure.c — measured vs predicted step numbers, the step table and the
 * report JSON. */
#include "px_measure.h"
#include "px_report_io.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "px_plan_check.h"
#include "px_flops.h"
#include "px_io.h"
#include "px_layout.h"
#include "px_memtrack.h"
#include "px_trace.h"

static int64_t seq_len_of(const px_plan *p)
{
    return px_plan_seq_len(&p->model, &p->par);
}

static double tokens_per_step(const px_plan *p)
{
    return (double)px_parallel_global_batch(&p->par) * (double)seq_len_of(p);
}

/* Hardware FLOPs with the plan's recompute choice, uniform or per layer. */
static double hw_flops_per_step(const px_plan *p)
{
    return px_flops_hw_per_token_layers(&p->model, seq_len_of(p), p->par.recompute,
                                        p->par.layer_recompute, p->par.n_layer_recompute) *
           tokens_per_step(p);
}

static void fill_rates(px_measure *x, const px_plan *p)
{
    double gpus = (double)px_parallel_gpus(&p->par);
    double peak = p->hw.peak_flops;
    double t = x->step_time_s;
    if (t <= 0.0) {
        x->tokens_per_s = x->mfu = x->hfu = 0.0;
        return;
    }
    x->tokens_per_s = tokens_per_step(p) / t;
    double flops = px_flops_model_per_step(&p->model, seq_len_of(p), tokens_per_step(p));
    x->mfu = peak > 0.0 ? flops / (t * gpus * peak) : 0.0;
    x->hfu = peak > 0.0 ? hw_flops_per_step(p) / (t * gpus * peak) : 0.0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median, minimum and mean of t[0, n) (all 0 when n is 0). */
static void step_stats(const double *t, int64_t n, double *median, double *min, double *mean)
{
    *median = *min = *mean = 0.0;
    double *sorted = n > 0 ? malloc((size_t)n * sizeof *sorted) : NULL;
    if (!sorted)
        return;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += sorted[i] = t[i];
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    *median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    *min = sorted[0];
    *mean = sum / (double)n;
    free(sorted);
}

void px_measure_measure(px_run *run, const px_plan *plan)
{
    px_measure *x = &run->measured;
    step_stats(run->step_time_s + run->warmup, run->steps, &x->step_time_s,
               &run->step_time_min_s, &run->step_time_mean_s);
    fill_rates(x, plan);
    int64_t worst = 0;
    for (int r = 0; r < run->world; r++)
        worst = run->peak_memory_bytes[r] > worst ? run->peak_memory_bytes[r] : worst;
    x->peak_memory_bytes = (double)worst;
}

void px_measure_predicted(const px_plan *plan, px_measure *out)
{
    out->step_time_s = plan->pred.time.step_s;
    out->tokens_per_s = plan->pred.tokens_per_s;
    out->mfu = plan->pred.mfu;
    out->hfu = plan->pred.hfu;
    /* the executor's tracked allocator counts tensors: the prediction's
     * allocated bytes, not the runtime's share beside them (a plan file
     * without that split: its total) */
    const px_memory *m = &plan->pred.mem;
    out->peak_memory_bytes = (double)(m->allocated > 0 ? m->allocated : m->total);
}

px_status px_measure_stages(px_run *run, const px_plan *plan, px_error *err)
{
    run->n_stages = 0;
    if (plan->n_stages == 0)
        return PX_OK; /* the plan carries no prediction (as the summary's n/a) */
    int pp = plan->par.pp;
    if (plan->n_stages != pp)
        return PX_FAIL(err, PX_ERR_INVALID, "plan: %d stage predictions for pp = %d",
                       plan->n_stages, pp);
    px_layout lay;
    px_status st = px_layout_init(&lay, &plan->par, err);
    if (st != PX_OK)
        return st;
    if (lay.world != run->world)
        return PX_FAIL(err, PX_ERR_INVALID, "plan needs %d ranks, the run has %d", lay.world,
                       run->world);
    int64_t *stage = calloc((size_t)pp, sizeof *stage);
    int *rank_stage = calloc((size_t)run->world, sizeof *rank_stage);
    if (!stage || !rank_stage) {
        free(stage);
        free(rank_stage);
        return PX_FAIL(err, PX_ERR_NOMEM, "per-stage memory: out of memory");
    }
    /* the plan file's per-stage prediction: the numbers `plan` wrote, its
     * tensors (the runtime's share is not in the tracked allocator) */
    for (int s = 0; s < pp; s++)
        stage[s] = plan->stages[s].total - plan->stages[s].runtime;
    for (int r = 0; r < run->world; r++)
        rank_stage[r] = px_layout_coord(&lay, r, PX_DIM_PP);
    run->n_stages = pp;
    run->predicted_stage_peak_bytes = stage;
    run->rank_stage = rank_stage;
    return PX_OK;
}

void px_measure_free_stages(px_run *run)
{
    free(run->predicted_stage_peak_bytes);
    free(run->rank_stage);
    run->predicted_stage_peak_bytes = NULL;
    run->rank_stage = NULL;
    run->n_stages = 0;
}

bool px_measure_predicted_classes(const px_plan *plan, double *out)
{
    const px_class_time *c = &plan->class_time;
    out[PX_TRACE_GEMM] = c->gemm_s;
    out[PX_TRACE_ATTENTION] = c->attention_s;
    out[PX_TRACE_ELEMENTWISE] = c->elementwise_s;
    out[PX_TRACE_COMM] = c->comm_s;
    out[PX_TRACE_P2P] = c->p2p_s;
    out[PX_TRACE_OPTIMIZER] = c->optimizer_s;
    return plan->n_stages > 0; /* the plan carries a prediction */
}

/* The report's time by class: measured per rank, predicted per step. */
static void write_classes(json_t *root, const px_run *run, const px_plan *plan)
{
    if (!run->class_s)
        return;
    json_t *meas = json_object();
    for (int c = 0; c <= PX_TRACE_N_CLASSES; c++) {
        json_t *a = json_array();
        for (int r = 0; r < run->world; r++)
            json_array_append_new(a, json_real(run->class_s[r * (PX_TRACE_N_CLASSES + 1) + c]));
        json_object_set_new(meas, c < PX_TRACE_N_CLASSES ? px_trace_class_name(c) : "step", a);
    }
    json_object_set_new(root, "measured_class_s", meas);
    double pc[PX_TRACE_N_CLASSES];
    if (!px_measure_predicted_classes(plan, pc))
        return; /* a plan without a prediction: measured only */
    json_t *pred = json_object();
    for (int c = 0; c < PX_TRACE_N_CLASSES; c++)
        json_object_set_new(pred, px_trace_class_name(c), json_real(pc[c]));
    json_object_set_new(pred, "step", json_real(plan->pred.time.step_s));
    json_object_set_new(root, "predicted_class_s", pred);
}

/* The prediction for rank r's stage, or 0 when there is none. */
static int64_t rank_predicted(const px_run *run, int r)
{
    if (run->n_stages < 1 || !run->rank_stage || !run->predicted_stage_peak_bytes)
        return 0;
    int s = run->rank_stage[r];
    return s >= 0 && s < run->n_stages ? run->predicted_stage_peak_bytes[s] : 0;
}

void px_measure_print_header(FILE *f, const px_plan *plan, int64_t steps, int64_t warmup)
{
    const px_parallel *p = &plan->par;
    fprintf(f, "# execute: model %s, %d ranks: tp %d (sp %s) cp %d pp %d vpp %d dp %d ep %d "
               "zero %d, schedule %s, recompute %s\n",
            plan->model.name, px_parallel_gpus(p), p->tp, p->sp ? "on" : "off", p->cp, p->pp,
            p->vpp, p->dp, p->ep, p->zero, px_schedule_name(p->schedule),
            p->n_layer_recompute ? "per-layer" : px_recompute_name(p->recompute));
    fprintf(f, "# global batch %lld sequences x %lld tokens (micro-batch %lld, %lld micro-batches), "
               "%lld warm-up + %lld timed steps, peak %.4g FLOP/s per rank (%s)\n",
            (long long)px_parallel_global_batch(p), (long long)seq_len_of(plan),
            (long long)p->micro_batch, (long long)p->n_micro, (long long)warmup,
            (long long)steps, plan->hw.peak_flops, plan->hw.name);
    fprintf(f, "%6s %6s %12s %12s %14s %8s %8s %18s\n", "step", "phase", "loss", "time_s",
            "tokens_per_s", "mfu", "hfu", "peak_mem_bytes");
}

void px_measure_print_step(FILE *f, int64_t step, bool warmup, double loss, double time_s,
                          const px_plan *plan, int64_t peak_bytes)
{
    px_measure x = {0};
    x.step_time_s = time_s;
    fill_rates(&x, plan);
    fprintf(f, "%6lld %6s %12.6f %12.6f %14.1f %8.4f %8.4f %18lld\n", (long long)step,
            warmup ? "warmup" : "timed", loss, time_s, x.tokens_per_s, x.mfu, x.hfu,
            (long long)peak_bytes);
    fflush(f);
}

/* The error of the prediction, (predicted - measured) / measured: the same
 * sign and denominator as `compare` (px_report_rel_err), so a report and a
 * comparison of it agree; + means the plan predicted too much.  NaN (null in
 * the report) when the plan carries no prediction (0) or nothing was
 * measured. */
static double rel_err(double measured, double predicted)
{
    if (predicted == 0.0 || measured == 0.0)
        return NAN;
    return (predicted - measured) / measured;
}

void px_measure_print_summary(FILE *f, const px_run *run, const px_plan *plan)
{
    px_measure pr;
    px_measure_predicted(plan, &pr);
    const px_measure *x = &run->measured;
    const char *names[5] = {"step_time_s", "tokens_per_s", "mfu", "hfu", "peak_memory_bytes"};
    double mv[5] = {x->step_time_s, x->tokens_per_s, x->mfu, x->hfu, x->peak_memory_bytes};
    double pv[5] = {pr.step_time_s, pr.tokens_per_s, pr.mfu, pr.hfu, pr.peak_memory_bytes};
    fprintf(f, "# %-18s %16s %16s %10s\n", "quantity", "measured", "predicted", "rel_error");
    for (int i = 0; i < 5; i++) {
        double e = rel_err(mv[i], pv[i]);
        if (isnan(e))
            fprintf(f, "# %-18s %16.6g %16s %10s\n", names[i], mv[i], "n/a", "n/a");
        else
            fprintf(f, "# %-18s %16.6g %16.6g %+10.4f\n", names[i], mv[i], pv[i], e);
    }
    if (run->device_time_s && run->steps > 0) {
        double sum = 0.0;
        for (int64_t i = run->warmup; i < run->warmup + run->steps; i++)
            sum += run->device_time_s[i];
        fprintf(f, "# %-18s %16.6g   (device clock, CUDA events; step_time_s is wall clock)\n",
                "device_step_s", sum / (double)run->steps);
    }
    if (run->reserved_peak_bytes) {
        fprintf(f, "# device allocator reserved at its peak (bytes; tracked peak above):");
        for (int r = 0; r < run->world; r++)
            fprintf(f, " %lld", (long long)run->reserved_peak_bytes[r]);
        fprintf(f, "\n");
    }
    if (run->host_bytes && plan->par.offload.kind != PX_OFFLOAD_NONE) {
        /* outside the device peak; the plan's figure adds the fp32 gradient
         * copy a GPU framework stages on the host */
        fprintf(f, "# host memory (bytes; offloaded optimizer state):");
        for (int r = 0; r < run->world; r++)
            fprintf(f, " %lld", (long long)run->host_bytes[r]);
        fprintf(f, "; predicted %lld\n", (long long)plan->pred.mem.host);
    }
    if (run->n_stages > 0) {
        fprintf(f, "# predicted peak per pipeline stage (bytes):");
        for (int s = 0; s < run->n_stages; s++)
            fprintf(f, " %lld", (long long)run->predicted_stage_peak_bytes[s]);
        fprintf(f, "\n");
    }
    /* each rank against its own stage's prediction (the summary above
     * compares the worst rank with the worst stage) */
    fprintf(f, "# %-6s %5s %18s %18s %10s", "rank", "stage", "peak_mem_bytes", "predicted_bytes",
            "rel_error");
    for (int k = 0; k < PX_MEM_KINDS; k++)
        fprintf(f, " %12s", px_mem_kind_name((px_mem_kind)k));
    fprintf(f, "\n");
    for (int r = 0; r < run->world; r++) {
        int64_t pred = rank_predicted(run, r);
        double e = rel_err((double)run->peak_memory_bytes[r], (double)pred);
        char stage[16] = "n/a", pv[24] = "n/a", ev[16] = "n/a";
        if (run->n_stages > 0) {
            snprintf(stage, sizeof stage, "%d", run->rank_stage[r]);
            snprintf(pv, sizeof pv, "%lld", (long long)pred);
        }
        if (!isnan(e))
            snprintf(ev, sizeof ev, "%+.4f", e);
        fprintf(f, "# %-6d %5s %18lld %18s %10s", r, stage, (long long)run->peak_memory_bytes[r],
                pv, ev);
        for (int k = 0; k < PX_MEM_KINDS; k++)
            fprintf(f, " %12lld", (long long)run->peak_breakdown[r][k]);
        fprintf(f, "\n");
    }
}

/* A number, or null where it is NaN or infinite (JSON has neither): a
 * value is never dropped. */
static json_t *num_json(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

static json_t *measure_json(const px_measure *x)
{
    json_t *o = json_object();
    json_object_set_new(o, "step_time_s", num_json(x->step_time_s));
    json_object_set_new(o, "tokens_per_s", num_json(x->tokens_per_s));
    json_object_set_new(o, "mfu", num_json(x->mfu));
    json_object_set_new(o, "hfu", num_json(x->hfu));
    json_object_set_new(o, "peak_memory_bytes", json_integer((json_int_t)x->peak_memory_bytes));
    return o;
}

static json_t *rel_json(double m, double p)
{
    double e = rel_err(m, p);
    return num_json(e);
}

/* A per-step series as an array (warm-up steps first). */
static json_t *series_json(const px_run *run, const double *v)
{
    json_t *a = json_array();
    for (int64_t i = 0; i < run->warmup + run->steps; i++)
        json_array_append_new(a, num_json(v[i]));
    return a;
}

/* The per-step series: losses, step times (wall, device, CPU), gradient
 * norms, and where the run went non-finite. */
static void write_steps(json_t *root, const px_run *run)
{
    bool non_finite = false;
    for (int64_t i = 0; i < run->warmup + run->steps; i++)
        non_finite = non_finite || !isfinite(run->losses[i]);
    json_object_set_new(root, "losses", series_json(run, run->losses));
    json_object_set_new(root, "step_times_s", series_json(run, run->step_time_s));
    json_object_set_new(root, "grad_norms",
                        run->grad_norms ? series_json(run, run->grad_norms) : json_array());
    if (run->mtp_losses)
        json_object_set_new(root, "mtp_losses", series_json(run, run->mtp_losses));
    if (run->device_time_s)
        json_object_set_new(root, "device_step_times_s", series_json(run, run->device_time_s));
    if (run->cpu_time_s)
        json_object_set_new(root, "cpu_step_times_s", series_json(run, run->cpu_time_s));
    json_object_set_new(root, "first_step", json_integer(run->first_step));
    /* null in losses / grad_norms means NaN or infinite there */
    json_object_set_new(root, "non_finite_losses", json_boolean(non_finite));
    json_object_set_new(root, "diverged_step", run->diverged_step >= 0
                                                   ? json_integer(run->diverged_step)
                                                   : json_null());
    json_object_set_new(root, "warmup_steps", json_integer(run->warmup));
    json_object_set_new(root, "timed_steps", json_integer(run->steps));
}

/* Memory per rank: the peak, what it held at the peak by kind, the device
 * allocator's reserve, and beside them the prediction of the rank's
 * pipeline stage. */
static void write_rank_memory(json_t *root, const px_run *run, const px_plan *plan)
{
    json_t *peaks = json_array(), *breakdown = json_array();
    for (int r = 0; r < run->world; r++) {
        json_array_append_new(peaks, json_integer((json_int_t)run->peak_memory_bytes[r]));
        json_t *b = json_object();
        for (int k = 0; k < PX_MEM_KINDS; k++)
            json_object_set_new(b, px_mem_kind_name((px_mem_kind)k),
                                json_integer((json_int_t)run->peak_breakdown[r][k]));
        json_array_append_new(breakdown, b);
    }
    json_object_set_new(root, "per_rank_peak_memory_bytes", peaks);
    json_object_set_new(root, "per_rank_memory_at_peak_bytes", breakdown);
    if (run->n_stages > 0) {
        json_t *stages = json_array(), *rank_pred = json_array(), *rank_stage = json_array();
        json_t *rank_err = json_array();
        for (int s = 0; s < run->n_stages; s++)
            json_array_append_new(stages,
                                   json_integer((json_int_t)run->predicted_stage_peak_bytes[s]));
        for (int r = 0; r < run->world; r++) {
            int64_t pred = rank_predicted(run, r);
            json_array_append_new(rank_stage, json_integer(run->rank_stage[r]));
            json_array_append_new(rank_pred, json_integer((json_int_t)pred));
            json_array_append_new(rank_err,
                                  rel_json((double)run->peak_memory_bytes[r], (double)pred));
        }
        json_object_set_new(root, "predicted_stage_peak_memory_bytes", stages);
        json_object_set_new(root, "per_rank_stage", rank_stage);
        json_object_set_new(root, "per_rank_predicted_peak_memory_bytes", rank_pred);
        json_object_set_new(root, "per_rank_peak_memory_relative_error", rank_err);
    }
    if (run->host_bytes && plan->par.offload.kind != PX_OFFLOAD_NONE) {
        json_t *host = json_array();
        for (int r = 0; r < run->world; r++)
            json_array_append_new(host, json_integer((json_int_t)run->host_bytes[r]));
        json_object_set_new(root, "per_rank_host_bytes", host);
        json_object_set_new(root, "predicted_host_bytes",
                            json_integer((json_int_t)plan->pred.mem.host));
    }
    if (run->reserved_peak_bytes) {
        json_t *res = json_array();
        for (int r = 0; r < run->world; r++)
            json_array_append_new(res, json_integer((json_int_t)run->reserved_peak_bytes[r]));
        json_object_set_new(root, "per_rank_device_reserved_peak_bytes", res);
    }
}

/* Measured against the plan file's prediction, and the error of each. */
static void write_comparison(json_t *root, const px_run *run, const px_plan *plan)
{
    px_measure pr;
    px_measure_predicted(plan, &pr);
    const px_measure *x = &run->measured;
    json_t *mj = measure_json(x);
    json_object_set_new(mj, "step_time_min_s", json_real(run->step_time_min_s));
    json_object_set_new(mj, "step_time_mean_s", json_real(run->step_time_mean_s));
    json_object_set_new(root, "measured", mj);
    json_object_set_new(root, "predicted", measure_json(&pr));
    json_t *rel = json_object();
    json_object_set_new(rel, "step_time_s", rel_json(x->step_time_s, pr.step_time_s));
    json_object_set_new(rel, "tokens_per_s", rel_json(x->tokens_per_s, pr.tokens_per_s));
    json_object_set_new(rel, "mfu", rel_json(x->mfu, pr.mfu));
    json_object_set_new(rel, "hfu", rel_json(x->hfu, pr.hfu));
    json_object_set_new(rel, "peak_memory_bytes",
                        rel_json(x->peak_memory_bytes, pr.peak_memory_bytes));
    json_object_set_new(root, "relative_error", rel);
}

px_status px_measure_write(const char *path, const px_run *run, const px_plan *plan,
                          const char *plan_path, px_error *err)
{
    json_t *root = json_object();
    json_object_set_new(root, "schema_version", json_integer(PX_REPORT_VERSION));
    write_steps(root, run);
    write_rank_memory(root, run, plan);
    write_comparison(root, run, plan);
    write_classes(root, run, plan);
    json_object_set_new(root, "dtype", json_string(run->dtype ? run->dtype : ""));
    json_object_set_new(root, "world_size", json_integer(run->world));
    json_object_set_new(root, "backend", json_string(run->backend ? run->backend : ""));
    json_object_set_new(root, "plan", json_string(plan_path ? plan_path : ""));
    json_object_set_new(root, "model", json_string(plan->model.name));
    json_object_set_new(root, "model_flops_per_step",
                        json_real(px_flops_model_per_step(&plan->model, seq_len_of(plan),
                                                          tokens_per_step(plan))));
    json_object_set_new(root, "hw_flops_per_step", json_real(hw_flops_per_step(plan)));
    px_status st = px_io_write_json(path, root, JSON_INDENT(2) | JSON_SORT_KEYS, err);
    json_decref(root);
    return st;
}
