/* test_gpu_kernels.c — every CUDA kernel against its CPU twin on fresh random
 * data: `test_gpu_kernels <group>` runs one group for both storage types
 * (bf16: the twins px_cuda_*; fp32: the px_cuda_*_f32 variants the executor
 * drives).  Inputs are rounded to bf16 on the host before the CPU reference
 * sees them, so the comparison measures the kernel, not the input rounding:
 * |ref - got| <= atol + rtol |ref|, atol a fraction of max |ref|.
 * Without a GPU it exits 77 (skipped).  The seed is printed; PX_TEST_SEED
 * replays it. */
#include "gpu_util.h"
#include "px_cuda_alloc.h"
#include "px_kernels_cpu.h"

/* Tolerances: outputs stored in bf16 carry a relative rounding of 2^-9; the
 * fp32 variants differ from the CPU only by summation order and libm ulps. */
#define BF_ATOL 1e-2
#define BF_RTOL 1e-2
#define F_ATOL 2e-5
#define F_RTOL 2e-5
#define TOL_A(f32) ((f32) ? F_ATOL : BF_ATOL)
#define TOL_R(f32) ((f32) ? F_RTOL : BF_RTOL)
/* fp32 accumulators (parameter gradients, statistics) of identical inputs. */
#define ACC_ATOL 1e-4
#define ACC_RTOL 1e-4

static const char *kind(bool f32) { return f32 ? "f32" : "bf16"; }

static void label(char *buf, size_t n, const char *what, bool f32)
{
    snprintf(buf, n, "%s [%s]", what, kind(f32));
}

static void test_cast(bool f32)
{
    if (f32)
        return; /* the casts are between the two storage types */
    int64_t n = 1000;
    float *x = rand_vec(n, -4, 4);
    float *dx = f32_up(x, n);
    dten b = dten_up(rand_vec(n, 0, 1), n, false);
    PX_OK_OR_FAIL(px_cuda_cast_f32_to_bf16(b.p, dx, n, 0, &perr));
    float *got = dten_down(b), *ref = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++)
        ref[i] = round_bf16(x[i]);
    compare("cast f32->bf16 (exact)", got, ref, n, 0, 0);
    float *back = NULL;
    cuda_fail(cudaMalloc((void **)&back, (size_t)n * 4), "cudaMalloc");
    PX_OK_OR_FAIL(px_cuda_cast_bf16_to_f32(back, b.p, n, 0, &perr));
    float *got2 = f32_down(back, n);
    compare("cast bf16->f32 (exact)", got2, ref, n, 0, 0);
}

static void test_embedding(bool f32)
{
    int64_t T = 123, C = 72, V = 50, v0 = 10, v1 = 40;
    int32_t *tok = malloc((size_t)T * 4);
    for (int64_t t = 0; t < T; t++)
        tok[t] = (int32_t)(rng_next() % (uint64_t)V);
    int32_t *dtok = i32_up(tok, T);
    float *table = rand_vec((v1 - v0) * C, -1, 1);
    dten dtab = dten_up(table, (v1 - v0) * C, f32);
    dten dout = dten_up(rand_vec(T * C, -1, 1), T * C, f32);
    float *ref = malloc((size_t)(T * C) * 4);
    px_cpu_embedding_fwd(ref, tok, table, T, C, v0, v1);
    PX_OK_OR_FAIL(f32 ? px_cuda_embedding_fwd_f32(dout.p, dtok, dtab.p, T, C, v0, v1, 0, &perr)
                      : px_cuda_embedding_fwd(dout.p, dtok, dtab.p, T, C, v0, v1, 0, &perr));
    char l[64];
    label(l, sizeof l, "embedding_fwd", f32);
    compare(l, dten_down(dout), ref, T * C, 0, 0); /* a copy: exact */

    float *g = rand_vec(T * C, -1, 1);
    dten dg = dten_up(g, T * C, f32);
    float *dtable = rand_vec((v1 - v0) * C, -1, 1);
    float *ddtable = f32_up(dtable, (v1 - v0) * C);
    px_cpu_embedding_bwd(dtable, g, tok, T, C, v0, v1);
    PX_OK_OR_FAIL(f32 ? px_cuda_embedding_bwd_f32(ddtable, dg.p, dtok, T, C, v0, v1, 0, &perr)
                      : px_cuda_embedding_bwd(ddtable, dg.p, dtok, T, C, v0, v1, 0, &perr));
    label(l, sizeof l, "embedding_bwd dtable +=", f32);
    compare(l, f32_down(ddtable, (v1 - v0) * C), dtable, (v1 - v0) * C, ACC_ATOL, ACC_RTOL);
}

