/* px_plan_tables.c — the `plan` command's text output: the ranked table,
 * --explain's breakdown of time, communication and memory, the stage table,
 * goodput and the rule of thumb (px_plan_cmd_internal.h). */
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
#include "px_efficiency.h"
#include "px_finetune.h"
#include "px_framework.h"
#include "px_html.h"
#include "px_hybrid.h"
#include "px_partition_refine.h"
#include "px_plan_json.h"
#include "px_plan_predict.h"
#include "px_run_cost.h"
#include "px_search.h"
#include "px_sweep.h"
#include "px_validate.h"

static double gb(double bytes) { return bytes / 1e9; }

/* The recompute column: the uniform choice, or "mixed" when the partition
 * program chose per layer and the layers differ. */
const char *recompute_label(const px_parallel *p)
{
    for (int i = 1; i < p->n_layer_recompute; i++)
        if (p->layer_recompute[i] != p->layer_recompute[0])
            return "mixed";
    if (p->n_layer_recompute > 0 && p->layer_recompute[0] < PX_RECOMPUTE_COUNT)
        return px_recompute_name((px_recompute)p->layer_recompute[0]);
    return px_recompute_name(p->recompute);
}

/* "8,9,9,6" or "uniform" */
static void split_label(const px_parallel *p, char *buf, size_t n)
{
    if (p->n_chunks <= 0) {
        snprintf(buf, n, "uniform");
        return;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int c = 0; c < p->n_chunks && len + 8 < n; c++)
        len += (size_t)snprintf(buf + len, n - len, "%s%d", c ? "," : "", p->layers_per_chunk[c]);
}

void layer_counts(const px_parallel *p, int64_t n_layers, int counts[PX_RECOMPUTE_COUNT])
{
    for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
        counts[r] = 0;
    for (int64_t i = 0; i < n_layers; i++) {
        int r = i < p->n_layer_recompute ? p->layer_recompute[i] : (int)p->recompute;
        counts[r < PX_RECOMPUTE_COUNT ? r : 0]++;
    }
}

/* GB with one decimal, or three significant digits under 1 GB: a model of
 * a few MB (the CPU executor's tiny presets) must not read 0.0. */
static void fmt_mem_gb(char *buf, size_t n, double bytes)
{
    double g = gb(bytes);
    snprintf(buf, n, g >= 1.0 ? "%.1f" : "%.3g", g);
}

static void print_row(FILE *out, const char *label, const px_candidate *c, bool chosen)
{
    const px_parallel *p = &c->par;
    const px_prediction *q = &c->pred;
    char mem[32];
    fmt_mem_gb(mem, sizeof mem, (double)q->mem.total);
    fprintf(out, "%4s %4d %3d %3d %3d %3d %3d %5d %4lld %5lld %4d %-9s %-11s %-3s %9s %8.3f %10.4g %5.1f%% %s\n",
           label, p->tp, p->cp, p->ep, p->etp, p->pp, p->vpp, p->dp, (long long)p->micro_batch,
           (long long)p->n_micro, p->zero, recompute_label(p),
           px_schedule_name(p->schedule), p->sp ? "on" : "off", mem, q->time.step_s, q->tokens_per_s, 100.0 * q->mfu, chosen ? "*" : "");
}

static void print_header(FILE *out)
{
    fprintf(out, "%4s %4s %3s %3s %3s %3s %3s %5s %4s %5s %4s %-9s %-11s %-3s %9s %8s %10s %6s %s\n",
           "#", "TP", "CP", "EP", "ETP", "PP", "VPP", "DP", "mbs", "m", "ZeRO", "recompute",
           "schedule", "SP", "mem[GB]", "step[s]", "tokens/s", "MFU", "chosen");
}


