/* px_plan_cmd_json.c — the `plan` command's JSON (--json: each candidate
 * with its prediction, detail and stages), the plan file and the HTML page
 * it writes (px_plan_cmd_internal.h). */
#include "px_plan_cmd_internal.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_args.h"
#include "px_cost.h"
#include "px_cost_precision.h"
#include "px_plan_rc_modules.h"
#include "px_framework.h"
#include "px_html.h"
#include "px_partition_refine.h"
#include "px_plan_json.h"
#include "px_plan_predict.h"
#include "px_run_cost.h"
#include "px_search.h"
#include "px_sweep.h"
#include "px_validate.h"

static json_t *stages_json(const px_model *m, const px_hw *hw,
                           const struct px_fw_runtime *run, const px_candidate *c)
{
    px_partition_solution *sol = calloc(2, sizeof *sol);
    px_partition_solution *cur = sol, *uni = sol ? sol + 1 : NULL;
    int64_t limit = 0;
    px_error err;
    if (!sol || stage_table(m, hw, run, &c->par, cur, uni, &limit, &err) != PX_OK) {
        free(sol);
        return json_null();
    }
    json_t *arr = json_array();
    for (int s = 0; s < cur->pp; s++)
        json_array_append_new(
            arr, json_pack("{s:i,s:i,s:f,s:I,s:{s:i,s:i,s:i}}", "stage", s, "layers",
                           cur->stage_layers[s], "time_s", cur->stage_time_s[s], "mem_bytes",
                           (json_int_t)cur->stage_mem_bytes[s], "recompute_layers", "none",
                           cur->stage_recompute[s][PX_RECOMPUTE_NONE], "selective",
                           cur->stage_recompute[s][PX_RECOMPUTE_SELECTIVE], "full",
                           cur->stage_recompute[s][PX_RECOMPUTE_FULL]));
    json_t *o = json_pack("{s:o,s:I,s:f,s:f}", "per_stage", arr, "mem_limit_bytes",
                          (json_int_t)limit, "max_stage_time_s", cur->max_stage_time_s,
                          "uniform_max_stage_time_s",
                          uni->n_chunks > 0 ? uni->max_stage_time_s : -1.0);
    free(sol);
    return o;
}

/* The cost of the run for --json: null where the profile does not say. */
static json_t *run_cost_json(const px_prediction *q, int gpus, const px_hw *hw, double price)
{
    px_run_cost rc;
    if (!px_run_cost_of(q, gpus, hw, price, &rc))
        return json_null();
    return json_pack("{s:f,s:f,s:o,s:o,s:o,s:o}", "days", rc.days, "gpu_hours", rc.gpu_hours,
                     "power_w", rc.power_w > 0 ? json_real(rc.power_w) : json_null(),
                     "energy_mwh", rc.has_energy ? json_real(rc.energy_mwh) : json_null(),
                     "price_per_gpu_hour",
                     rc.has_cost ? json_real(rc.price_per_gpu_hour) : json_null(), "cost_usd",
                     rc.has_cost ? json_real(rc.cost_usd) : json_null());
}

/* ------------------------------------------------------------------ */
/* machines' output                                                    */

static json_int_t ib(double bytes) { return (json_int_t)llround(bytes); }

