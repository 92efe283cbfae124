/* test_validate_runs.c — the published-runs file (data/published-runs.json,
 * a copy of shared/data/): every row is read, mapped as
 * shared/data/README.md says (hardware and framework profiles, precision,
 * FSDP as ZeRO-3, fixed dimensions), the usable bf16/fp16 rows are predicted
 * or refused with a reason, and the family errors stay within the bounds of
 * px_validate.h (PX_VALIDATE_RUNS_*: the mean |error| over the usable rows,
 * every family's, the fraction refused). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_precision.h"
#include "px_test.h"
#include "px_validate.h"

static const px_val_row *find(const px_val_report *r, const char *id)
{
    for (int i = 0; i < r->n_rows; i++)
        if (!strcmp(r->rows[i].id, id))
            return &r->rows[i];
    return NULL;
}

int main(void)
{
    const char *root = getenv("PARALLAX_SOURCE_ROOT");
    if (!root)
        root = PX_SOURCE_ROOT;
    char copy[1024], shared[1024];
    snprintf(copy, sizeof copy, "%s/tests/validate/data/published-runs.json", root);
    snprintf(shared, sizeof shared, "%s/../shared/data/published-runs.json", root);
    FILE *probe = fopen(shared, "rb");
    if (probe) {
        fclose(probe);
        CHECK_MSG(px_test_same_file(copy, shared), "%s differs from %s: copy the shared file here",
                  copy, shared);
    }
    px_val_report rep;
    px_error err;
    px_status st = px_validate_file(copy, NULL, &rep, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    if (st != PX_OK)
        return px_test_result("validate_runs");
    px_validate_write_table(&rep, stdout);
    fflush(stdout);
    CHECK(rep.n_rows == 351);

    int usable = 0, fp8 = 0;
    for (int i = 0; i < rep.n_rows; i++) {
        const px_val_row *w = &rep.rows[i];
        if (!w->usable)
            continue;
        usable++;
        /* a usable row is predicted or refused with the reason */
        CHECK_MSG(w->fam_on != 0 || (w->refused && w->note[0]), "%s: neither predicted nor "
                  "refused with a reason", w->id);
        if (w->precision == PX_PREC_FP8) {
            fp8++;
            /* fp8 rows are planned in fp8 (docs/cost-model.md, "Low-precision GEMMs") */
            CHECK_MSG(!w->evaluated || w->par.precision == PX_PREC_FP8, "%s", w->id);
        }
        if (w->fam_on && w->evaluated) {
            /* every published dimension is the one predicted */
            CHECK_MSG(w->par.tp == w->tp && w->par.pp == w->pp && w->par.dp == w->dp &&
                          w->par.cp == w->cp,
                      "%s: predicted layout differs from the published one", w->id);
            if (w->micro_batch > 0)
                CHECK(w->par.micro_batch == w->micro_batch);
            if (w->vpp > 0 && w->pp > 1)
                CHECK(w->par.vpp == w->vpp);
            if (w->zero >= 0)
                CHECK(w->par.zero == w->zero);
        }
    }
    CHECK_MSG(usable >= 340 && fp8 >= 100, "usable %d, fp8 %d", usable, fp8);

    /* the README's mappings */
    const px_val_row *w = find(&rep, "megatron2020-mp-v100-1B");
    CHECK(w && !strcmp(w->hw_name, "v100") && !strcmp(w->framework, "megatron"));
    w = find(&rep, "foundry-mpt70b-a10040-bf16-128gpu-seq2048-mb4-gbs512");
    CHECK_MSG(w && !strcmp(w->hw_name, "a100-40g") && !strcmp(w->framework, "llm-foundry") &&
                  w->zero == 3,
              "%s", w ? w->hw_name : "row missing");
    w = find(&rep, "dgxc-v25.01-llama2-70b-bf16-h100-512gpu-maxtext");
    CHECK(w && !strcmp(w->framework, "maxtext") && w->zero == 3 && w->shard_group == 128);
    w = find(&rep, "dgxc-v25.05-llama31-405b-bf16-gb200-128gpu");
    CHECK(w && !strcmp(w->hw_name, "gb200-nvl72"));
    /* Llama 3.1 405B, 126 layers on pp 8 x vpp 8: Megatron's split with the
     * embedding and the loss as pipeline layers */
    w = find(&rep, "dgxc-v25.04-llama31-405b-bf16-h100-512gpu");
    CHECK(w && w->evaluated && w->par.n_chunks == 64);
    if (w && w->evaluated && w->par.n_chunks == 64)
        CHECK(w->par.layers_per_chunk[0] == 1 && w->par.layers_per_chunk[63] == 1 &&
              w->par.layers_per_chunk[1] == 2);

    /* the 30-layer proxy on pp 4 x vpp 8: 32 slots, the first chunk the
     * embedding alone, the last the loss alone (Megatron-Core runs them) */
    w = find(&rep, "dgxc-v25.04-llama31-405b-bf16-h100-64gpu-30L");
    CHECK_MSG(w && w->evaluated && w->par.n_chunks == 32, "%s", w ? w->note : "row missing");
    if (w && w->evaluated && w->par.n_chunks == 32)
        CHECK(w->par.layers_per_chunk[0] == 0 && w->par.layers_per_chunk[31] == 0 &&
              w->par.layers_per_chunk[1] == 1);
    /* Paxml's GPT5B leaves its vocabulary to the experiment config (50304)
     * and its remat to the default policy, SAVE_NOTHING */
    w = find(&rep, "dgxc-v25.01-paxml-5b-bf16-16gpu");
    CHECK_MSG(w && w->evaluated && w->model.vocab == 50304 &&
                  w->par.recompute == PX_RECOMPUTE_FULL,
              "%s", w ? w->note : "row missing");

    /* a TFLOP/s published with a step time and no stated convention counts
     * what TFLOP/s x step x GPUs gives: the Megatron-LM 2020 tables and
     * MT-NLG count the recomputed forward (HFU); a stated MFU stays MFU */
    w = find(&rep, "megatron2020-mp-v100-1B");
    CHECK(w && w->evaluated && !w->conv_stated && w->conv == PX_VAL_CONV_HW);
    w = find(&rep, "mtnlg530b-2240gpu");
    CHECK(w && w->evaluated && w->conv == PX_VAL_CONV_HW);
    /* Megatron-DeepSpeed: DeepSpeed's BF16 optimizer adds each
     * micro-batch's gradients into fp32 ones and all-reduces them whole */
    CHECK(w && w->grad_accum_separate && w->zero1_grad_allreduce);
    /* ... under its pipeline engine (blocking transfers, tied gradients
     * all-reduced after the schedule), on Selene's profile */
    CHECK(w && w->deepspeed_pipe && !strcmp(w->hw_name, "a100-80g"));
    /* BLOOM ran on Jean Zay, whose A100 nodes have a profile of their own
     * (4 x 100 Gb/s Omni-Path a node), whichever way the row names it */
    w = find(&rep, "bloom176b-gbs2048");
    CHECK(w && w->deepspeed_pipe && !strcmp(w->hw_name, "jean-zay-a100"));
    w = find(&rep, "bloom176b-gbs16");
    CHECK(w && !strcmp(w->hw_name, "jean-zay-a100"));
    w = find(&rep, "dgxc-v25.01-llama2-70b-bf16-h100-512gpu-maxtext");
    CHECK(w && w->conv_stated && w->conv == PX_VAL_CONV_MODEL && !w->grad_accum_separate);
    CHECK(w && !w->deepspeed_pipe);
    /* NeMo's DGX Cloud recipes reduce gradients in bf16 (grad_sync_dtype
     * bf16, grad_reduce_in_fp32 False); other Megatron rows keep fp32 main
     * gradients; a run in bf16 gradients is planned so */
    w = find(&rep, "dgxc-v25.05.01-grok1-314b-bf16-h100-512gpu");
    CHECK(w && w->evaluated && !w->grad_fp32 && !w->par.grad_fp32);
    /* in bf16 gradients the 512-GPU layout (expert TP 1) fits without
     * recomputation, as the recipe ran it */
    CHECK(w && w->fits && w->par.recompute == PX_RECOMPUTE_NONE);
    /* the Grok-1 recipe of v25.01-v25.04.01 sets NVTE_FUSED_ATTN=0: flash-attn
     * 2; v25.05.01 and the other recipes leave the backend to TE */
    w = find(&rep, "dgxc-v25.02.01-grok1-314b-bf16-h100-512gpu");
    CHECK(w && w->flash_version == 2);
    w = find(&rep, "dgxc-v25.05.01-grok1-314b-bf16-h100-512gpu");
    CHECK(w && w->flash_version == 0);
    w = find(&rep, "dgxc-v25.02.01-llama3-70b-fp8-h100-512gpu");
    CHECK(w && w->flash_version == 0);
    w = find(&rep, "dgxc-v25.02.01-llama3-70b-fp8-h100-512gpu");
    CHECK(w && w->evaluated && !w->grad_fp32);
    w = find(&rep, "mtnlg530b-2240gpu");
    CHECK(w && w->grad_fp32);
    w = find(&rep, "dgxc-v25.01-llama2-70b-bf16-h100-512gpu-maxtext");
    CHECK(w && w->grad_fp32);

    /* llm-foundry's MPT-7B/13B/30B on 8 A100-80GB ran: with FSDP as PyTorch
     * runs it (fp32 shards, two gathered layers, the fused cross-entropy)
     * every one of them fits */
    int n_mpt = 0;
    for (int i = 0; i < rep.n_rows; i++) {
        const px_val_row *r = &rep.rows[i];
        if (strstr(r->id, "a10080") && strstr(r->id, "-8gpu-") &&
            (strstr(r->id, "mpt7b-") || strstr(r->id, "mpt13b-") || strstr(r->id, "mpt30b-"))) {
            n_mpt++;
            CHECK_MSG(r->fam_on != 0 && !r->refused, "%s refused: %s", r->id, r->note);
        }
    }
    CHECK(n_mpt >= 18);

    char why[512];
    bool ok = px_validate_family_bounds(&rep, PX_VALIDATE_RUNS_MAX_MEAN,
                                        PX_VALIDATE_RUNS_MAX_FAMILY,
                                        PX_VALIDATE_RUNS_MAX_REFUSED, why, sizeof why);
    CHECK_MSG(ok, "%s", why);
    /* the fp8 and MoE rows: regression bounds on what the model reaches */
    ok = px_validate_lowp_moe_bounds(&rep, PX_VALIDATE_LOWP_MAX_MEAN, PX_VALIDATE_LOWP_MAX_FAMILY,
                                     PX_VALIDATE_LOWP_MAX_REFUSED, why, sizeof why);
    CHECK_MSG(ok, "%s", why);
    CHECK(rep.all_lowp_moe.n_usable >= 110);
    /* GB200 NVL72: the rows' 4 GPUs a host keep the NVLink domain of 72 */
    w = find(&rep, "dgxc-v25.05-nemotron4-340b-fp8-gb200-128gpu");
    CHECK(w && w->evaluated && w->fam_on && fabs(w->fam_err) < 0.35);
    px_validate_free(&rep);
    return px_test_result("validate_runs");
}