void comm_rows(const px_cost_detail *d, comm_row rows[N_COMM_KINDS])
{
    const comm_row r[N_COMM_KINDS] = {
        {"TP/SP", "tp", d->tp_total_s, d->tp_exposed_s, d->tp_bytes_per_step, d->tp_crosses},
        {"CP ring", "cp", d->cp_total_s, d->cp_exposed_s, d->cp_bytes_per_step, d->cp_crosses},
        {"EP a2a", "ep", d->ep_total_s, d->ep_exposed_s, d->ep_bytes_per_step, d->ep_crosses},
        {"PP p2p", "pp", d->pp_total_s, d->pp_exposed_s, d->pp_bytes_per_step, d->pp_crosses},
        {"DP/ZeRO", "dp", d->dp_total_s, d->dp_exposed_s, d->dp_bytes_per_step, d->dp_crosses},
    };
    memcpy(rows, r, sizeof r);
}

static void explain(FILE *out, px_cost_ctx *ctx, const px_candidate *c, const px_search_result *res,
                    const px_hw *hw)
{
    px_cost_detail d;
    px_prediction pr;
    px_cost_eval(ctx, &c->par, c->pred.train_tokens, 0.0, &pr, &d, NULL);
    const px_memory *m = &pr.mem;
    fprintf(out, "\n# memory per GPU, worst stage (stage %d of %d), GB (1e9 bytes)\n", m->worst_stage,
           c->par.pp);
    fprintf(out, "  %-34s %10.2f\n", "weights", gb((double)m->weights));
    fprintf(out, "  %-34s %10.2f   (%s)\n", "gradients", gb((double)m->grads),
           c->par.grad_fp32 ? "fp32 main gradients" : "bf16");
    fprintf(out, "  %-34s %10.2f   (ZeRO-%d)\n", "optimizer state", gb((double)m->optimizer),
           c->par.zero);
    fprintf(out, "  %-34s %10.2f   (%.2f micro-batches in flight, %.1f MB a layer)\n",
           "activations", gb((double)m->activations), d.inflight, d.layer_act_bytes / 1e6);
    /* a hybrid model's Mamba-2 mixers are its other sequence mixer */
    bool mamba = ctx->n_kind[PX_LAYER_MAMBA] > 0;
    fprintf(out, "    %-32s %10.2f\n", mamba ? "attention and Mamba-2 mixers" : "attention",
            gb(d.act_attention));
    fprintf(out, "    %-32s %10.2f\n", "MLP", gb(d.act_mlp));
    fprintf(out, "    %-32s %10.2f\n", "norms", gb(d.act_norm));
    fprintf(out, "  %-34s %10.2f\n", "buffers", gb((double)m->buffers));
    fprintf(out, "    %-32s %10.2f\n", "embedding output", gb(d.buf_embedding));
    fprintf(out, "    %-32s %10.2f\n", "final norm + head input", gb(d.buf_final_norm));
    fprintf(out, "    %-32s %10.2f\n", "logits (fp32, current)", gb(d.buf_logits));
    fprintf(out, "    %-32s %10.2f\n", "loss softmax (fp32)", gb(d.buf_loss));
    fprintf(out, "    %-32s %10.2f\n", "recompute working set", gb(d.buf_recompute));
    fprintf(out, "    %-32s %10.2f\n", "p2p / ZeRO-3 gather", gb(d.buf_p2p));
    fprintf(out, "    %-32s %10.2f\n", "zero-bubble grads kept B->W", gb(d.buf_zb_grads));
    if (c->par.offload.activations)
        fprintf(out, "    %-32s %10.2f\n", "offloaded layer, reloaded", gb(d.buf_offload));
    if (ctx->model->n_mtp_modules > 0)
        fprintf(out, "    %-32s %10.2f\n", "multi-token prediction", gb(d.buf_mtp));
    fprintf(out, "  %-34s %10.2f   (the allocator's allocated peak)\n", "tensors",
           gb((double)m->allocated));
    fprintf(out, "  %-34s %10.2f\n", "runtime",
           gb((double)(m->total - m->allocated)));
    fprintf(out, "    %-32s %10.2f   (cuBLAS, cuBLASLt, TE)\n", "library workspaces",
           gb((double)m->workspace));
    fprintf(out, "    %-32s %10.2f\n", "CUDA context", gb((double)m->runtime_context));
    fprintf(out, "    %-32s %10.2f   (%d communicators)\n", "NCCL buffers", gb((double)m->nccl),
           m->nccl_comms);
    fprintf(out, "  %-34s %10.2f   of %.2f usable (%.2f device memory x %.4f as the device "
                 "reports it - %.2f reserve)\n",
           "total", gb((double)m->total), gb((double)res->mem_limit_bytes),
           gb((double)hw->hbm_bytes), hw->hbm_visible_ratio, gb((double)hw->mem_reserve_bytes));
    fprintf(out, "  %-34s %10.2f   (cached blocks %.2f, given back before an allocation "
                 "fails: not in the total)\n",
           "allocator's reserved peak", gb((double)px_memory_reserved(m)),
           gb((double)m->allocator_cache));
    if (m->host > 0)
        fprintf(out, "  %-34s %10.2f   of %.2f host memory per GPU (offloaded optimizer or "
                     "parameters: fp32 master, moments, gradient copy, 16-bit shard %.2f; "
                     "activations %.2f)\n",
                "host", gb((double)m->host), gb((double)hw->host_mem_bytes),
                gb((double)(m->host - m->host_activations)), gb((double)m->host_activations));

    const px_time *t = &pr.time;
    fprintf(out, "\n# time per step, seconds (exposed = on the critical path)\n");
    fprintf(out, "  %-34s %10.4f\n", "compute forward", d.compute_fwd_s);
    fprintf(out, "  %-34s %10.4f\n", "compute backward", d.compute_bwd_s);
    fprintf(out, "  %-34s %10.4f\n", "recompute", d.compute_recompute_s);
    fprintf(out, "    %-32s %10.4f\n", "GEMMs (fwd+bwd)", d.gemm_s);
    fprintf(out, "    %-32s %10.4f\n", mamba ? "attention core and Mamba-2 scan" : "attention core",
            d.attn_s);
    fprintf(out, "    %-32s %10.4f\n", "memory-bound ops, head, loss", d.membound_s);
    fprintf(out, "  %-10s %12s %12s %12s  %s\n", "comm", "total", "exposed", "overlapped",
           "GB/step   link");
    comm_row rows[N_COMM_KINDS];
    comm_rows(&d, rows);
    for (int i = 0; i < N_COMM_KINDS; i++)
        fprintf(out, "  %-10s %12.4f %12.4f %12.4f  %8.2f  %s\n", rows[i].label, rows[i].tot,
               rows[i].exp, rows[i].tot - rows[i].exp, gb(rows[i].bytes),
               hw->torus ? "torus" : rows[i].cross ? "inter-node" : "intra-node");
    if (!px_coll_measured(hw) && !hw->torus)
        fprintf(out, "  %-34s intra-node %.1f GB/s (%.3g of %.1f), inter-node %.1f GB/s (%.3g of "
                     "%.1f): the bus bandwidth NCCL reaches on each link\n",
                "links, per GPU", px_link_bus_bw(hw, false) / 1e9, hw->intra_bw_eff,
                hw->intra_bw / 1e9, px_link_bus_bw(hw, true) / 1e9, hw->inter_bw_eff,
                hw->inter_bw / 1e9);
    if (c->par.offload.activations)
        fprintf(out, "  %-34s %10.4f   (copies to the host and back the compute waits for)\n",
                "activation offload", t->act_offload_s);
    fprintf(out, "  %-34s %10.4f   (%.2f %% of the step; %.4f of ideal)\n", "pipeline bubble",
           t->bubble_s, 100.0 * pr.bubble_fraction, d.bubble_over_ideal);
    fprintf(out, "  %-34s %10.4f\n", "optimizer step", t->optimizer_s);
    if (t->offload_s > 0.0)
        fprintf(out, "    %-32s %10.4f\n", "offloaded share, on the host", t->offload_s);
    fprintf(out, "  %-34s %10.4f   (MFU %.1f %%, HFU %.1f %%)\n", "step", t->step_s, 100.0 * pr.mfu,
           100.0 * pr.hfu);
}

