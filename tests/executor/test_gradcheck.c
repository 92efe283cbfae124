/* test_gradcheck — the single-rank training step's gradient against central
 * finite differences of its own loss, for both block kinds, on a tiny model
 * (so the reference that every split is compared with is itself right).
 * Also: the three recompute modes and the stored-probabilities attention
 * path give the same gradients as the plain one.  Multi-head latent
 * attention (tiny-mla) with a q latent and, rerun with q_lora_rank 0, with
 * one q projection.  LoRA (tiny-llama and tiny-gpt, rank 4, alpha 8, all four
 * targets): the gradients of every adapter A and B, the only trained tensors.
 * Multi-token prediction (tiny-llama with 2 modules, tiny-mla with 1): every
 * module's norms, projection halves and layer, and (tiny-llama) the word
 * embedding's rows of tokens the modules look up (both uses' gradients
 * summed).
 * Runs as a single MPI process (no launcher needed). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "px_backend.h"
#include "px_data.h"
#include "px_exec.h"
#include "px_test.h"

/* >= 0: the q_lora_rank the MLA model is checked with instead of its own. */
static int64_t q_lora_override = -1;
/* > 0: the model's MTP modules (n_mtp_modules) instead of its own. */
static int64_t mtp_override = 0;

static px_status make_plan(const char *model, px_recompute rc, bool flash, px_plan *plan,
                           px_error *err)
{
    memset(plan, 0, sizeof *plan);
    plan->version = PX_PLAN_VERSION;
    px_status st = px_model_load(model, NULL, &plan->model, err);
    if (st)
        return st;
    if (q_lora_override >= 0)
        plan->model.q_lora_rank = q_lora_override;
    if (mtp_override > 0)
        plan->model.n_mtp_modules = mtp_override;

    plan->hw.peak_flops = 1e10;
    plan->hw.dtype_bytes = 4;
    px_parallel_init(&plan->par);
    plan->par.micro_batch = 2;
    plan->par.n_micro = 2; /* gradient accumulation is part of what is checked */
    plan->par.seq_len = 12;
    plan->par.recompute = rc;
    plan->par.flash_attention = flash;
    return PX_OK;
}

/* Loss and (copied) gradient of one step without update. */
static double loss_and_grad(px_exec *ex, float *grad_copy)
{
    px_error err;
    double loss = 0.0;
    if (px_exec_step(ex, 0, false, &loss, &err)) {
        fprintf(stderr, "step failed: %s\n", err.msg);
        exit(1);
    }
    if (grad_copy) {
        int64_t n;
        float *g = px_exec_grads(ex, &n);
        memcpy(grad_copy, g, (size_t)n * sizeof *g);
    }
    return loss;
}

/* The central difference of the loss in params[idx] at step d (the
 * parameter is restored). */
static double central_difference(px_exec *ex, float *params, int64_t idx, double d)
{
    float keep = params[idx];
    params[idx] = (float)(keep + d);
    double lp = loss_and_grad(ex, NULL);
    params[idx] = (float)(keep - d);
    double lm = loss_and_grad(ex, NULL);
    params[idx] = keep;
    return (lp - lm) / (2.0 * d);
}

/* The model's plan without recompute, with flash attention; false (a
 * failed check, the reason on stderr) when it cannot be made. */
static bool plain_plan(const char *model, px_plan *plan)
{
    px_error err;
    if (make_plan(model, PX_RECOMPUTE_NONE, true, plan, &err) == PX_OK)
        return true;
    fprintf(stderr, "%s: %s\n", model, err.msg);
    CHECK(0);
    return false;
}

