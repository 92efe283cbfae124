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
    snprintf(buf, n, "%.80s [%s]", what, kind(f32)); /* what: a short test name */
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

/* Plain RoPE (Llama 2's theta), Llama 3's (theta 500000, llama3 scaling) and
 * DeepSeek's interleaved pairs: the CUDA twin against the CPU kernel. */
static void test_rope_case(bool f32, const px_rope *rope, const char *what)
{
    int64_t S = 17, B = 2, NH = 4, NKV = 2, HD = 64, pos0 = 3000, n = S * B * (NH + 2 * NKV) * HD;
    float *x = rand_vec(n, -1, 1);
    dten dx = dten_up(x, n, f32);
    px_cpu_rope_fwd(x, S, B, NH, NKV, HD, pos0, rope);
    PX_OK_OR_FAIL(f32 ? px_cuda_rope_fwd_f32(dx.p, S, B, NH, NKV, HD, pos0, rope, 0, &perr)
                      : px_cuda_rope_fwd(dx.p, S, B, NH, NKV, HD, pos0, rope, 0, &perr));
    char l[96], t[96];
    snprintf(t, sizeof t, "rope_fwd %s (v heads untouched)", what);
    label(l, sizeof l, t, f32);
    compare(l, dten_down(dx), x, n, TOL_A(f32), TOL_R(f32));
    float *g = rand_vec(n, -1, 1);
    dten dg = dten_up(g, n, f32);
    px_cpu_rope_bwd(g, S, B, NH, NKV, HD, pos0, rope);
    PX_OK_OR_FAIL(f32 ? px_cuda_rope_bwd_f32(dg.p, S, B, NH, NKV, HD, pos0, rope, 0, &perr)
                      : px_cuda_rope_bwd(dg.p, S, B, NH, NKV, HD, pos0, rope, 0, &perr));
    snprintf(t, sizeof t, "rope_bwd %s", what);
    label(l, sizeof l, t, f32);
    compare(l, dten_down(dg), g, n, TOL_A(f32), TOL_R(f32));
}