/* What the chosen plan keeps on the host, and why. */
static void print_offload(FILE *out, const px_candidate *best, const px_search_result *res,
                          const px_hw *hw)
{
    const px_offload *o = &best->par.offload;
    const char *why = res->offload_auto_used ? "; nothing fits on the GPUs alone" : "";
    if (o->kind == PX_OFFLOAD_OPTIMIZER)
        fprintf(out, "# offload: %s state on the host (fraction %.2f%s): host memory %.1f GB of "
                     "%.1f GB per GPU; the host's part of the step %.3f s (gradients down, Adam, "
                     "weights up)\n",
                px_offload_kind_name(o->kind), o->fraction, why,
                gb((double)best->pred.mem.host), gb((double)hw->host_mem_bytes),
                best->pred.time.offload_s);
    if (o->kind == PX_OFFLOAD_PARAMS)
        fprintf(out, "# offload: parameter, gradient and optimizer shards on the host%s: host "
                     "memory %.1f GB of %.1f GB per GPU; each layer's shard copied up before "
                     "its gathers and its gradient's down (in DP/ZeRO); the host's Adam step "
                     "%.3f s\n",
                why, gb((double)best->pred.mem.host), gb((double)hw->host_mem_bytes),
                best->pred.time.offload_s);
    if (!o->activations)
        return;
    char layers[48] = "every layer";
    if (o->act_layers > 0)
        snprintf(layers, sizeof layers, "the first %d layer%s", o->act_layers,
                 o->act_layers == 1 ? "" : "s");
    fprintf(out, "# offload: activations of %s on the host%s: %.1f GB per GPU; copies the "
                 "compute waits for %.3f s a step\n",
            layers, why, gb((double)best->pred.mem.host_activations),
            best->pred.time.act_offload_s);
}