/* The --explain numbers for machines: activations by part, comm by kind. */
static json_t *detail_json(px_cost_ctx *ctx, const px_candidate *c)
{
    px_cost_detail d;
    px_prediction pr;
    px_cost_eval(ctx, &c->par, 0.0, 0.0, &pr, &d, NULL);
    json_t *comm = json_object();
    comm_row rows[N_COMM_KINDS];
    comm_rows(&d, rows);
    for (int i = 0; i < N_COMM_KINDS; i++)
        json_object_set_new(comm, rows[i].key,
                            json_pack("{s:f,s:f,s:I,s:b}", "total_s", rows[i].tot, "exposed_s",
                                      rows[i].exp, "bytes_per_step", ib(rows[i].bytes),
                                      "crosses_node", rows[i].cross));
    return json_pack(
        "{s:f,s:I,s:I,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,"
        "s:f,s:o}",
        "step_s", pr.time.step_s, "layer_activation_bytes", ib(d.layer_act_bytes), "act_attention_bytes",
        ib(d.act_attention), "act_mlp_bytes", ib(d.act_mlp), "act_norm_bytes", ib(d.act_norm),
        "inflight_microbatches", d.inflight, "buf_embedding_bytes", ib(d.buf_embedding),
        "buf_logits_bytes", ib(d.buf_logits), "buf_loss_bytes", ib(d.buf_loss),
        "buf_final_norm_bytes", ib(d.buf_final_norm), "buf_recompute_bytes",
        ib(d.buf_recompute), "buf_p2p_bytes", ib(d.buf_p2p), "buf_zb_grads_bytes",
        ib(d.buf_zb_grads), "buf_offload_bytes", ib(d.buf_offload), "buf_mtp_bytes",
        ib(d.buf_mtp), "params_per_gpu",
        (json_int_t)d.params_per_gpu, "tp_bytes_per_layer", ib(d.tp_bytes_per_layer),
        "compute_fwd_s", d.compute_fwd_s, "compute_bwd_s", d.compute_bwd_s,
        "compute_recompute_s", d.compute_recompute_s, "gemm_s", d.gemm_s, "attn_s", d.attn_s,
        "membound_s", d.membound_s, "comm", comm);
}