static void test_positions(bool f32)
{
    int64_t S = 33, B = 3, C = 40, P = 64, pos0 = 7;
    float *x = rand_vec(S * B * C, -1, 1), *pos = rand_vec(P * C, -1, 1);
    dten dx = dten_up(x, S * B * C, f32), dpos = dten_up(pos, P * C, f32);
    px_cpu_positions_fwd(x, pos, S, B, C, pos0);
    PX_OK_OR_FAIL(f32 ? px_cuda_positions_fwd_f32(dx.p, dpos.p, S, B, C, pos0, 0, &perr)
                      : px_cuda_positions_fwd(dx.p, dpos.p, S, B, C, pos0, 0, &perr));
    char l[64];
    label(l, sizeof l, "positions_fwd", f32);
    compare(l, dten_down(dx), x, S * B * C, TOL_A(f32), TOL_R(f32));

    float *g = rand_vec(S * B * C, -1, 1);
    dten dg = dten_up(g, S * B * C, f32);
    float *dp = rand_vec(P * C, -1, 1);
    float *ddp = f32_up(dp, P * C);
    px_cpu_positions_bwd(dp, g, S, B, C, pos0);
    PX_OK_OR_FAIL(f32 ? px_cuda_positions_bwd_f32(ddp, dg.p, S, B, C, pos0, 0, &perr)
                      : px_cuda_positions_bwd(ddp, dg.p, S, B, C, pos0, 0, &perr));
    label(l, sizeof l, "positions_bwd dpos +=", f32);
    compare(l, f32_down(ddp, P * C), dp, P * C, ACC_ATOL, ACC_RTOL);
}

static void test_rmsnorm_c(bool f32, int64_t T, int64_t C)
{
    float eps = 1e-5f;
    float *x = rand_vec(T * C, -2, 2), *w = rand_vec(C, 0.5f, 1.5f);
    dten dx = dten_up(x, T * C, f32), dw = dten_up(w, C, f32);
    dten dout = dten_up(rand_vec(T * C, 0, 1), T * C, f32);
    float *drstd = f32_up(x, T);
    float *out = malloc((size_t)(T * C) * 4), *rstd = malloc((size_t)T * 4);
    px_cpu_rmsnorm_fwd(out, rstd, x, w, T, C, eps);
    PX_OK_OR_FAIL(f32 ? px_cuda_rmsnorm_fwd_f32(dout.p, drstd, dx.p, dw.p, T, C, eps, 0, &perr)
                      : px_cuda_rmsnorm_fwd(dout.p, drstd, dx.p, dw.p, T, C, eps, 0, &perr));
    char l[80];
    snprintf(l, sizeof l, "rmsnorm_fwd C=%lld [%s]", (long long)C, kind(f32));
    compare(l, dten_down(dout), out, T * C, TOL_A(f32), TOL_R(f32));
    compare("  rstd", f32_down(drstd, T), rstd, T, ACC_ATOL, ACC_RTOL);

    float *g = rand_vec(T * C, -1, 1), *dinp = rand_vec(T * C, -1, 1);
    float *dweight = rand_vec(C, -1, 1);
    dten dg = dten_up(g, T * C, f32), ddinp = dten_up(dinp, T * C, f32);
    float *ddw = f32_up(dweight, C);
    float *drs = f32_up(rstd, T);
    px_cpu_rmsnorm_bwd(dinp, dweight, g, x, w, rstd, T, C);
    PX_OK_OR_FAIL(f32 ? px_cuda_rmsnorm_bwd_f32(ddinp.p, ddw, dg.p, dx.p, dw.p, drs, T, C, 0, &perr)
                      : px_cuda_rmsnorm_bwd(ddinp.p, ddw, dg.p, dx.p, dw.p, drs, T, C, 0, &perr));
    snprintf(l, sizeof l, "rmsnorm_bwd dinp += C=%lld [%s]", (long long)C, kind(f32));
    compare(l, dten_down(ddinp), dinp, T * C, TOL_A(f32), TOL_R(f32));
    compare("  dweight +=", f32_down(ddw, C), dweight, C, ACC_ATOL, ACC_RTOL);
}

static void test_rmsnorm(bool f32)
{
    test_rmsnorm_c(f32, 67, 1000);
    test_rmsnorm_c(f32, 21, 14000); /* > 48 KiB of weight partials: opt-in shared memory */
}