/* The candidate's split stage by stage, in the partition program's terms
 * (px_partition_build + px_partition_evaluate: layers, time per
 * micro-batch, memory, recompute choices), and the uniform split with the
 * candidate's uniform recompute choice beside it (uni->n_chunks 0 when that
 * choice cannot be evaluated). */
static px_status stage_table_fill(const px_model *m, const px_parallel *par,
                                  px_partition_problem *pb, px_partition_solution *cur,
                                  px_partition_solution *uni, int64_t *limit, px_error *err);

px_status stage_table(const px_model *m, const px_hw *hw,
                      const struct px_fw_runtime *run, const px_parallel *par,
                      px_partition_solution *cur, px_partition_solution *uni,
                      int64_t *limit, px_error *err)
{
    px_partition_problem *pb = calloc(1, sizeof *pb);
    px_cost_ctx *ctx = malloc(sizeof *ctx);
    px_status st = pb && ctx ? px_cost_ctx_init(ctx, m, hw, err)
                             : PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the stage table");
    if (st == PX_OK) {
        ctx->run = run; /* as the search's partitioner costed it */
        st = px_partition_build(ctx, par, pb, err);
    }
    if (st == PX_OK)
        st = stage_table_fill(m, par, pb, cur, uni, limit, err);
    free(pb);
    /* memory: the cost model's own per-stage numbers (the plan file's) */
    if (st == PX_OK)
        st = px_partition_cost_memory(ctx, par, cur, limit, err);
    px_parallel *upar = st == PX_OK && uni->n_chunks > 0 ? malloc(sizeof *upar) : NULL;
    if (upar) {
        *upar = *par;
        upar->n_chunks = 0; /* the default split, the candidate's one recompute choice */
        upar->n_layer_recompute = 0;
        px_error e2;
        if (px_partition_cost_memory(ctx, upar, uni, limit, &e2) != PX_OK)
            uni->n_chunks = 0;
    }
    free(upar);
    free(ctx);
    return st;
}

static px_status stage_table_fill(const px_model *m, const px_parallel *par,
                                  px_partition_problem *pb, px_partition_solution *cur,
                                  px_partition_solution *uni, int64_t *limit, px_error *err)
{
    *limit = pb->mem_limit_bytes;
    memset(cur, 0, sizeof *cur);
    cur->n_chunks = par->pp * par->vpp;
    if (par->n_chunks > 0)
        memcpy(cur->layers_per_chunk, par->layers_per_chunk,
               (size_t)par->n_chunks * sizeof par->layers_per_chunk[0]);
    else
        px_cost_default_split(m->n_layers, cur->n_chunks, cur->layers_per_chunk);
    for (int64_t i = 0; i < m->n_layers; i++)
        cur->layer_recompute[i] = (unsigned char)(i < par->n_layer_recompute
                                                      ? par->layer_recompute[i]
                                                      : (unsigned char)par->recompute);
    px_status st = px_partition_evaluate(pb, cur, err);
    if (st != PX_OK)
        return st;
    memset(uni, 0, sizeof *uni);
    px_error e2;
    if (px_partition_uniform(pb, par->recompute, uni, &e2) != PX_OK)
        uni->n_chunks = 0;
    return PX_OK;
}