json_t *candidate_json(const px_candidate *c, int64_t seq, int64_t n_layers)
{
    const px_parallel *p = &c->par;
    const px_prediction *q = &c->pred;
    json_t *par = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:b,s:i,s:s,s:s,s:s}", "tp", p->tp,
                            "cp", p->cp, "ep", p->ep, "etp", p->etp, "pp", p->pp, "vpp", p->vpp,
                            "dp", p->dp, "sp", p->sp, "zero", p->zero, "schedule",
                            px_schedule_name(p->schedule), "recompute",
                            px_recompute_name(p->recompute), "grad_dtype",
                            p->grad_fp32 ? "fp32" : "bf16");
    const px_memory *qm = &q->mem;
    json_t *mem = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:i}", "weights_bytes",
                            (json_int_t)qm->weights, "grads_bytes", (json_int_t)qm->grads,
                            "optimizer_bytes", (json_int_t)qm->optimizer, "activations_bytes",
                            (json_int_t)qm->activations, "buffers_bytes",
                            (json_int_t)qm->buffers, "total_bytes", (json_int_t)qm->total,
                            "worst_stage", qm->worst_stage);
    /* what the runtime takes beside the tensors (px_cost_runtime.h) */
    json_t *rt = json_pack("{s:I,s:I,s:I,s:I,s:I,s:i}", "allocated_bytes",
                           (json_int_t)qm->allocated, "workspace_bytes",
                           (json_int_t)qm->workspace, "allocator_cache_bytes",
                           (json_int_t)qm->allocator_cache, "runtime_context_bytes",
                           (json_int_t)qm->runtime_context, "nccl_bytes", (json_int_t)qm->nccl,
                           "nccl_comms", qm->nccl_comms);
    if (mem && rt)
        json_object_update(mem, rt);
    json_decref(rt);
    const px_time *t = &q->time;
    json_t *tm = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "step_s",
                           t->step_s, "compute_s", t->compute_s, "recompute_s", t->recompute_s,
                           "tp_comm_s", t->tp_comm_s, "cp_comm_s", t->cp_comm_s, "ep_comm_s",
                           t->ep_comm_s, "pp_comm_s", t->pp_comm_s, "dp_comm_s", t->dp_comm_s,
                           "dp_comm_total_s", t->dp_comm_total_s, "cp_comm_total_s",
                           t->cp_comm_total_s, "bubble_s", t->bubble_s, "optimizer_s",
                           t->optimizer_s);
    int64_t gbatch = px_parallel_global_batch(p);
    json_t *o = json_pack("{s:o,s:I,s:I,s:I,s:I,s:o,s:o,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
                          "parallel", par, "micro_batch", (json_int_t)p->micro_batch,
                          "num_microbatches", (json_int_t)p->n_micro, "global_batch",
                          (json_int_t)gbatch, "tokens_per_step", (json_int_t)(gbatch * seq),
                          "memory", mem, "time", tm, "step_time_s", t->step_s,
                          "bubble_fraction", q->bubble_fraction, "mfu", q->mfu, "hfu", q->hfu,
                          "tokens_per_s", q->tokens_per_s, "model_flops_per_step",
                          q->model_flops_per_step, "hw_flops_per_step", q->hw_flops_per_step);
    json_t *lpc = json_array();
    for (int i = 0; i < p->n_chunks; i++)
        json_array_append_new(lpc, json_integer(p->layers_per_chunk[i]));
    json_object_set_new(o, "layers_per_chunk", lpc); /* [] = uniform */
    json_object_set_new(o, "mfu_causal", json_real(q->mfu_causal));
    json_object_set_new(par, "precision", json_string(px_precision_name(p->precision)));
    json_object_set_new(par, "cp_comm", json_string(px_cp_comm_name(p->cp_comm)));
    px_plan_rc_modules_write(p->recompute_modules, par, NULL); /* where not the default */
    if (p->moe_a2a_overlap) /* only where it overlaps, as offload below */
        json_object_set_new(par, "moe_a2a_overlap", json_true());
    if (p->tp_comm_overlap)
        json_object_set_new(par, "tp_comm_overlap", json_true());
    if (p->attn_kernel != PX_AK_FRAMEWORK) /* only where one is named */
        json_object_set_new(par, "attention_kernel",
                            json_string(px_attn_kernel_name(p->attn_kernel)));
    if (p->moe_dispatcher != PX_MOE_ALLTOALL) /* only where it is not the all-to-all */
        json_object_set_new(par, "moe_dispatcher",
                            json_string(px_moe_dispatch_name(p->moe_dispatcher)));
    if (px_offload_any(&p->offload)) { /* only where it offloads: other plans keep their bytes */
        json_t *off = json_pack("{s:s,s:f}", "kind", px_offload_kind_name(p->offload.kind),
                                "fraction", p->offload.fraction);
        if (p->offload.activations) {
            json_object_set_new(off, "activations", json_true());
            json_object_set_new(off, "activation_layers", json_integer(p->offload.act_layers));
            json_object_set_new(mem, "host_activation_bytes",
                                json_integer((json_int_t)q->mem.host_activations));
            json_object_set_new(tm, "act_offload_s", json_real(t->act_offload_s));
        }
        json_object_set_new(par, "offload", off);
        json_object_set_new(mem, "host_bytes", json_integer((json_int_t)q->mem.host));
        json_object_set_new(tm, "offload_s", json_real(t->offload_s));
    }
    json_t *lrc = json_array(); /* [] = every layer as parallel.recompute */
    for (int i = 0; i < p->n_layer_recompute; i++)
        json_array_append_new(lrc, json_string(px_recompute_name(
                                       (px_recompute)(p->layer_recompute[i] < PX_RECOMPUTE_COUNT
                                                          ? p->layer_recompute[i]
                                                          : 0))));
    json_object_set_new(o, "layer_recompute", lrc);
    int cnt[PX_RECOMPUTE_COUNT];
    layer_counts(p, n_layers, cnt);
    json_object_set_new(o, "recompute_layers",
                        json_pack("{s:i,s:i,s:i}", "none", cnt[PX_RECOMPUTE_NONE], "selective",
                                  cnt[PX_RECOMPUTE_SELECTIVE], "full", cnt[PX_RECOMPUTE_FULL]));
    if (q->train_tokens > 0) {
        json_t *g = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "train_tokens",
                              q->train_tokens, "days_to_train", q->days_to_train,
                              "ckpt_write_s",
                              q->ckpt_write_s, "ckpt_interval_s", q->ckpt_interval_s,
                              "job_mtbf_s", q->job_mtbf_s, "lost_fraction", q->lost_fraction,
                              "goodput_days", isfinite(q->goodput_days) ? q->goodput_days : -1.0);
        /* bytes are JSON integers */
        json_object_set_new(g, "ckpt_bytes_per_gpu",
                            json_integer((json_int_t)llround(q->ckpt_bytes_per_gpu)));
        json_object_set_new(o, "time_to_train", g);
    }
    return o;
}