static void test_layernorm_c(bool f32, int64_t T, int64_t C)
{
    float eps = 1e-5f;
    float *x = rand_vec(T * C, -2, 3), *w = rand_vec(C, 0.5f, 1.5f), *bs = rand_vec(C, -1, 1);
    dten dx = dten_up(x, T * C, f32), dw = dten_up(w, C, f32), db = dten_up(bs, C, f32);
    dten dout = dten_up(rand_vec(T * C, 0, 1), T * C, f32);
    float *dmean = f32_up(x, T), *drstd = f32_up(x, T);
    float *out = malloc((size_t)(T * C) * 4), *mean = malloc((size_t)T * 4),
          *rstd = malloc((size_t)T * 4);
    px_cpu_layernorm_fwd(out, mean, rstd, x, w, bs, T, C, eps);
    PX_OK_OR_FAIL(f32 ? px_cuda_layernorm_fwd_f32(dout.p, dmean, drstd, dx.p, dw.p, db.p, T, C,
                                                  eps, 0, &perr)
                      : px_cuda_layernorm_fwd(dout.p, dmean, drstd, dx.p, dw.p, db.p, T, C, eps,
                                              0, &perr));
    char l[80];
    snprintf(l, sizeof l, "layernorm_fwd C=%lld [%s]", (long long)C, kind(f32));
    compare(l, dten_down(dout), out, T * C, TOL_A(f32), TOL_R(f32));
    compare("  mean", f32_down(dmean, T), mean, T, ACC_ATOL, ACC_RTOL);
    compare("  rstd", f32_down(drstd, T), rstd, T, ACC_ATOL, ACC_RTOL);

    float *g = rand_vec(T * C, -1, 1), *dinp = rand_vec(T * C, -1, 1);
    float *dweight = rand_vec(C, -1, 1), *dbias = rand_vec(C, -1, 1);
    dten dg = dten_up(g, T * C, f32), ddinp = dten_up(dinp, T * C, f32);
    float *ddw = f32_up(dweight, C), *ddb = f32_up(dbias, C);
    float *dm = f32_up(mean, T), *drs = f32_up(rstd, T);
    px_cpu_layernorm_bwd(dinp, dweight, dbias, g, x, w, mean, rstd, T, C);
    PX_OK_OR_FAIL(f32 ? px_cuda_layernorm_bwd_f32(ddinp.p, ddw, ddb, dg.p, dx.p, dw.p, dm, drs,
                                                  T, C, 0, &perr)
                      : px_cuda_layernorm_bwd(ddinp.p, ddw, ddb, dg.p, dx.p, dw.p, dm, drs, T, C,
                                              0, &perr));
    snprintf(l, sizeof l, "layernorm_bwd dinp += C=%lld [%s]", (long long)C, kind(f32));
    compare(l, dten_down(ddinp), dinp, T * C, TOL_A(f32), TOL_R(f32));
    compare("  dweight +=", f32_down(ddw, C), dweight, C, ACC_ATOL, ACC_RTOL);
    compare("  dbias +=", f32_down(ddb, C), dbias, C, ACC_ATOL, ACC_RTOL);
}

static void test_layernorm(bool f32)
{
    test_layernorm_c(f32, 59, 768);
    test_layernorm_c(f32, 23, 7000); /* 56 KiB of partials: opt-in shared memory */
}