static void test_rope(bool f32)
{
    px_rope plain = px_rope_plain(10000.0);
    test_rope_case(f32, &plain, "theta 1e4");
    px_rope llama3 = px_rope_plain(500000.0);
    llama3.scale = PX_ROPE_SCALE_LLAMA3;
    llama3.factor = 8.0;
    llama3.low_freq_factor = 1.0;
    llama3.high_freq_factor = 4.0;
    llama3.original_max_positions = 8192.0;
    test_rope_case(f32, &llama3, "llama3");
    px_rope inter = px_rope_plain(10000.0);
    inter.interleaved = 1;
    test_rope_case(f32, &inter, "interleaved");
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

/* Context parallelism: rank `rank` of cp holds chunks rank and 2 cp - 1 - rank
 * of the 2 cp chunks of the sequence (the executor's layout) as its query
 * rows, against all S kv rows; px_cuda_attention_kv_* against the CPU twin.
 * dq and dkv start random, so the zeroed heads are checked too. */
static void test_attention_kv_case(bool f32, int64_t S, int cp, int rank, int64_t B, int64_t NH,
                                   int64_t NKV, int64_t HD)
{
    const int64_t chunk = S / (2 * cp), Sq = 2 * chunk, W = (NH + 2 * NKV) * HD;
    const int64_t nkv = S * B * W, nq = Sq * B * W, no = Sq * B * NH * HD, nl = B * NH * Sq;
    int32_t *qpos = malloc((size_t)Sq * 4);
    for (int64_t i = 0; i < chunk; i++) {
        qpos[i] = (int32_t)(rank * chunk + i);
        qpos[chunk + i] = (int32_t)((2 * cp - 1 - rank) * chunk + i);
    }
    float *kv = rand_vec(nkv, -2, 2), *q = malloc((size_t)nq * 4);
    dten dkv_in = dten_up(kv, nkv, f32);
    for (int64_t i = 0; i < nkv; i++)
        kv[i] = round_bf16(kv[i]); /* the tensor cores see bf16 either way */
    for (int64_t r = 0; r < Sq * B; r++)
        memcpy(q + r * W, kv + ((int64_t)qpos[r / B] * B + r % B) * W, (size_t)W * 4);
    dten dq_in = dten_up(q, nq, f32);
    int32_t *dpos = i32_up(qpos, Sq);

    float *out = malloc((size_t)no * 4), *lse = malloc((size_t)nl * 4);
    px_cpu_attention_kv_fwd(out, lse, q, qpos, kv, Sq, S, B, NH, NKV, HD);
    dten dout = dten_up(rand_vec(no, 0, 1), no, f32);
    float *dlse = f32_up(rand_vec(nl, 0, 1), nl); /* overwritten */
    PX_OK_OR_FAIL(f32 ? px_cuda_attention_kv_fwd_f32(dout.p, dlse, dq_in.p, dpos, dkv_in.p, Sq,
                                                     S, B, NH, NKV, HD, 0, &perr)
                      : px_cuda_attention_kv_fwd(dout.p, dlse, dq_in.p, dpos, dkv_in.p, Sq, S, B,
                                                 NH, NKV, HD, 0, &perr));
    char l[112];
    snprintf(l, sizeof l, "attention_kv_fwd S=%lld cp=%d r=%d HD=%lld %lld/%lld [%s]",
             (long long)S, cp, rank, (long long)HD, (long long)NH, (long long)NKV, kind(f32));
    compare(l, dten_down(dout), out, no, 2e-2, 2e-2);
    compare("  lse", f32_down(dlse, nl), lse, nl, 2e-3, 2e-3);

    float *g = rand_vec(no, -1, 1), *dq = malloc((size_t)nq * 4), *dkv = malloc((size_t)nkv * 4);
    dten dg = dten_up(g, no, f32), dref_out = dten_up(out, no, f32); /* rounds out for bf16 */
    float *dlse2 = f32_up(lse, nl);
    px_cpu_attention_kv_bwd(dq, dkv, g, out, lse, q, qpos, kv, Sq, S, B, NH, NKV, HD);
    dten ddq = dten_up(rand_vec(nq, 0, 1), nq, f32), ddkv = dten_up(rand_vec(nkv, 0, 1), nkv, f32);
    PX_OK_OR_FAIL(f32 ? px_cuda_attention_kv_bwd_f32(ddq.p, ddkv.p, dg.p, dref_out.p, dlse2,
                                                     dq_in.p, dpos, dkv_in.p, Sq, S, B, NH, NKV,
                                                     HD, 0, &perr)
                      : px_cuda_attention_kv_bwd(ddq.p, ddkv.p, dg.p, dref_out.p, dlse2, dq_in.p,
                                                 dpos, dkv_in.p, Sq, S, B, NH, NKV, HD, 0, &perr));
    float *got_q = dten_down(ddq), *got_kv = dten_down(ddkv);
    /* each head group apart (their scales differ); the zeroed ones must be 0 */
    const size_t big = (size_t)(nq > nkv ? nq : nkv) * 4;
    float *gs = malloc(big), *rs = malloc(big);
    const char *part[6] = {"  dq: q heads", "  dq: k heads (0)", "  dq: v heads (0)",
                           "  dkv: q heads (0)", "  dkv: k heads", "  dkv: v heads"};
    const int64_t c0[3] = {0, NH * HD, (NH + NKV) * HD}, c1[3] = {NH * HD, (NH + NKV) * HD, W};
    for (int p = 0; p < 6; p++) {
        const float *got = p < 3 ? got_q : got_kv, *ref = p < 3 ? dq : dkv;
        const int64_t rows = (p < 3 ? Sq : S) * B;
        int64_t m = 0;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = c0[p % 3]; c < c1[p % 3]; c++) {
                gs[m] = got[r * W + c];
                rs[m] = ref[r * W + c];
                m++;
            }
        compare(part[p], gs, rs, m, 3e-2, 3e-2);
    }
}

