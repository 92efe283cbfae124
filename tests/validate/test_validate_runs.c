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
        const px_row_call *c = &w->call;
        const px_parallel *par = &w->res.best.par;
        if (w->mapped && c->precision == PX_PREC_FP8) {
            fp8++;
            /* fp8 rows are planned in fp8 (docs/cost-model.md, "Low-precision GEMMs") */
            CHECK_MSG(!w->evaluated || par->precision == PX_PREC_FP8, "%s", w->id);
        }
        if (w->fam_on && w->evaluated) {
            /* every published dimension is the one predicted */
            CHECK_MSG(par->tp == c->tp && par->pp == c->pp && par->dp == c->dp &&
                          (c->cp == 0 || par->cp == c->cp),
                      "%s: predicted layout differs from the published one", w->id);
            if (c->micro_batch > 0)
                CHECK(par->micro_batch == c->micro_batch);
            if (c->vpp > 0 && c->pp > 1)
                CHECK(par->vpp == c->vpp);
            if (c->zero >= 0)
                CHECK(par->zero == c->zero);
        }
    }
    CHECK_MSG(usable >= 340 && fp8 >= 100, "usable %d, fp8 %d", usable, fp8);

    /* the README's mappings: profile, framework, release, precision, vocabulary */
    const px_val_row *w = find(&rep, "megatron2020-mp-v100-1B");
    CHECK(w && !strcmp(w->call.hw_name, "v100") && !strcmp(w->call.framework, "megatron"));
    CHECK(w && !strcmp(w->call.release, "2020") && w->call.precision == PX_PREC_FP16);
    CHECK(w && w->evaluated && !w->res.best.par.flash_attention);
    w = find(&rep, "nemo2403-longctx-llama2-7b-seq4096");
    CHECK(w && !strcmp(w->call.release, "nemo-24.03"));
    w = find(&rep, "dgxc-v25.01-paxml-5b-bf16-16gpu");
    CHECK(w && w->call.vocab_default && w->call.model.vocab == PX_ROW_VOCAB_GPT2 &&
          strstr(w->note, "vocabulary unpublished"));
    CHECK(w && !strcmp(w->call.framework, "maxtext"));
    w = find(&rep, "foundry-mpt70b-a10040-bf16-128gpu-seq2048-mb4-gbs512");
    CHECK_MSG(w && !strcmp(w->call.hw_name, "a100-40g") &&
                  !strcmp(w->call.framework, "llm-foundry") && w->call.zero == 3,
              "%s", w ? w->call.hw_name : "row missing");
    w = find(&rep, "dgxc-v25.01-llama2-70b-bf16-h100-512gpu-maxtext");
    CHECK(w && !strcmp(w->call.framework, "maxtext") && w->call.zero == 3 &&
          w->call.shard_group == 128);
    w = find(&rep, "dgxc-v25.05-llama31-405b-bf16-gb200-128gpu");
    CHECK(w && !strcmp(w->call.hw_name, "gb200-nvl72") && !w->call.hw_derived);
    /* BLOOM's row names Jean Zay: the README maps its GPU, not the cluster */
    w = find(&rep, "bloom176b-gbs2048");
    CHECK(w && !strcmp(w->call.hw_name, "a100-80g"));

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
    CHECK(w && w->evaluated && w->fam_on && fabs(w->fam_err) < 0.35 && !w->call.hw_derived);
    px_validate_free(&rep);
    return px_test_result("validate_runs");
}