static void test_matmul(bool f32)
{
    int64_t T = 100, K = 96, N = 80;
    px_cuda_blas *blas = NULL;
    PX_OK_OR_FAIL(px_cuda_blas_new(0, &blas, &perr));
    if (!blas)
        return;
    float *x = rand_vec(T * K, -1, 1), *w = rand_vec(N * K, -1, 1), *bs = rand_vec(N, -1, 1);
    dten dx = dten_up(x, T * K, f32), dw = dten_up(w, N * K, f32), db = dten_up(bs, N, f32);
    dten dout = dten_up(rand_vec(T * N, 0, 1), T * N, f32);
    float *out = malloc((size_t)(T * N) * 4);
    px_cpu_matmul_fwd(out, x, w, bs, T, K, N);
    PX_OK_OR_FAIL(f32 ? px_cuda_matmul_fwd_f32(dout.p, dx.p, dw.p, db.p, T, K, N, blas, 0, &perr)
                      : px_cuda_matmul_fwd(dout.p, dx.p, dw.p, db.p, T, K, N, blas, 0, &perr));
    /* Both paths multiply on bf16 tensor cores (the fp32 one rounds its
     * inputs inside cuBLAS), so both get the bf16 tolerance. */
    char l[64];
    label(l, sizeof l, "matmul_fwd (+bias)", f32);
    compare(l, dten_down(dout), out, T * N, 2e-2, 2e-2);

    float *g = rand_vec(T * N, -1, 1), *dw0 = rand_vec(N * K, -1, 1), *db0 = rand_vec(N, -1, 1);
    dten dg = dten_up(g, T * N, f32);
    /* The fp32 path rounds g inside cuBLAS: give the reference the same. */
    float *g_ref = copy_vec(g, T * N), *x_ref = copy_vec(x, T * K), *w_ref = copy_vec(w, N * K);
    if (f32)
        for (int64_t i = 0; i < T * N; i++)
            g_ref[i] = round_bf16(g[i]);
    float *ddw = f32_up(dw0, N * K), *ddb = f32_up(db0, N);
    dten ddinp = dten_up(rand_vec(T * K, 0, 1), T * K, f32);
    float *dinp = malloc((size_t)(T * K) * 4);
    px_cpu_matmul_bwd(dinp, dw0, db0, g_ref, x_ref, w_ref, T, K, N);
    PX_OK_OR_FAIL(f32 ? px_cuda_matmul_bwd_f32(ddinp.p, ddw, ddb, dg.p, dx.p, dw.p, T, K, N, blas,
                                               0, &perr)
                      : px_cuda_matmul_bwd(ddinp.p, ddw, ddb, dg.p, dx.p, dw.p, T, K, N, blas, 0,
                                           &perr));
    label(l, sizeof l, "matmul_bwd dinp", f32);
    compare(l, dten_down(ddinp), dinp, T * K, 2e-2, 2e-2);
    compare("  dweight += (fp32)", f32_down(ddw, N * K), dw0, N * K, 2e-2, 2e-2);
    compare("  dbias +=", f32_down(ddb, N), db0, N, f32 ? 2e-2 : ACC_ATOL, ACC_RTOL);
    px_cuda_blas_delete(blas);
}

static void test_bias_residual(bool f32)
{
    int64_t T = 300, N = 70, n = T * N;
    float *x = rand_vec(n, -1, 1), *bs = rand_vec(N, -1, 1);
    dten dx = dten_up(x, n, f32), db = dten_up(bs, N, f32);
    px_cpu_bias_add_fwd(x, bs, T, N);
    PX_OK_OR_FAIL(f32 ? px_cuda_bias_add_fwd_f32(dx.p, db.p, T, N, 0, &perr)
                      : px_cuda_bias_add_fwd(dx.p, db.p, T, N, 0, &perr));
    char l[64];
    label(l, sizeof l, "bias_add_fwd", f32);
    compare(l, dten_down(dx), x, n, TOL_A(f32), TOL_R(f32));

    float *g = rand_vec(n, -1, 1), *dbias = rand_vec(N, -1, 1);
    dten dg = dten_up(g, n, f32);
    float *ddb = f32_up(dbias, N);
    px_cpu_bias_add_bwd(dbias, g, T, N);
    PX_OK_OR_FAIL(f32 ? px_cuda_bias_add_bwd_f32(ddb, dg.p, T, N, 0, &perr)
                      : px_cuda_bias_add_bwd(ddb, dg.p, T, N, 0, &perr));
    label(l, sizeof l, "bias_add_bwd dbias +=", f32);
    compare(l, f32_down(ddb, N), dbias, N, ACC_ATOL, ACC_RTOL);

    float *a = rand_vec(n, -1, 1), *b = rand_vec(n, -1, 1), *o = malloc((size_t)n * 4);
    dten da = dten_up(a, n, f32), dbb = dten_up(b, n, f32);
    dten dout = dten_up(rand_vec(n, 0, 1), n, f32);
    px_cpu_residual_fwd(o, a, b, n);
    PX_OK_OR_FAIL(f32 ? px_cuda_residual_fwd_f32(dout.p, da.p, dbb.p, n, 0, &perr)
                      : px_cuda_residual_fwd(dout.p, da.p, dbb.p, n, 0, &perr));
    label(l, sizeof l, "residual_fwd", f32);
    compare(l, dten_down(dout), o, n, TOL_A(f32), TOL_R(f32));
    /* backward: both gradients accumulate */
    float *ga = rand_vec(n, -1, 1), *gb = rand_vec(n, -1, 1), *gd = rand_vec(n, -1, 1);
    dten dga = dten_up(ga, n, f32), dgb = dten_up(gb, n, f32), dgd = dten_up(gd, n, f32);
    px_cpu_residual_bwd(ga, gb, gd, n);
    PX_OK_OR_FAIL(f32 ? px_cuda_residual_bwd_f32(dga.p, dgb.p, dgd.p, n, 0, &perr)
                      : px_cuda_residual_bwd(dga.p, dgb.p, dgd.p, n, 0, &perr));
    label(l, sizeof l, "residual_bwd da +=", f32);
    compare(l, dten_down(dga), ga, n, TOL_A(f32), TOL_R(f32));
    compare("  db +=", dten_down(dgb), gb, n, TOL_A(f32), TOL_R(f32));
}