static void explain_stages(FILE *out, const px_model *m, const px_hw *hw,
                           const struct px_fw_runtime *run, const px_candidate *c,
                           const px_search_result *res)
{
    px_partition_solution *sol = calloc(2, sizeof *sol);
    px_partition_solution *cur = sol, *uni = sol ? sol + 1 : NULL;
    int64_t limit = 0;
    px_error err;
    char split[1024];
    split_label(&c->par, split, sizeof split);
    fprintf(out, "\n# pipeline stages: layers per chunk %s (%s)\n", split,
           !res->milp_ran ? "--partition uniform"
           : c->par.n_layer_recompute > 0 ? "chosen by the GLPK program, docs/partition.md"
                                          : "the program found nothing better");
    if (!sol || stage_table(m, hw, run, &c->par, cur, uni, &limit, &err) != PX_OK) {
        fprintf(out, "# per-stage table unavailable: %s\n", sol ? err.msg : "out of memory");
        free(sol);
        return;
    }
    fprintf(out, "# limit_%% is of %.2f GB: device memory - reserve; memory_GB is the cost model's, as in "
           "the breakdown and the plan file\n",
           gb((double)limit));
    char *table = malloc(PX_MAX_CHUNKS * 96);
    if (table) {
        px_partition_format_stages(cur, limit, table, PX_MAX_CHUNKS * 96);
        fputs(table, out);
    }
    free(table);
    if (uni->n_chunks > 0)
        fprintf(out, "# uniform split, recompute %s: slowest stage %.3f ms, fullest stage %.2f GB%s; "
               "this split: %.3f ms, %.2f GB\n",
               px_recompute_name(c->par.recompute), 1e3 * uni->max_stage_time_s,
               gb((double)uni->stage_mem_bytes[uni->fullest_stage]),
               uni->fits ? "" : " (does not fit)", 1e3 * cur->max_stage_time_s,
               gb((double)cur->stage_mem_bytes[cur->fullest_stage]));
    free(sol);
}

static void print_goodput(FILE *out, const px_prediction *q, int gpus, const px_hw *hw,
                          double price)
{
    if (q->train_tokens <= 0)
        return;
    px_run_cost rc;
    bool has_cost = px_run_cost_of(q, gpus, hw, price, &rc);
    fprintf(out, "\n# time to train %.3g tokens at %.4g tokens/s\n", q->train_tokens,
            q->tokens_per_s);
    fprintf(out, "  %-34s %10.1f\n", "days (no failures)", q->days_to_train);
    fprintf(out, "  %-34s %10.0f s (%.2f h)\n", "job MTBF", q->job_mtbf_s, q->job_mtbf_s / 3600.0);
    fprintf(out, "  %-34s %10.2f GB, %.1f s to write\n", "sharded checkpoint per GPU",
            gb(q->ckpt_bytes_per_gpu), q->ckpt_write_s);
    fprintf(out, "  %-34s %10.0f s (Young/Daly)\n", "checkpoint interval", q->ckpt_interval_s);
    fprintf(out, "  %-34s %10.2f %%\n", "time lost to failures", 100.0 * q->lost_fraction);
    fprintf(out, "  %-34s %10.1f\n", "goodput-adjusted days", q->goodput_days);
    if (!has_cost) {
        fprintf(out, "  %-34s %10s   (no finite time to train)\n", "GPU-hours, energy, cost",
                "n/a");
        return;
    }
    fprintf(out, "  %-34s %10.4g   (%d GPUs x %.1f days)\n", "GPU-hours", rc.gpu_hours, gpus,
            rc.days);
    if (rc.has_energy)
        fprintf(out, "  %-34s %10.4g   (%.0f W a GPU, board power only)\n", "energy [MWh]",
                rc.energy_mwh, rc.power_w);
    else
        fprintf(out, "  %-34s %10s   (profile %s has no power_w)\n", "energy [MWh]", "n/a",
                hw->name);
    if (rc.has_cost)
        fprintf(out, "  %-34s %10.4g   (%.2f USD a GPU-hour%s)\n", "cost [USD]", rc.cost_usd,
                rc.price_per_gpu_hour, price > 0 ? ", --price-per-gpu-hour" : ", the profile's");
    else
        fprintf(out, "  %-34s %10s   (profile %s has no price: give --price-per-gpu-hour)\n",
                "cost [USD]", "n/a", hw->name);
}