static void check_model(const char *model, px_backend *be)
{
    px_error err;
    px_plan plan;
    if (!plain_plan(model, &plan))
        return;
    px_exec_options opt;
    px_exec_options_default(&opt);
    opt.init_std = 0.3f; /* larger weights: gradients well above fp32 noise */
    px_exec *ex = NULL;
    if (px_exec_create(&ex, &plan, &opt, be, MPI_COMM_WORLD, &err)) {
        fprintf(stderr, "%s: %s\n", model, err.msg);
        CHECK(0);
        px_exec_destroy(ex);
        return;
    }
    int64_t n;
    float *params = px_exec_params(ex, &n);
    /* one rank holds the whole model: exactly the planner's parameter count
     * (qk_norm weights, shared experts and MTP modules included) */
    px_param_count pc;
    px_model_count_params(&plan.model, &pc);
    CHECK_MSG(n == pc.total + pc.mtp,
              "%s: the executor holds %lld parameters, the planner counts %lld + %lld (MTP)",
              model, (long long)n, (long long)pc.total, (long long)pc.mtp);
    float *grad = malloc((size_t)n * sizeof *grad);
    double loss0 = loss_and_grad(ex, grad);
    CHECK(isfinite(loss0) && loss0 > 0.0);

    /* Two elements of every tensor slice, chosen by a fixed LCG (seed printed). */
    const px_param_table *tab = px_exec_table(ex);
    uint64_t rng = 12345;
    int checked = 0, bad = 0, nonzero = 0, skipped = 0, router_ok = 0;
    int qk_norm_ok = 0, shared_ok = 0; /* tiny-qwen3's own tensors, checked and non-zero */
    int mtp_ok = 0;                    /* MTP modules' tensors, checked and non-zero */
    int64_t L = plan.model.n_layers, D = plan.model.n_mtp_modules;
    /* the dense MTP models: the word embedding's rows of the first tokens
     * the modules look up (sequence 0, tokens 1 .. 4), two elements each,
     * after the two random elements of every slice (in an MoE model a row
     * that many positions use moves their routing) */
    int64_t emb_rows[4] = {0};
    int n_emb_rows = 0;
    if (D > 0 && plan.model.n_experts == 0) {
        px_data data;
        int32_t *seq = malloc((size_t)(plan.par.seq_len + 1) * sizeof *seq);
        if (seq && !px_data_open(&data, NULL, plan.model.vocab, plan.par.seq_len, opt.seed, &err)) {
            px_data_sequence(&data, 0, seq);
            for (; n_emb_rows < 4; n_emb_rows++)
                emb_rows[n_emb_rows] = seq[1 + n_emb_rows];
            px_data_close(&data);
        }
        free(seq);
        CHECK_MSG(n_emb_rows == 4, "%s: no tokens for the embedding check", model);
    }
    /* the MTP models' losses curve more (their modules' layers stack on the
     * main model's): a smaller step keeps the central difference's own error
     * below the tolerance */
    const float eps = D > 0 ? 2.5e-3f : 1e-2f;
    /* MoE: top-k routing is piecewise constant, so a perturbation that makes a
     * token change experts puts a jump into the loss.  A jump of J inside
     * [-eps, eps] makes the central differences at eps and eps/2 disagree by
     * at least J / (2 eps); such elements are skipped (counted, and bounded
     * below), the others must match the eps/2 difference. */
    bool moe = plan.model.n_experts > 0;
    for (int s = 0; s < tab->n_segs; s++) {
        const px_param_seg *seg = &tab->segs[s];
        int64_t size = seg->n_rows * seg->n_cols;
        bool emb = seg->tensor_id == PX_T_WORD_EMB && n_emb_rows > 0;
        for (int rep = 0; rep < (emb ? 2 + 2 * n_emb_rows : 2); rep++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            int64_t idx = seg->offset + (int64_t)((rng >> 33) % (uint64_t)size);
            if (rep >= 2) /* a row the modules look up, a random column */
                idx = seg->offset + emb_rows[(rep - 2) / 2] * seg->n_cols +
                      (int64_t)((rng >> 33) % (uint64_t)seg->n_cols);
            double num = central_difference(ex, params, idx, eps), ana = grad[idx];
            if (moe) {
                double num2 = central_difference(ex, params, idx, eps / 2);
                if (!(fabs(num2 - num) <= 2e-4 + 3e-2 * fabs(num2))) {
                    skipped++;
                    continue;
                }
                num = num2;
                router_ok += (seg->tensor_id - PX_TID_LAYER0) % 32 == PX_T_ROUTER &&
                             seg->tensor_id >= PX_TID_LAYER0 && fabs(ana) > 1e-4;
            }
            checked++;
            nonzero += fabs(ana) > 1e-4;
            int64_t kind = (seg->tensor_id - PX_TID_LAYER0) % 32;
            bool layer_t = seg->tensor_id >= PX_TID_LAYER0, big = fabs(ana) > 1e-4;
            qk_norm_ok += layer_t && big && (kind == PX_T_Q_NORM_W || kind == PX_T_K_NORM_W);
            shared_ok += layer_t && big && kind >= PX_T_SH_W_DOWN && kind <= PX_T_SH_W_GATE;
            mtp_ok += big && seg->tensor_id >= PX_TID_LAYER(L, 0);
            if (!(fabs(num - ana) <= 2e-4 + 3e-2 * fabs(ana))) {
                bad++;
                fprintf(stderr, "%s: tensor %lld elem %lld: analytic %.6g numeric %.6g\n", model,
                        (long long)seg->tensor_id, (long long)(idx - seg->offset), ana, num);
            }
        }
    }
    fprintf(stderr,
            "%s: %d elements checked, %d with |grad| > 1e-4, %d mismatches, %d skipped "
            "(routing changed)\n",
            model, checked, nonzero, bad, skipped);
    CHECK(bad == 0);
    if (moe) {
        CHECK_MSG(skipped * 5 < checked, "%s: %d of %d perturbations changed the routing",
                  model, skipped, checked + skipped);
        CHECK_MSG(router_ok >= 2, "%s: only %d router elements checked", model, router_ok);
    }
    CHECK(nonzero > checked / 2); /* the check is not vacuous */
    if (plan.model.qk_norm)
        CHECK_MSG(qk_norm_ok >= 4, "%s: only %d qk_norm weight elements checked", model,
                  qk_norm_ok);
    if (plan.model.n_shared_experts > 0)
        CHECK_MSG(shared_ok >= 4, "%s: only %d shared-expert elements checked", model,
                  shared_ok);
    if (D > 0) /* two per slice: the four own tensors and a layer's, each module */
        CHECK_MSG(mtp_ok >= 12 * D, "%s: only %d MTP elements checked", model, mtp_ok);
    px_exec_destroy(ex);

    /* Recompute modes and the stored-probabilities path: same loss and grads. */
    struct {
        px_recompute rc;
        bool flash;
    } variants[3] = {{PX_RECOMPUTE_SELECTIVE, true}, {PX_RECOMPUTE_FULL, true},
                     {PX_RECOMPUTE_NONE, false}};
    float *g2 = malloc((size_t)n * sizeof *g2);
    for (int v = 0; v < 3; v++) {
        make_plan(model, variants[v].rc, variants[v].flash, &plan, &err);
        px_exec *e2 = NULL;
        if (px_exec_create(&e2, &plan, &opt, be, MPI_COMM_WORLD, &err)) {
            fprintf(stderr, "%s: %s\n", model, err.msg);
            CHECK(0);
            px_exec_destroy(e2);
            continue;
        }
        double l2 = loss_and_grad(e2, g2);
        CHECK_CLOSE(l2, loss0, 1e-6, 0.0);
        double worst = 0.0;
        for (int64_t i = 0; i < n; i++) {
            double d = fabs((double)g2[i] - grad[i]) / (1e-6 + fabs(grad[i]));
            worst = d > worst ? d : worst;
        }
        CHECK_MSG(worst < 1e-3, "%s variant %d: worst relative gradient difference %g", model,
                  v, worst);
        px_exec_destroy(e2);
    }
    free(g2);
    free(grad);
}