static void test_rope(bool f32)
{
    int64_t S = 17, B = 2, NH = 4, NKV = 2, HD = 64, pos0 = 3000, n = S * B * (NH + 2 * NKV) * HD;
    float theta = 10000.0f;
    float *x = rand_vec(n, -1, 1);
    dten dx = dten_up(x, n, f32);
    px_cpu_rope_fwd(x, S, B, NH, NKV, HD, pos0, theta);
    PX_OK_OR_FAIL(f32 ? px_cuda_rope_fwd_f32(dx.p, S, B, NH, NKV, HD, pos0, theta, 0, &perr)
                      : px_cuda_rope_fwd(dx.p, S, B, NH, NKV, HD, pos0, theta, 0, &perr));
    char l[64];
    label(l, sizeof l, "rope_fwd (v heads untouched)", f32);
    compare(l, dten_down(dx), x, n, TOL_A(f32), TOL_R(f32));
    float *g = rand_vec(n, -1, 1);
    dten dg = dten_up(g, n, f32);
    px_cpu_rope_bwd(g, S, B, NH, NKV, HD, pos0, theta);
    PX_OK_OR_FAIL(f32 ? px_cuda_rope_bwd_f32(dg.p, S, B, NH, NKV, HD, pos0, theta, 0, &perr)
                      : px_cuda_rope_bwd(dg.p, S, B, NH, NKV, HD, pos0, theta, 0, &perr));
    label(l, sizeof l, "rope_bwd", f32);
    compare(l, dten_down(dg), g, n, TOL_A(f32), TOL_R(f32));
}

static void test_attention_case(bool f32, int64_t S, int64_t B, int64_t NH, int64_t NKV,
                                int64_t HD, float range)
{
    int64_t W = (NH + 2 * NKV) * HD, nq = S * B * W, no = S * B * NH * HD, nl = B * NH * S;
    float *qkv = rand_vec(nq, -range, range);
    dten dqkv_in = dten_up(qkv, nq, f32); /* rounds qkv for the bf16 case */
    /* Both storage types feed the tensor cores bf16: the reference sees the
     * bf16-rounded inputs in either case. */
    for (int64_t i = 0; i < nq; i++)
        qkv[i] = round_bf16(qkv[i]);
    float *out = malloc((size_t)no * 4), *lse = malloc((size_t)nl * 4);
    px_cpu_attention_fwd(out, lse, NULL, qkv, S, B, NH, NKV, HD);
    dten dout = dten_up(rand_vec(no, 0, 1), no, f32);
    float *dlse = f32_up(lse, nl); /* overwritten */
    PX_OK_OR_FAIL(f32 ? px_cuda_attention_fwd_f32(dout.p, dlse, NULL, dqkv_in.p, S, B, NH, NKV, HD,
                                                  0, &perr)
                      : px_cuda_attention_fwd(dout.p, dlse, NULL, dqkv_in.p, S, B, NH, NKV, HD, 0,
                                              &perr));
    char l[96];
    snprintf(l, sizeof l, "attention_fwd S=%lld HD=%lld %lld/%lld [%s]", (long long)S,
             (long long)HD, (long long)NH, (long long)NKV, kind(f32));
    compare(l, dten_down(dout), out, no, 2e-2, 2e-2);
    compare("  lse", f32_down(dlse, nl), lse, nl, 2e-3, 2e-3);

    /* Backward from the reference's own out and lse, so both sides see the
     * same inputs; dO random. */
    float *g = rand_vec(no, -1, 1);
    dten dg = dten_up(g, no, f32);
    dten dref_out = dten_up(out, no, f32); /* rounds out in the bf16 case */
    float *dlse2 = f32_up(lse, nl);
    float *dq = malloc((size_t)nq * 4);
    px_cpu_attention_bwd(dq, g, out, lse, NULL, qkv, S, B, NH, NKV, HD);
    dten ddq = dten_up(rand_vec(nq, 0, 1), nq, f32); /* overwritten */
    PX_OK_OR_FAIL(f32 ? px_cuda_attention_bwd_f32(ddq.p, dg.p, dref_out.p, dlse2, NULL,
                                                  dqkv_in.p, S, B, NH, NKV, HD, 0, &perr)
                      : px_cuda_attention_bwd(ddq.p, dg.p, dref_out.p, dlse2, NULL, dqkv_in.p, S,
                                              B, NH, NKV, HD, 0, &perr));
    float *got = dten_down(ddq);
    /* Compare q, k and v gradients separately: their scales differ. */
    float *gs = malloc((size_t)nq * 4), *rs = malloc((size_t)nq * 4);
    const char *part[3] = {"  dq", "  dk", "  dv"};
    int64_t c0[3] = {0, NH * HD, (NH + NKV) * HD}, c1[3] = {NH * HD, (NH + NKV) * HD, W};
    for (int p = 0; p < 3; p++) {
        int64_t m = 0;
        for (int64_t r = 0; r < S * B; r++)
            for (int64_t c = c0[p]; c < c1[p]; c++) {
                gs[m] = got[r * W + c];
                rs[m] = dq[r * W + c];
                m++;
            }
        compare(part[p], gs, rs, m, 3e-2, 3e-2);
    }
}