px_status make_plan(px_plan *plan, const px_model *m, const px_hw *hw,
                    const px_candidate *c, const struct px_fw_runtime *run,
                    px_error *err)
{
    memset(plan, 0, sizeof *plan);
    plan->version = PX_PLAN_VERSION;
    plan->model = *m;
    plan->hw = *hw;
    plan->par = c->par;
    plan->pred = c->pred;
    /* an uneven split the search did not record runs as it was costed */
    px_cost_record_split(m, &plan->par);
    return px_plan_predict(plan, run, err); /* the per-stage numbers its readers use */
}

/* --html FILE: the top plans side by side, the chosen one in detail. */
px_status write_html(const char *path, const px_model *m, const px_hw *hw, int gpus,
                     const struct px_fw_runtime *run, const px_search_result *res,
                     px_error *err)
{
    px_html_run *runs = calloc(PX_SEARCH_TOP_MAX, sizeof *runs);
    char(*labels)[32] = calloc(PX_SEARCH_TOP_MAX, sizeof *labels);
    if (!runs || !labels) {
        free(runs);
        free(labels);
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the HTML report");
    }
    for (int i = 0; i < res->n_top; i++) {
        snprintf(labels[i], sizeof labels[i], i == 0 ? "#1 (chosen)" : "#%d", i + 1);
        runs[i] = (px_html_run){.label = labels[i], .model = m, .hw = hw,
                                .par = &res->top[i].par, .pred = &res->top[i].pred,
                                .run = run, .detail = i == 0};
    }
    char title[160], sub[320];
    snprintf(title, sizeof title, "Parallax plan: %s on %d x %s", m->name, gpus, hw->name);
    snprintf(sub, sizeof sub, "sequence %lld, global batch %lld sequences (%lld tokens); "
             "memory limit %.1f GB per GPU; %d plans ranked by predicted step time",
             (long long)res->seq_len, (long long)res->global_batch,
             (long long)res->tokens_per_step, (double)res->mem_limit_bytes / 1e9, res->n_top);
    px_status st = px_html_write(path, title, sub, runs, res->n_top, err);
    free(runs);
    free(labels);
    return st;
}