static const px_param_seg *find_seg(const px_param_table *t, int64_t id)
{
    for (int i = 0; i < t->n_segs; i++)
        if (t->segs[i].tensor_id == id)
            return &t->segs[i];
    return NULL;
}

/* The LoRA model's loss equals the plain model's with every adapter merged
 * into its base weight, W += (alpha / r) B A (PEFT's merge): the adapters'
 * scale, and their layout against q, k, v and gate, up. */
static void check_lora_merge(const px_plan *lora_plan, const px_exec_options *opt,
                             px_exec *lora, double lora_loss, px_backend *be)
{
    px_plan plan = *lora_plan;
    px_finetune_init(&plan.par.finetune);
    px_error err;
    px_exec *ex = NULL;
    if (px_exec_create(&ex, &plan, opt, be, MPI_COMM_WORLD, &err)) {
        fprintf(stderr, "merge: %s\n", err.msg);
        CHECK(0);
        px_exec_destroy(ex);
        return;
    }
    const px_finetune *ft = &lora_plan->par.finetune;
    double scale = ft->alpha / ft->rank;
    int64_t r = ft->rank, n;
    const px_param_table *lt = px_exec_table(lora), *bt = px_exec_table(ex);
    const float *lw = px_exec_params(lora, &n);
    float *bw = px_exec_params(ex, &n);
    bool gpt = plan.model.block == PX_BLOCK_GPT;
    /* (adapter A kind, B kind, base kind) */
    static const int pairs[][3] = {{PX_T_LORA_A_QKV, PX_T_LORA_B_Q, PX_T_WQ},
                                   {PX_T_LORA_A_QKV, PX_T_LORA_B_K, PX_T_WK},
                                   {PX_T_LORA_A_QKV, PX_T_LORA_B_V, PX_T_WV},
                                   {PX_T_LORA_A_PROJ, PX_T_LORA_B_PROJ, PX_T_WO},
                                   {PX_T_LORA_A_FC1, PX_T_LORA_B_FC1, PX_T_W_GATE},
                                   {PX_T_LORA_A_FC1, PX_T_LORA_B_UP, PX_T_W_UP},
                                   {PX_T_LORA_A_FC2, PX_T_LORA_B_FC2, PX_T_W_DOWN}};
    int merged = 0;
    for (int64_t l = 0; l < plan.model.n_layers; l++)
        for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
            int base_kind = gpt && pairs[p][2] == PX_T_W_GATE ? PX_T_W_FC : pairs[p][2];
            const px_param_seg *a = find_seg(lt, PX_TID_LORA(l, pairs[p][0]));
            const px_param_seg *b = find_seg(lt, PX_TID_LORA(l, pairs[p][1]));
            const px_param_seg *w = find_seg(bt, PX_TID_LAYER(l, base_kind));
            if (!a || !b || !w)
                continue; /* (GPT: no up projection) */
            CHECK(b->n_rows == w->n_rows && a->n_cols == w->n_cols && a->n_rows == r);
            for (int64_t i = 0; i < w->n_rows; i++)
                for (int64_t j = 0; j < w->n_cols; j++) {
                    double acc = 0.0;
                    for (int64_t k = 0; k < r; k++)
                        acc += (double)lw[b->offset + i * r + k] *
                               lw[a->offset + k * a->n_cols + j];
                    bw[w->offset + i * w->n_cols + j] += (float)(scale * acc);
                }
            merged++;
        }
    CHECK_MSG(merged == plan.model.n_layers * (gpt ? 6 : 7), "merge: %d adapters merged", merged);
    double loss = loss_and_grad(ex, NULL);
    fprintf(stderr, "%s lora: loss %.9g, merged plain model %.9g\n", plan.model.name, lora_loss,
            loss);
    CHECK_CLOSE(loss, lora_loss, 1e-5, 0.0);
    px_exec_destroy(ex);
}