static void test_attention(bool f32)
{
    test_attention_case(f32, 200, 2, 4, 2, 64, 2.0f);  /* GQA, S not a tile multiple */
    test_attention_case(f32, 130, 1, 2, 2, 128, 2.0f); /* MHA, head dim 128 */
    test_attention_case(f32, 64, 2, 8, 1, 128, 4.0f);  /* MQA, one tile, sharp softmax */
    test_attention_case(f32, 70, 3, 4, 2, 16, 2.0f);   /* the tiny test models' head dim */
    test_attention_case(f32, 100, 1, 2, 1, 32, 2.0f);

    /* The S x S probabilities are never materialised: asking for them is refused. */
    float *junk = NULL;
    cuda_fail(cudaMalloc((void **)&junk, 4096), "cudaMalloc");
    px_error_clear(&perr);
    px_status st = px_cuda_attention_fwd_f32(junk, junk, junk, junk, 4, 1, 1, 1, 64, 0, &perr);
    CHECK(st == PX_ERR_UNSUPPORTED);
    st = px_cuda_attention_fwd_f32(junk, junk, NULL, junk, 4, 1, 1, 1, 96, 0, &perr);
    CHECK(st == PX_ERR_UNSUPPORTED); /* head dim 96 */
    cudaFree(junk);
}

static void test_mlp(bool f32)
{
    int64_t T = 50, F = 70, n = 1000;
    float *gu = rand_vec(T * 2 * F, -3, 3), *o = malloc((size_t)(T * F) * 4);
    dten dgu = dten_up(gu, T * 2 * F, f32), dout = dten_up(rand_vec(T * F, 0, 1), T * F, f32);
    px_cpu_swiglu_fwd(o, gu, T, F);
    PX_OK_OR_FAIL(f32 ? px_cuda_swiglu_fwd_f32(dout.p, dgu.p, T, F, 0, &perr)
                      : px_cuda_swiglu_fwd(dout.p, dgu.p, T, F, 0, &perr));
    char l[64];
    label(l, sizeof l, "swiglu_fwd", f32);
    compare(l, dten_down(dout), o, T * F, TOL_A(f32), TOL_R(f32));
    float *g = rand_vec(T * F, -1, 1), *dgate = malloc((size_t)(T * 2 * F) * 4);
    dten dg = dten_up(g, T * F, f32), ddg = dten_up(rand_vec(T * 2 * F, 0, 1), T * 2 * F, f32);
    px_cpu_swiglu_bwd(dgate, g, gu, T, F);
    PX_OK_OR_FAIL(f32 ? px_cuda_swiglu_bwd_f32(ddg.p, dg.p, dgu.p, T, F, 0, &perr)
                      : px_cuda_swiglu_bwd(ddg.p, dg.p, dgu.p, T, F, 0, &perr));
    label(l, sizeof l, "swiglu_bwd", f32);
    compare(l, dten_down(ddg), dgate, T * 2 * F, TOL_A(f32), TOL_R(f32));

    float *x = rand_vec(n, -4, 4), *y = malloc((size_t)n * 4);
    dten dx = dten_up(x, n, f32), dy = dten_up(rand_vec(n, 0, 1), n, f32);
    px_cpu_gelu_fwd(y, x, n);
    PX_OK_OR_FAIL(f32 ? px_cuda_gelu_fwd_f32(dy.p, dx.p, n, 0, &perr)
                      : px_cuda_gelu_fwd(dy.p, dx.p, n, 0, &perr));
    label(l, sizeof l, "gelu_fwd", f32);
    compare(l, dten_down(dy), y, n, TOL_A(f32), TOL_R(f32));
    float *gg = rand_vec(n, -1, 1), *dx_ref = malloc((size_t)n * 4);
    dten dgg = dten_up(gg, n, f32);
    px_cpu_gelu_bwd(dx_ref, gg, x, n);
    /* in place: dinp aliases dout, as the header allows */
    PX_OK_OR_FAIL(f32 ? px_cuda_gelu_bwd_f32(dgg.p, dgg.p, dx.p, n, 0, &perr)
                      : px_cuda_gelu_bwd(dgg.p, dgg.p, dx.p, n, 0, &perr));
    label(l, sizeof l, "gelu_bwd (in place)", f32);
    compare(l, dten_down(dgg), dx_ref, n, TOL_A(f32), TOL_R(f32));
}