/* The JSON document of `plan --json` (docs/plan-cli.md). */
px_status write_json(FILE *out, const plan_cli *c, const px_model *model,
                     const px_hw *hw, const px_framework *fw,
                     const px_search_result *res, const px_plan *plan, px_error *err)
{
    const px_candidate *best = &res->top[0];
    px_param_count pc;
    px_model_count_params(model, &pc);
    px_cost_ctx *ctx = NULL;
    px_status st = plan_cost_ctx(c->opts.run, model, hw, &ctx, err);
    if (st != PX_OK)
        return st;
    json_t *root = json_object();
    json_object_set_new(root, "model", json_string(model->name));
    if (model->config_note[0])
        json_object_set_new(root, "model_note", json_string(model->config_note));
    json_object_set_new(root, "hw", json_string(hw->name));
    json_object_set_new(root, "framework", json_string(fw->name));
    json_object_set_new(root, "framework_release",
                        json_string(fw->release[0] ? fw->release : "none"));
    if (fw->release_asked[0])
        json_object_set_new(root, "framework_release_asked", json_string(fw->release_asked));
    if (res->batch_note[0])
        json_object_set_new(root, "batch_note", json_string(res->batch_note));
    json_object_set_new(root, "gpus", json_integer(c->gpus));
    json_object_set_new(root, "seq_len", json_integer(res->seq_len));
    json_object_set_new(root, "global_batch", json_integer(res->global_batch));
    json_object_set_new(root, "tokens_per_step", json_integer(res->tokens_per_step));
    json_object_set_new(root, "params", json_integer(pc.total));
    json_object_set_new(root, "mem_limit_bytes", json_integer(res->mem_limit_bytes));
    if (res->offload_auto_used) /* nothing fit on the devices: the plans offload */
        json_object_set_new(root, "offload_auto", json_true());
    json_t *rej = json_object();
    for (int r = 0; r < PX_REJ_COUNT; r++)
        json_object_set_new(rej, px_reject_name((px_reject)r), json_integer(res->rejected[r]));
    json_object_set_new(
        root, "search",
        json_pack("{s:I,s:I,s:f,s:f,s:o}", "evaluated", (json_int_t)res->n_evaluated, "valid",
                  (json_int_t)res->n_valid, "elapsed_s", res->elapsed_s, "configs_per_s",
                  res->analytic_s > 0 ? (double)res->n_evaluated / res->analytic_s : 0.0,
                  "rejected", rej));
    json_t *plans = json_array();
    for (int i = 0; i < res->n_top; i++) {
        json_t *cj = candidate_json(&res->top[i], res->seq_len, model->n_layers);
        json_t *ttt = json_object_get(cj, "time_to_train");
        if (ttt) /* days, GPU-hours, energy and cost beside the goodput */
            json_object_set_new(ttt, "run_cost", run_cost_json(&res->top[i].pred, c->gpus, hw,
                                                               c->price_per_gpu_hour));
        json_object_set_new(cj, "breakdown", detail_json(ctx, &res->top[i]));
        json_array_append_new(plans, cj);
    }
    json_object_set_new(root, "plans", plans);
    json_object_set_new(root, "chosen", json_integer(0));
    json_object_set_new(
        root, "partition",
        json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:s}", "method",
                  res->milp_ran ? "milp" : "uniform", "refined", res->milp_refined, "changed",
                  res->milp_changed, "rescued", res->milp_rescued, "failed", res->milp_failed,
                  "not_proven", res->milp_not_proven, "skipped", res->milp_skipped,
                  "clock_limited", res->milp_clock_hit, "pruned", res->milp_pruned,
                  "exact_dp", res->milp_by_dp,
                  "elapsed_s", res->milp_s, "note", res->milp_note));
    json_object_set_new(root, "stages", stages_json(model, hw, c->opts.run, best));
    if (res->has_rule) {
        json_t *r = candidate_json(&res->rule, res->seq_len, model->n_layers);
        json_object_set_new(r, "breakdown", detail_json(ctx, &res->rule));
        json_object_set_new(r, "fits", json_boolean(res->rule_fits));
        json_object_set_new(r, "same_global_batch", json_boolean(res->rule_same_batch));
        json_object_set_new(r, "steps", json_string(res->rule_notes));
        json_object_set_new(root, "rule_of_thumb", r);
    }
    free(ctx);
    json_t *pj = NULL;
    if (px_plan_to_json(plan, &pj, err) == PX_OK && pj)
        json_object_set_new(root, "plan", pj);
    st = PX_OK;
    if (json_dumpf(root, out, JSON_SORT_KEYS | JSON_INDENT(2)) != 0 || fputc('\n', out) == EOF)
        st = PX_FAIL(err, PX_ERR_IO, "writing the JSON output failed: %s",
                         strerror(errno));
    json_decref(root);
    return st;
}