static void test_attention_kv(bool f32)
{
    test_attention_kv_case(f32, 200, 2, 0, 2, 4, 2, 64);  /* GQA, chunks of 50: ragged tiles */
    test_attention_kv_case(f32, 512, 4, 3, 1, 2, 2, 128); /* the middle chunks, HD 128 */
    test_attention_kv_case(f32, 384, 3, 0, 1, 8, 1, 32);  /* MQA: first and last chunk */
    test_attention_kv_case(f32, 140, 1, 0, 3, 2, 1, 16);  /* cp 1: plain causal attention */

    /* the positions are required */
    float *junk = NULL;
    cuda_fail(cudaMalloc((void **)&junk, 4096), "cudaMalloc");
    px_error_clear(&perr);
    CHECK(px_cuda_attention_kv_fwd_f32(junk, junk, junk, NULL, junk, 4, 4, 1, 1, 1, 64, 0,
                                       &perr) == PX_ERR_INVALID);
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

/* ---- mixture of experts ------------------------------------------------------
 * Router (ties between experts every third token, E above and below a warp),
 * its backward, then the executor's dispatch of the chosen experts (rows by
 * expert, slots t k + j): permute plain and gated, unpermute in its gather
 * form (gated, and with slots but no gate) and its atomic form, gate
 * gradient.  The gather is run twice and must give the same bits. */
static int32_t *i32_down(const int32_t *p, int64_t n)
{
    int32_t *x = malloc((size_t)(n > 0 ? n : 1) * 4);
    cuda_fail(cudaDeviceSynchronize(), "kernel execution");
    cuda_fail(cudaMemcpy(x, p, (size_t)n * 4, cudaMemcpyDeviceToHost), "download");
    return x;
}

static void moe_dispatch(const int32_t *idx, int64_t T, int64_t E, int64_t k, int32_t *rows,
                         int32_t *slots)
{
    int64_t *pos = calloc((size_t)E + 1, sizeof *pos);
    for (int64_t i = 0; i < T * k; i++)
        pos[idx[i] + 1]++;
    for (int64_t e = 0; e < E; e++)
        pos[e + 1] += pos[e];
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < k; j++) {
            int64_t a = pos[idx[t * k + j]]++;
            rows[a] = (int32_t)t;
            slots[a] = (int32_t)(t * k + j);
        }
    free(pos);
}