static void test_xent(bool f32)
{
    int64_t T = 40, Vl = 300, v0 = 100;
    float *logits = rand_vec(T * Vl, -5, 5);
    dten dlog = dten_up(logits, T * Vl, f32);
    int32_t *tg = malloc((size_t)T * 4);
    for (int64_t t = 0; t < T; t++) /* some targets outside this shard */
        tg[t] = (int32_t)(rng_next() % 600);
    int32_t *dtg = i32_up(tg, T);
    float *mx = malloc((size_t)T * 4), *se = malloc((size_t)T * 4), *tl = malloc((size_t)T * 4),
          *loss = malloc((size_t)T * 4);
    px_cpu_xent_max_fwd(mx, logits, T, Vl);
    px_cpu_xent_sumexp_fwd(se, tl, logits, mx, tg, T, Vl, v0);
    px_cpu_xent_loss_fwd(loss, mx, se, tl, T);
    float *dmx = f32_up(mx, T), *dse = f32_up(mx, T), *dtl = f32_up(mx, T), *dloss = f32_up(mx, T);
    PX_OK_OR_FAIL(f32 ? px_cuda_xent_max_fwd_f32(dmx, dlog.p, T, Vl, 0, &perr)
                      : px_cuda_xent_max_fwd(dmx, dlog.p, T, Vl, 0, &perr));
    char l[64];
    label(l, sizeof l, "xent_max_fwd (exact)", f32);
    compare(l, f32_down(dmx, T), mx, T, 0, 0);
    PX_OK_OR_FAIL(f32 ? px_cuda_xent_sumexp_fwd_f32(dse, dtl, dlog.p, dmx, dtg, T, Vl, v0, 0, &perr)
                      : px_cuda_xent_sumexp_fwd(dse, dtl, dlog.p, dmx, dtg, T, Vl, v0, 0, &perr));
    compare("  sumexp", f32_down(dse, T), se, T, ACC_ATOL, ACC_RTOL);
    compare("  target_logit (exact)", f32_down(dtl, T), tl, T, 0, 0);
    PX_OK_OR_FAIL(f32 ? px_cuda_xent_loss_fwd_f32(dloss, dmx, dse, dtl, T, 0, &perr)
                      : px_cuda_xent_loss_fwd(dloss, dmx, dse, dtl, T, 0, &perr));
    compare("  loss", f32_down(dloss, T), loss, T, ACC_ATOL, ACC_RTOL);

    float *dl = malloc((size_t)(T * Vl) * 4);
    px_cpu_xent_bwd(dl, logits, mx, se, tg, 1.0f / (float)T, T, Vl, v0);
    /* in place over the logits, as the header allows */
    PX_OK_OR_FAIL(f32 ? px_cuda_xent_bwd_f32(dlog.p, dlog.p, dmx, dse, dtg, 1.0f / (float)T, T, Vl,
                                             v0, 0, &perr)
                      : px_cuda_xent_bwd(dlog.p, dlog.p, dmx, dse, dtg, 1.0f / (float)T, T, Vl,
                                         v0, 0, &perr));
    label(l, sizeof l, "xent_bwd (in place)", f32);
    compare(l, dten_down(dlog), dl, T * Vl, TOL_A(f32), TOL_R(f32));
}

