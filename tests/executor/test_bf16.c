/* test_bf16.c — bf16 storage on the CPU backend: the conversions of
 * kernels/cpu/px_bf16.h (round to nearest even, exact widening, NaN and
 * infinity), and the backend's bf16 kernel table against its definition:
 * widen the bf16 inputs, run the px_cpu_* kernel in fp32, round the outputs
 * (accumulating outputs widened first, fp32 arguments passed through) —
 * bit for bit, on random data.  Then the engine's choice of dtype (the
 * plan's dtype_bytes, the option, a backend without bf16) and its buffers
 * by kind after one bf16 step.  Runs as a single MPI process. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "px_backend.h"
#include "px_exec.h"
#include "px_bf16.h"
#include "px_kernels_cpu.h"
#include "px_test.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint64_t rng = 88172645463325252ull;

static float frand(void) /* in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* n random bf16 values (scaled), and their exact fp32 widening. */
static px_bf16 *rand_bf16(int64_t n, float scale, float **wide)
{
    px_bf16 *b = malloc((size_t)n * sizeof *b);
    *wide = malloc((size_t)n * sizeof **wide);
    for (int64_t i = 0; i < n; i++) {
        b[i] = px_f32_to_bf16(scale * frand());
        (*wide)[i] = px_bf16_to_f32(b[i]);
    }
    return b;
}