static void test_moe_shape(bool f32, int64_t T, int64_t E, int64_t k, int64_t C,
                           const px_router *r)
{
    char l[96];
    float *logits = rand_vec(T * E, -3, 3);
    for (int64_t t = 0; t < T; t += 3) { /* three experts share the maximum */
        logits[t * E + t % E] = 3.5f;
        logits[t * E + (t * 7 + 3) % E] = 3.5f;
        logits[t * E + (t * 5 + 1) % E] = 3.5f;
    }
    dten dlog = dten_up(logits, T * E, f32); /* rounds logits for the CPU too */
    float *probs = malloc((size_t)(T * E) * 4), *gate = malloc((size_t)(T * k) * 4);
    int32_t *idx = malloc((size_t)(T * k) * 4);
    px_cpu_moe_router_fwd(probs, idx, gate, logits, T, E, k, r);
    float *dprobs = f32_up(logits, T * E), *dgate = f32_up(logits, T * k);
    int32_t *didx = i32_up(idx, T * k);
    cuda_fail(cudaMemset(didx, 0xff, (size_t)(T * k) * 4), "cudaMemset");
    PX_OK_OR_FAIL(f32 ? px_cuda_moe_router_fwd_f32(dprobs, didx, dgate, dlog.p, T, E, k, r, 0, &perr)
                      : px_cuda_moe_router_fwd(dprobs, didx, dgate, dlog.p, T, E, k, r, 0, &perr));
    snprintf(l, sizeof l, "moe_router_fwd E=%lld k=%lld %s%s x%g [%s]", (long long)E,
             (long long)k, r->score == PX_ROUTER_SIGMOID ? "sigmoid" : "softmax",
             r->renorm ? " renorm" : "", (double)r->scale, kind(f32));
    compare(l, f32_down(dprobs, T * E), probs, T * E, ACC_ATOL, ACC_RTOL);
    int32_t *gidx = i32_down(didx, T * k);
    float *fi = malloc((size_t)(T * k) * 4), *fg = malloc((size_t)(T * k) * 4);
    for (int64_t i = 0; i < T * k; i++) {
        fi[i] = (float)idx[i];
        fg[i] = (float)gidx[i];
    }
    compare("  idx (exact, ties to the lower index)", fg, fi, T * k, 0, 0);
    compare("  gate (fp32)", f32_down(dgate, T * k), gate, T * k, ACC_ATOL, ACC_RTOL);

    float *dg = rand_vec(T * k, -1, 1), *dl = malloc((size_t)(T * E) * 4);
    float *ddg = f32_up(dg, T * k);
    px_cpu_moe_router_bwd(dl, probs, idx, dg, T, E, k, r);
    float *dprobs_ref = f32_up(probs, T * E);
    dten ddl = dten_up(rand_vec(T * E, -1, 1), T * E, f32);
    PX_OK_OR_FAIL(f32 ? px_cuda_moe_router_bwd_f32(ddl.p, dprobs_ref, didx, ddg, T, E, k, r, 0, &perr)
                      : px_cuda_moe_router_bwd(ddl.p, dprobs_ref, didx, ddg, T, E, k, r, 0, &perr));
    label(l, sizeof l, "moe_router_bwd dlogits", f32);
    compare(l, dten_down(ddl), dl, T * E, TOL_A(f32), TOL_R(f32));

    /* the dispatch of the CPU's choice (equal to the GPU's, checked above) */
    int64_t n = T * k;
    int32_t *rows = malloc((size_t)n * 4), *slots = malloc((size_t)n * 4);
    moe_dispatch(idx, T, E, k, rows, slots);
    int32_t *drows = i32_up(rows, n), *dslots = i32_up(slots, n);
    float *x = rand_vec(T * C, -2, 2), *g = rand_vec(T * k, 0.05f, 1.0f);
    dten dx = dten_up(x, T * C, f32);
    float *dgt = f32_up(g, T * k);
    for (int scaled = 0; scaled < 2; scaled++) {
        float *ref = malloc((size_t)(n * C) * 4);
        px_cpu_moe_permute(ref, x, rows, scaled ? g : NULL, scaled ? slots : NULL, n, C);
        dten dout = dten_up(rand_vec(n * C, -1, 1), n * C, f32);
        PX_OK_OR_FAIL(f32 ? px_cuda_moe_permute_f32(dout.p, dx.p, drows, scaled ? dgt : NULL,
                                                    scaled ? dslots : NULL, n, C, 0, &perr)
                          : px_cuda_moe_permute(dout.p, dx.p, drows, scaled ? dgt : NULL,
                                                scaled ? dslots : NULL, n, C, 0, &perr));
        label(l, sizeof l, scaled ? "moe_permute x gate" : "moe_permute (exact)", f32);
        compare(l, dten_down(dout), ref, n * C, scaled ? TOL_A(f32) : 0, scaled ? TOL_R(f32) : 0);
    }

    float *y = rand_vec(n * C, -2, 2);
    dten dy = dten_up(y, n * C, f32);
    static const char *what[] = {"moe_unpermute gather x gate +=", "moe_unpermute gather +=",
                                 "moe_unpermute atomics +="};
    for (int mode = 0; mode < 3; mode++) {
        float *out = rand_vec(T * C, -1, 1);
        dten dout = dten_up(out, T * C, f32), dout2 = dten_up(copy_vec(out, T * C), T * C, f32);
        const float *cg = mode == 0 ? g : NULL;
        px_cpu_moe_unpermute(out, y, rows, cg, mode == 0 ? slots : NULL, n, C);
        float *dgp = mode == 0 ? dgt : NULL;
        int32_t *dsp = mode < 2 ? dslots : NULL;
        for (int rep = 0; rep < 2; rep++) {
            dten o = rep ? dout2 : dout;
            void *op = o.p;
            PX_OK_OR_FAIL(f32 ? px_cuda_moe_unpermute_f32(op, dy.p, drows, dgp, dsp, n, C, 0, &perr)
                              : px_cuda_moe_unpermute(op, dy.p, drows, dgp, dsp, n, C, 0, &perr));
        }
        float *got = dten_down(dout), *got2 = dten_down(dout2);
        double t = mode == 2 && !f32 ? 2 * BF_ATOL : TOL_A(f32);
        label(l, sizeof l, what[mode], f32);
        compare(l, got, out, T * C, t, t);
        if (mode < 2)
            CHECK_MSG(memcmp(got, got2, (size_t)(T * C) * 4) == 0,
                      "%s: two runs differ (the gather must be deterministic)", l);
    }

    float *dy2 = rand_vec(T * C, -1, 1), *dgr = rand_vec(T * k, -1, 1);
    dten ddy = dten_up(dy2, T * C, f32);
    float *ddgr = f32_up(dgr, T * k);
    px_cpu_moe_gate_bwd(dgr, dy2, y, rows, slots, n, C);
    PX_OK_OR_FAIL(f32 ? px_cuda_moe_gate_bwd_f32(ddgr, ddy.p, dy.p, drows, dslots, n, C, 0, &perr)
                      : px_cuda_moe_gate_bwd(ddgr, ddy.p, dy.p, drows, dslots, n, C, 0, &perr));
    label(l, sizeof l, "moe_gate_bwd dgate (fp32)", f32);
    compare(l, f32_down(ddgr, T * k), dgr, T * k, ACC_ATOL, ACC_RTOL);
}