/* LoRA on all four targets of every layer: the engine's gradient buffer
 * holds the adapters only (sum of r (in + out) per target and layer), and
 * their gradients match central differences.  B starts at zero, which makes
 * A's gradient zero too, so B is set to random values first (the weights are
 * host memory on the CPU backend, read by every step). */
static void check_lora(const char *model, px_backend *be)
{
    px_error err;
    px_plan plan;
    if (!plain_plan(model, &plan))
        return;
    plan.par.finetune.mode = PX_FT_LORA;
    plan.par.finetune.rank = 4;
    plan.par.finetune.alpha = 8.0; /* scale 2: a missing or doubled scale shows */
    plan.par.finetune.targets = PX_LORA_ALL;
    px_exec_options opt;
    px_exec_options_default(&opt);
    opt.init_std = 0.3f;
    px_exec *ex = NULL;
    if (px_exec_create(&ex, &plan, &opt, be, MPI_COMM_WORLD, &err)) {
        fprintf(stderr, "%s lora: %s\n", model, err.msg);
        CHECK(0);
        px_exec_destroy(ex);
        return;
    }
    const px_model *m = &plan.model;
    int64_t r = 4, h = m->hidden, f = m->ffn, nq = m->n_heads * m->head_dim;
    int64_t nk = m->n_kv_heads * m->head_dim, fc1 = m->block == PX_BLOCK_GPT ? f : 2 * f;
    int64_t want = m->n_layers * r * ((h + nq + 2 * nk) + (nq + h) + (h + fc1) + (f + h));
    int64_t n, ng;
    float *params = px_exec_params(ex, &n);
    px_exec_grads(ex, &ng);
    CHECK_MSG(n == want && ng == want,
              "%s lora: %lld trained parameters and %lld gradients, want %lld (the adapters)",
              model, (long long)n, (long long)ng, (long long)want);
    const px_param_table *tab = px_exec_table(ex);
    uint64_t rng = 777;
    for (int s = 0; s < tab->n_segs; s++) {
        const px_param_seg *seg = &tab->segs[s];
        if (seg->init != PX_INIT_ZEROS) /* A */
            continue;
        for (int64_t i = 0; i < seg->n_rows * seg->n_cols; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            params[seg->offset + i] = 0.3f * ((float)(rng >> 40) / 16777216.0f - 0.5f);
        }
    }
    float *grad = malloc((size_t)n * sizeof *grad);
    double loss0 = loss_and_grad(ex, grad);
    CHECK(isfinite(loss0) && loss0 > 0.0);
    check_lora_merge(&plan, &opt, ex, loss0, be);
    const float eps = 1e-2f;
    int checked = 0, bad = 0, nonzero = 0, a_ok = 0, b_ok = 0;
    for (int s = 0; s < tab->n_segs; s++) {
        const px_param_seg *seg = &tab->segs[s];
        CHECK(seg->tensor_id >= PX_TID_LORA0);
        int64_t size = seg->n_rows * seg->n_cols;
        for (int rep = 0; rep < 3; rep++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            int64_t idx = seg->offset + (int64_t)((rng >> 33) % (uint64_t)size);
            double num = central_difference(ex, params, idx, eps), ana = grad[idx];
            bool big = fabs(ana) > 1e-4;
            checked++;
            nonzero += big;
            a_ok += big && seg->init != PX_INIT_ZEROS;
            b_ok += big && seg->init == PX_INIT_ZEROS;
            if (!(fabs(num - ana) <= 2e-4 + 3e-2 * fabs(ana))) {
                bad++;
                fprintf(stderr, "%s lora: tensor %lld elem %lld: analytic %.6g numeric %.6g\n",
                        model, (long long)seg->tensor_id, (long long)(idx - seg->offset), ana,
                        num);
            }
        }
    }
    fprintf(stderr,
            "%s lora: %d adapter elements checked, %d with |grad| > 1e-4, %d mismatches\n",
            model, checked, nonzero, bad);
    CHECK(bad == 0);
    CHECK(nonzero > checked / 2);
    CHECK_MSG(a_ok >= 8 && b_ok >= 8, "%s lora: only %d A and %d B elements checked", model,
              a_ok, b_ok);
    free(grad);
    px_exec_destroy(ex);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 1) {
        fprintf(stderr, "test_gradcheck runs on one rank\n");
        MPI_Finalize();
        return 1;
    }
    px_backend be;
    px_error err;
    px_backend_cpu_create(&be, &err);
    check_model("tiny-llama", &be);
    check_model("tiny-gpt", &be);
    check_model("tiny-moe", &be);
    check_model("tiny-mla", &be);
    q_lora_override = 0;
    fprintf(stderr, "tiny-mla with q_lora_rank 0:\n");
    check_model("tiny-mla", &be);
    q_lora_override = -1;
    check_model("tiny-qwen3", &be); /* qk_norm, shared experts */
    mtp_override = 2;
    fprintf(stderr, "with 2 MTP modules:\n");
    check_model("tiny-llama", &be);
    mtp_override = 1;
    fprintf(stderr, "with 1 MTP module:\n");
    check_model("tiny-mla", &be);
    mtp_override = 0;
    check_lora("tiny-llama", &be);
    check_lora("tiny-gpt", &be);
    be.destroy(&be);
    int rc = px_test_result("gradcheck");
    MPI_Finalize();
    return rc;
}