/* The rule of thumb beside the searched best (--explain). */
static void explain_rule(FILE *out, const px_candidate *best, const px_search_result *res)
{
    fprintf(out, "\n# the rule-of-thumb plan (ZeRO within a node if it fits, else TP, then PP, "
                 "the rest DP) beside the searched best\n");
    if (!res->has_rule) {
        fprintf(out, "# no rule-of-thumb plan is valid for this model and GPU count\n");
        return;
    }
    fprintf(out, "# rule steps: %s\n", res->rule_notes);
    print_header(out);
    print_row(out, "best", best, true);
    print_row(out, "rule", &res->rule, false);
    if (!res->rule_fits)
        fprintf(out, "# the rule-of-thumb plan does NOT fit in %.1f GB\n",
                gb((double)res->mem_limit_bytes));
    fprintf(out, "# scores: searched best %.4g tokens/s (MFU %.1f %%), rule of thumb %.4g "
                 "tokens/s (MFU %.1f %%)",
            best->pred.tokens_per_s, 100.0 * best->pred.mfu, res->rule.pred.tokens_per_s,
            100.0 * res->rule.pred.mfu);
    /* a ratio only between plans of one global batch, and only against a
     * rule plan that can run */
    if (res->rule_same_batch && res->rule_fits)
        fprintf(out, ": best / rule = %.3f\n",
                best->pred.tokens_per_s / res->rule.pred.tokens_per_s);
    else
        fprintf(out, ": no ratio (the rule plan %s)\n",
                !res->rule_fits ? "does not fit" : "runs a different global batch");
}

/* The precision line of the table's header, with the choices the request fixes
 * (CP, the attention kernel, the MoE dispatcher and overlap, the recompute
 * modules). */
static void print_precision(FILE *out, const px_hw *hw, const px_search_opts *o)
{
    px_precision p = o->precision;
    fprintf(out, "# precision %s: linear GEMMs at %.4g TFLOP/s dense%s; MFU counts against the "
                 "bf16 peak %.4g TFLOP/s",
            px_precision_name(p), px_prec_peak_flops(hw, p) / 1e12,
            px_prec_is_low(p) ? " (attention core, LM head and router in bf16)" : "",
            hw->peak_flops / 1e12);
    px_cp_comm cp_comm = px_caps_cp_comm(o->caps, o->cp_comm, o->cp_comm_given);
    if (cp_comm != PX_CPC_P2P && o->cp != 1)
        fprintf(out, "; CP communication %s", px_cp_comm_name(cp_comm));
    if (o->flash_attention == 0)
        fprintf(out, "; attention unfused");
    else if (o->attn_kernel != PX_AK_FRAMEWORK)
        fprintf(out, "; attention kernel %s", px_attn_kernel_name(o->attn_kernel));
    if (o->moe_dispatcher != PX_MOE_ALLTOALL)
        fprintf(out, "; MoE dispatcher %s", px_moe_dispatch_name(o->moe_dispatcher));
    if (o->tp_comm_overlap > 0)
        fprintf(out, "; the forward's TP collectives under their GEMMs");
    if (o->moe_a2a_overlap > 0)
        fprintf(out, "; expert all-to-all under the other micro-batch's compute");
    if (o->recompute_modules != 0 && o->recompute_modules != PX_RCM_DEFAULT) {
        char list[128];
        px_rc_modules_format(o->recompute_modules, list, sizeof list);
        fprintf(out, "; selective recompute reruns %s", list);
    }
    fprintf(out, "\n");
}