static void test_adamw(bool f32)
{
    if (f32)
        return; /* AdamW is fp32 in both paths; run it once */
    int64_t n = 1000, step = 3;
    float *p = rand_vec(n, -1, 1), *g = rand_vec(n, -1, 1), *m = rand_vec(n, -0.1f, 0.1f),
          *v = rand_vec(n, 0, 0.01f);
    float *dp = f32_up(p, n), *dg = f32_up(g, n), *dm = f32_up(m, n), *dv = f32_up(v, n);
    dten pb = dten_up(rand_vec(n, 0, 1), n, false);
    px_cpu_adamw_step(p, g, m, v, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, step);
    PX_OK_OR_FAIL(px_cuda_adamw_step(dp, dg, dm, dv, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, step,
                                     pb.p, 0, &perr));
    compare("adamw param (fp32 master)", f32_down(dp, n), p, n, 1e-6, 1e-5);
    compare("  m", f32_down(dm, n), m, n, 1e-6, 1e-5);
    compare("  v", f32_down(dv, n), v, n, 1e-6, 1e-5);
    float *pr = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++)
        pr[i] = round_bf16(p[i]);
    compare("  bf16 copy of the weights", dten_down(pb), pr, n, 1e-2, 1e-2);
}

static void test_alloc(bool f32)
{
    if (f32)
        return;
    px_cuda_alloc *a = NULL;
    PX_OK_OR_FAIL(px_cuda_alloc_new(0, &a, &perr));
    if (!a)
        return;
    void *p[300];
    int64_t want = 0, peak = 0;
    for (int i = 0; i < 300; i++) { /* > the table's first capacity / 2: it grows */
        int64_t bytes = 1000 + (int64_t)(rng_next() % 100000);
        PX_OK_OR_FAIL(px_cuda_malloc(a, bytes, &p[i], &perr));
        want += bytes;
        peak = want;
    }
    CHECK(px_cuda_alloc_current_bytes(a) == want);
    for (int i = 0; i < 300; i += 2) { /* free every other block, by address only */
        PX_OK_OR_FAIL(px_cuda_free(a, p[i], &perr));
        p[i] = NULL;
    }
    CHECK(px_cuda_alloc_current_bytes(a) < want);
    CHECK(px_cuda_alloc_peak_bytes(a) == peak);
    CHECK(px_cuda_alloc_pool_peak_bytes(a) >= peak);
    px_error_clear(&perr);
    int stack_junk = 0;
    CHECK(px_cuda_free(a, &stack_junk, &perr) == PX_ERR_INTERNAL); /* not ours */
    px_cuda_alloc_reset_peak(a);
    CHECK(px_cuda_alloc_peak_bytes(a) == px_cuda_alloc_current_bytes(a));
    for (int i = 1; i < 300; i += 2)
        PX_OK_OR_FAIL(px_cuda_free(a, p[i], &perr));
    CHECK(px_cuda_alloc_current_bytes(a) == 0);
    printf("  allocator: peak %lld bytes tracked, pool high-water checked: %s\n",
           (long long)peak, px_test_failures ? "FAIL" : "ok");
    px_cuda_alloc_delete(a);
}

typedef struct {
    const char *name;
    void (*fn)(bool f32);
} group;

static const group groups[] = {
    {"cast", test_cast},           {"embedding", test_embedding}, {"positions", test_positions},
    {"rmsnorm", test_rmsnorm},     {"layernorm", test_layernorm}, {"matmul", test_matmul},
    {"bias_residual", test_bias_residual}, {"rope", test_rope},  {"attention", test_attention},
    {"mlp", test_mlp},             {"xent", test_xent},           {"adamw", test_adamw},
    {"alloc", test_alloc},
};

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "all";
    int n_groups = (int)(sizeof groups / sizeof groups[0]), found = 0;
    char name[64];
    snprintf(name, sizeof name, "gpu kernels: %s", which);
    require_gpu(name);
    test_seed(name);
    for (int i = 0; i < n_groups; i++) {
        if (strcmp(which, "all") != 0 && strcmp(which, groups[i].name) != 0)
            continue;
        found = 1;
        groups[i].fn(false);
        groups[i].fn(true);
    }
    if (!found) {
        fprintf(stderr, "unknown group '%s'; groups:", which);
        for (int i = 0; i < n_groups; i++)
            fprintf(stderr, " %s", groups[i].name);
        fprintf(stderr, " all\n");
        return 2;
    }
    return px_test_result(name);
}