static int same_bits(const px_bf16 *a, const px_bf16 *b, int64_t n)
{
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static void test_conversions(void)
{
    CHECK(px_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(px_f32_to_bf16(-2.5f) == 0xc020);
    /* halfway cases tie to the even neighbour */
    CHECK(px_f32_to_bf16(float_of(0x3f808000u)) == 0x3f80); /* 1 + 2^-8 -> 1 */
    CHECK(px_f32_to_bf16(float_of(0x3f818000u)) == 0x3f82); /* up to the even one */
    CHECK(px_f32_to_bf16(float_of(0x3f808001u)) == 0x3f81); /* above half: up */
    CHECK(px_f32_to_bf16(float_of(0x3f807fffu)) == 0x3f80); /* below half: down */
    /* the largest float rounds to infinity; infinities and NaN survive */
    CHECK(px_f32_to_bf16(float_of(0x7f7fffffu)) == 0x7f80);
    CHECK(px_f32_to_bf16(INFINITY) == 0x7f80);
    CHECK(px_f32_to_bf16(-INFINITY) == 0xff80);
    CHECK(isnan(px_bf16_to_f32(px_f32_to_bf16(NAN))));
    CHECK(isnan(px_bf16_to_f32(px_f32_to_bf16(float_of(0x7f800001u))))); /* low-payload NaN */
    /* widening is exact: every non-NaN pattern survives the round trip, and
     * rounding any float moves it by at most half a bf16 ulp */
    int bad = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        float f = px_bf16_to_f32((px_bf16)b);
        if (!isnan(f) && px_f32_to_bf16(f) != b)
            bad++;
    }
    CHECK_MSG(bad == 0, "%d bf16 patterns do not round-trip", bad);
    int far = 0;
    for (int i = 0; i < 100000; i++) {
        float f = 1e3f * frand();
        float r = px_bf16_to_f32(px_f32_to_bf16(f));
        far += !(fabsf(r - f) <= fabsf(f) * (1.0f / 256.0f));
    }
    CHECK_MSG(far == 0, "%d roundings beyond half an ulp (2^-8 relative)", far);
    float in[3] = {0.1f, -3.0f, 65504.0f}, out[3];
    px_bf16 mid[3];
    px_bf16_round(mid, in, 3);
    px_bf16_widen(out, mid, 3);
    CHECK(out[1] == -3.0f && out[2] == 65536.0f && bits_of(out[0]) == 0x3dcd0000u);
}

static void test_table(void)
{
    px_error err;
    px_error_clear(&err);
    px_backend be;
    CHECK(px_backend_cpu_create(&be, &err) == PX_OK);
    CHECK(be.dtype == PX_F32);
    CHECK((be.dtypes & PX_DTYPE_BIT(PX_BF16)) && (be.dtypes & PX_DTYPE_BIT(PX_F32)));
    const px_kernels *k32 = be.k;
    CHECK(be.set_dtype(&be, PX_BF16, &err) == PX_OK);
    CHECK(be.dtype == PX_BF16 && be.k != k32);
    const px_kernels *k = be.k;

    enum { T = 13, K = 24, N = 10, C = 16 };
    float *xw, *ww, *bw, *gw;
    px_bf16 *x = rand_bf16(T * K, 1.0f, &xw), *w = rand_bf16(N * K, 0.5f, &ww);
    px_bf16 *b = rand_bf16(N, 0.1f, &bw), *g = rand_bf16(T * N, 1.0f, &gw);

    /* matmul forward: round(px_cpu on the widened inputs) */
    px_bf16 got[T * K], want[T * K];
    float ref[T * K];
    k->matmul_fwd(got, x, w, b, T, K, N);
    px_cpu_matmul_fwd(ref, xw, ww, bw, T, K, N);
    px_bf16_round(want, ref, T * N);
    CHECK(same_bits(got, want, T * N));

    /* matmul backward: dinp overwritten (bf16), dweight / dbias += (fp32) */
    float dw[N * K], dw_ref[N * K], db[N], db_ref[N];
    for (int i = 0; i < N * K; i++)
        dw[i] = dw_ref[i] = frand();
    for (int i = 0; i < N; i++)
        db[i] = db_ref[i] = frand();
    k->matmul_bwd(got, dw, db, g, x, w, T, K, N);
    px_cpu_matmul_bwd(ref, dw_ref, db_ref, gw, xw, ww, T, K, N);
    px_bf16_round(want, ref, T * K);
    CHECK(same_bits(got, want, T * K));
    CHECK(memcmp(dw, dw_ref, sizeof dw) == 0 && memcmp(db, db_ref, sizeof db) == 0);

    /* rmsnorm backward: dinp += in fp32 from the widened bf16, rounded once */
    float *nw;
    px_bf16 *nwt = rand_bf16(C, 1.0f, &nw);
    float rstd[T], dnw[C] = {0}, dnw_ref[C] = {0}, xin[T * C], ref2[T * C];
    px_bf16 out[T * C], want2[T * C];
    float *xcw;
    px_bf16 *xc = rand_bf16(T * C, 2.0f, &xcw);
    k->rmsnorm_fwd(out, rstd, xc, nwt, T, C, 1e-5f);
    float rstd_ref[T];
    px_cpu_rmsnorm_fwd(ref2, rstd_ref, xcw, nw, T, C, 1e-5f);
    px_bf16_round(want2, ref2, T * C);
    CHECK(same_bits(out, want2, T * C));
    CHECK(memcmp(rstd, rstd_ref, sizeof rstd) == 0); /* statistics stay fp32 */
    float *dyw;
    px_bf16 *dy = rand_bf16(T * C, 1.0f, &dyw);
    px_bf16 acc[T * C];
    px_bf16_round(acc, ref2, T * C); /* some earlier gradient in dinp */
    for (int i = 0; i < T * C; i++)
        xin[i] = px_bf16_to_f32(acc[i]);
    k->rmsnorm_bwd(acc, dnw, dy, xc, nwt, rstd, T, C);
    px_cpu_rmsnorm_bwd(xin, dnw_ref, dyw, xcw, nw, rstd_ref, T, C);
    px_bf16_round(want2, xin, T * C);
    CHECK(same_bits(acc, want2, T * C));
    CHECK(memcmp(dnw, dnw_ref, sizeof dnw) == 0);

    /* AdamW: the fp32 master as px_cpu_adamw_step, the copy its rounding */
    float mst[N * K], mst_ref[N * K], m1[N * K] = {0}, v1[N * K] = {0}, m2[N * K] = {0},
                                      v2[N * K] = {0};
    px_bf16 copy[N * K], want3[N * K];
    memcpy(mst, ww, sizeof mst);
    memcpy(mst_ref, ww, sizeof mst_ref);
    k->adamw_step(mst, dw, m1, v1, N * K, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1, copy);
    px_cpu_adamw_step(mst_ref, dw, m2, v2, N * K, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1);
    px_bf16_round(want3, mst_ref, N * K);
    CHECK(memcmp(mst, mst_ref, sizeof mst) == 0);
    CHECK(same_bits(copy, want3, N * K));
    int moved = 0; /* the step really changed the copy */
    for (int i = 0; i < N * K; i++)
        moved += copy[i] != w[i];
    CHECK(moved > N * K / 2);

    /* MoE combine: out[rows[a]] += gate y[a]; rows beyond the permutation's
     * reach stay untouched */
    enum { R = 5 };
    int32_t rows[R] = {3, 0, 3, 1, 0}, slots[R] = {0, 1, 2, 3, 4};
    float gate[R] = {0.5f, 0.25f, 0.125f, 1.0f, 2.0f};
    float *yw, *ow;
    px_bf16 *y = rand_bf16(R * C, 1.0f, &yw), *o = rand_bf16(6 * C, 1.0f, &ow);
    px_bf16 keep[6 * C];
    memcpy(keep, o, sizeof keep);
    k->moe_unpermute(o, y, rows, gate, slots, R, C);
    px_cpu_moe_unpermute(ow, yw, rows, gate, slots, R, C);
    px_bf16 want4[6 * C];
    px_bf16_round(want4, ow, 6 * C);
    CHECK(same_bits(o, want4, 4 * C));
    CHECK(same_bits(o + 4 * C, keep + 4 * C, 2 * C));

    /* back to fp32: the table is the plain px_cpu kernels again */
    CHECK(be.set_dtype(&be, PX_F32, &err) == PX_OK);
    float got32[T * N];
    be.k->matmul_fwd(got32, xw, ww, bw, T, K, N);
    px_cpu_matmul_fwd(ref, xw, ww, bw, T, K, N);
    CHECK(memcmp(got32, ref, sizeof got32) == 0);
    CHECK(be.sync(&be, &err) == PX_OK);
    be.destroy(&be);
    free(x), free(xw), free(w), free(ww), free(b), free(bw), free(g), free(gw);
    free(nwt), free(nw), free(xc), free(xcw), free(dy), free(dyw);
    free(y), free(yw), free(o), free(ow);
}

static int make_plan(px_plan *plan, int dtype_bytes)
{
    px_error err;
    memset(plan, 0, sizeof *plan);
    plan->version = PX_PLAN_VERSION;
    if (px_model_load("tiny-llama", NULL, &plan->model, &err)) {
        fprintf(stderr, "tiny-llama: %s\n", err.msg);
        return -1;
    }
    plan->hw.peak_flops = 1e10;
    plan->hw.dtype_bytes = dtype_bytes;
    px_parallel_init(&plan->par);
    plan->par.micro_batch = 2;
    plan->par.n_micro = 1;
    plan->par.seq_len = 8;
    plan->par.flash_attention = true;
    plan->par.grad_fp32 = true;
    return 0;
}

static void test_engine(void)
{
    px_plan plan;
    px_exec_options opt;
    px_exec_options_default(&opt);
    px_error err;
    px_backend be;
    px_exec *ex = NULL;
    if (make_plan(&plan, 2)) {
        CHECK(0);
        return;
    }
    CHECK(px_backend_cpu_create(&be, &err) == PX_OK);

    /* the plan's dtype_bytes 2: bf16, with the cost model's bytes per kind */
    CHECK(px_exec_create(&ex, &plan, &opt, &be, MPI_COMM_WORLD, &err) == PX_OK);
    if (ex) {
        CHECK(px_exec_dtype(ex) == PX_BF16 && be.dtype == PX_BF16);
        int64_t n = 0;
        const float *master = px_exec_params(ex, &n);
        const px_param_table *tab = px_exec_table(ex);
        CHECK(n == tab->n_elems);
        float before = master[0];
        double loss = 0.0;
        CHECK(px_exec_step(ex, 0, true, &loss, &err) == PX_OK);
        CHECK(isfinite(loss) && loss > 0.0);
        CHECK(master[0] != before); /* AdamW moved the fp32 master */
        const px_memtrack *mt = px_exec_memory(ex);
        CHECK(mt->cur[PX_MEM_WEIGHTS] == 2 * n);
        CHECK(mt->cur[PX_MEM_GRADS] == 4 * n);
        CHECK(mt->cur[PX_MEM_OPTIMIZER] == 12 * n);
    }
    px_exec_destroy(ex);
    ex = NULL;

    /* --dtype fp32 overrides the profile */
    opt.dtype_bytes = 4;
    CHECK(px_exec_create(&ex, &plan, &opt, &be, MPI_COMM_WORLD, &err) == PX_OK);
    CHECK(ex && px_exec_dtype(ex) == PX_F32 && be.dtype == PX_F32);
    px_exec_destroy(ex);
    ex = NULL;

    /* neither 2 nor 4 */
    opt.dtype_bytes = 3;
    px_error_clear(&err);
    CHECK(px_exec_create(&ex, &plan, &opt, &be, MPI_COMM_WORLD, &err) == PX_ERR_INVALID);
    CHECK(strstr(err.msg, "bf16 (2) or fp32 (4)") != NULL);
    px_exec_destroy(ex);
    ex = NULL;

    /* a backend without bf16 kernels refuses bf16, naming the option */
    opt.dtype_bytes = 0;
    be.dtypes = PX_DTYPE_BIT(PX_F32);
    px_error_clear(&err);
    CHECK(px_exec_create(&ex, &plan, &opt, &be, MPI_COMM_WORLD, &err) == PX_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "--dtype fp32") != NULL, "message: %s", err.msg);
    px_exec_destroy(ex);
    be.destroy(&be);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    test_conversions();
    test_table();
    test_engine();
    int rc = px_test_result("exec_bf16_kernels");
    MPI_Finalize();
    return rc;
}