/* What is trained, when it is not pre-training. */
static void print_training(FILE *out, const px_finetune *f)
{
    if (f->mode == PX_FT_FULL)
        fprintf(out, "# training: full fine-tuning (every weight trained, as pre-training)\n");
    if (!px_finetune_is_lora(f))
        return;
    char targets[64];
    px_lora_targets_format(f->targets, targets, sizeof targets);
    fprintf(out, "# training: LoRA on a frozen base, rank %d, alpha %g, adapters on %s\n",
            f->rank, f->alpha, targets);
}

/* A hybrid model's layers by kind, in the order of layer_pattern's symbols. */
static void print_hybrid(FILE *out, const px_model *m)
{
    if (!px_model_is_hybrid(m))
        return;
    static const char *const names[] = {"Mamba-2", "attention", "MLP", "expert"};
    fprintf(out, "# layers:");
    for (int i = 0; PX_HYBRID_SYMBOLS[i]; i++) {
        int64_t n = 0;
        for (const char *p = m->layer_pattern; *p; p++)
            n += *p == PX_HYBRID_SYMBOLS[i];
        if (n > 0)
            fprintf(out, " %lld %s,", (long long)n, names[i]);
    }
    fprintf(out, " one sublayer each (layer_pattern)\n");
}

/* The search's '#' header lines of the table. */
static void table_header(FILE *out, const plan_cli *c, const px_model *model, const px_hw *hw,
                         const px_framework *fw, const px_search_result *res,
                         bool fixed_uniform)
{
    px_param_count pc;
    px_model_count_params(model, &pc);
    bool billions = pc.total >= 1000000000;
    fprintf(out, "# plan: %s (%.4g %s parameters, %lld layers) on %d x %s (%d per node%s)\n",
            model->name, (double)pc.total / (billions ? 1e9 : 1e6), billions ? "B" : "M",
            (long long)model->n_layers, c->gpus, hw->name, hw->gpus_per_node,
            hw->torus ? ", torus" : "");
    if (model->config_note[0])
        fprintf(out, "# model: %s\n", model->config_note);
    print_hybrid(out, model);
    fprintf(out, "# framework: %s (%s)", fw->name, fw->path);
    if (fw->release_asked[0])
        fprintf(out, ", release %s: planned as %s, the documented state nearest in time",
                fw->release_asked,
                fw->release[0] ? fw->release : "the framework as it runs today");
    else if (fw->release[0])
        fprintf(out, ", release %s", fw->release);
    fputc('\n', out);
    if (c->recipe)
        fprintf(out, "# recipe: %s (its options, under the ones given on the command line)\n",
                c->recipe);
    print_training(out, &c->opts.finetune);
    if (res->batch_note[0])
        fprintf(out, "# %s\n", res->batch_note);
    fprintf(out, "# sequence %lld, global batch %lld sequences = %lld tokens; memory limit %.1f "
                 "GB per GPU (%.1f device memory x %.4f as reported - %.1f reserve), the "
                 "runtime's share counted in each plan's memory\n",
            (long long)res->seq_len, (long long)res->global_batch,
            (long long)res->tokens_per_step, gb((double)res->mem_limit_bytes),
            gb((double)hw->hbm_bytes), hw->hbm_visible_ratio, gb((double)hw->mem_reserve_bytes));
    double analytic_s = res->analytic_s; /* the stage partitioner's below */
    print_precision(out, hw, &c->opts);
    fprintf(out, "# searched %lld configurations in %.1f ms (%.3g per second); %lld fit\n",
            (long long)res->n_evaluated, 1e3 * analytic_s,
            analytic_s > 0 ? (double)res->n_evaluated / analytic_s : 0.0,
            (long long)res->n_valid);
    if (res->milp_ran) {
        fprintf(out, "# stage partition: GLPK program (docs/partition.md) on %d candidates (top "
                     "%d + %d closest misses): %d changed, %d made to fit, %d not proven "
                     "optimal (work or time limit, or gap), %d failed, %d skipped (budget), "
                     "%d pruned (lower bound), %d solved by the exact DP without GLPK; %.1f "
                     "ms\n",
                res->milp_refined, res->milp_top, res->milp_misses, res->milp_changed,
                res->milp_rescued, res->milp_not_proven, res->milp_failed, res->milp_skipped,
                res->milp_pruned, res->milp_by_dp, 1e3 * res->milp_s);
        if (res->milp_clock_hit)
            fprintf(out, "# stage partition: the clock stopped or skipped %d candidates' "
                         "programs (a slow or busy machine, or --milp-time-limit): their splits "
                         "can differ from run to run\n",
                    res->milp_clock_hit);
    } else {
        fprintf(out, "# stage partition: uniform (%s): no GLPK program\n",
                fixed_uniform ? "every dimension fixed; --partition milp runs the program"
                              : "--partition uniform");
    }
    if (res->milp_note[0])
        fprintf(out, "# stage partition, first failure (candidate kept as it was): %s\n",
                res->milp_note);
    fprintf(out, "# rejected:");
    for (int r = 0; r < PX_REJ_COUNT; r++)
        fprintf(out, "%s %s %lld", r ? "," : "", px_reject_name((px_reject)r),
                (long long)res->rejected[r]);
    fprintf(out, "\n# units: mem = GB (1e9 bytes) per GPU, worst stage; step = seconds per "
                 "optimizer step; m = micro-batches per step\n");
}