static void test_moe(bool f32)
{
    px_router plain = px_router_softmax_topk(), mixtral = plain, sigmoid = plain;
    mixtral.renorm = 1; /* norm_topk_prob */
    sigmoid.score = PX_ROUTER_SIGMOID; /* DeepSeek-V3's, without its groups */
    sigmoid.renorm = 1;
    sigmoid.scale = 2.5f;
    test_moe_shape(f32, 301, 64, 6, 200, &plain); /* E above a warp, many tokens per block */
    test_moe_shape(f32, 257, 8, 2, 1024, &plain); /* Mixtral's top-2 of 8 */
    test_moe_shape(f32, 257, 8, 2, 64, &mixtral);
    test_moe_shape(f32, 301, 64, 6, 64, &sigmoid);
    if (f32)
        return;
    /* refused before touching the device */
    px_error_clear(&perr);
    CHECK(px_cuda_moe_router_fwd(NULL, NULL, NULL, NULL, 4, 16, 9, &plain, 0, &perr) ==
          PX_ERR_INVALID);
    CHECK(px_cuda_moe_router_fwd(NULL, NULL, NULL, NULL, 4, 4, 5, &plain, 0, &perr) ==
          PX_ERR_INVALID);
    CHECK(px_cuda_moe_router_bwd(NULL, NULL, NULL, NULL, 4, 16, 0, &plain, 0, &perr) ==
          PX_ERR_INVALID);
    px_router grouped = plain;
    grouped.n_group = 4;
    grouped.topk_group = 2;
    CHECK(px_cuda_moe_router_fwd(NULL, NULL, NULL, NULL, 4, 16, 2, &grouped, 0, &perr) ==
          PX_ERR_INVALID);
    float one = 1.0f;
    int32_t r0 = 0;
    CHECK(px_cuda_moe_unpermute(NULL, NULL, &r0, &one, NULL, 1, 8, 0, &perr) == PX_ERR_INVALID);
    CHECK(px_cuda_moe_gate_bwd(NULL, NULL, NULL, &r0, NULL, 1, 8, 0, &perr) == PX_ERR_INVALID);
    printf("  moe: k > %d, k > E, gate without slots refused: %s\n", PX_MOE_MAX_K,
           px_test_failures ? "FAIL" : "ok");
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
    {"alloc", test_alloc},         {"moe", test_moe},
    {"attention_kv", test_attention_kv},
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