/* --explain's breakdown of the search's chosen plan (res->top[0]): memory,
 * time, the per-stage table and the rule of thumb beside it; run is how the
 * framework runs it (the search options' run). */
px_status write_explain(FILE *out, const struct px_fw_runtime *run, const px_model *model,
                        const px_hw *hw, const px_search_result *res, px_error *err)
{
    const px_candidate *best = &res->top[0];
    px_cost_ctx *ctx = NULL;
    PX_TRY(plan_cost_ctx(run, model, hw, &ctx, err));
    explain(out, ctx, best, res, hw);
    explain_stages(out, model, hw, run, best, res);
    explain_rule(out, best, res);
    free(ctx);
    return PX_OK;
}

/* The people's table: header lines, ranked rows, the chosen plan, and with
 * --explain its breakdown. */
px_status write_table(FILE *out, const plan_cli *c, const px_model *model,
                      const px_hw *hw, const px_framework *fw,
                      const px_search_result *res, bool fixed_uniform, px_error *err)
{
    const px_candidate *best = &res->top[0];
    table_header(out, c, model, hw, fw, res, fixed_uniform);
    print_header(out);
    for (int i = 0; i < res->n_top; i++) {
        char label[16];
        snprintf(label, sizeof label, "%d", i + 1);
        print_row(out, label, &res->top[i], i == 0);
    }
    char split[1024];
    split_label(&best->par, split, sizeof split);
    int cnt[PX_RECOMPUTE_COUNT];
    layer_counts(&best->par, model->n_layers, cnt);
    fprintf(out, "# chosen: #1, TP %d, CP %d, EP %d, ETP %d, PP %d, VPP %d, DP %d, "
                 "micro-batch %lld x %lld, ZeRO-%d, recompute %s, %s, %s, %.3f s a step, MFU "
                 "%.1f %% (attention as executed: MFU_causal %.1f %%)\n",
            best->par.tp, best->par.cp, best->par.ep, best->par.etp, best->par.pp,
            best->par.vpp, best->par.dp, (long long)best->par.micro_batch,
            (long long)best->par.n_micro, best->par.zero, recompute_label(&best->par),
            px_schedule_name(best->par.schedule), px_precision_name(best->par.precision),
            best->pred.time.step_s, 100.0 * best->pred.mfu, 100.0 * best->pred.mfu_causal);
    fprintf(out, "# chosen split: layers per chunk %s; layers recomputing: none %d, selective "
                 "%d, full %d\n",
            split, cnt[PX_RECOMPUTE_NONE], cnt[PX_RECOMPUTE_SELECTIVE], cnt[PX_RECOMPUTE_FULL]);
    print_offload(out, best, res, hw);
    if (c->explain)
        PX_TRY(write_explain(out, c->opts.run, model, hw, res, err));
    print_goodput(out, &best->pred, c->gpus, hw, c->price_per_gpu_hour);
    return PX_OK;
}
