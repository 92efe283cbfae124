/* px_calib_gemm.c — the GEMM-by-shape sweep (see px_calib_gemm.h). */
#include "px_calib_gemm.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

int px_calib_gemm_dims(bool quick, int64_t *dims, int max)
{
    int64_t top = quick ? 1024 : 4096;
    int n = 0;
    for (int64_t d = 16; d <= top && n < max; d *= 4)
        dims[n++] = d;
    return n;
}

int px_calib_gemm_token_dims(bool quick, int64_t *dims, int max)
{
    int64_t top = quick ? 1024 : 4096;
    int n = 0;
    for (int64_t d = 16; d <= top && n < max; d *= 4) {
        /* quick: 512 as well — the CPU executor's token counts (b·s/cp,
         * 256..1024) straddle the per-core L2 there, where the rate bends
         * more than one interpolation over a factor of 4 follows */
        if (quick && d == 1024 && n < max)
            dims[n++] = 512;
        if (n < max)
            dims[n++] = d;
    }
    return n;
}

static void gemm_call(char ta, char tb, int m, int n, int k, const float *a,
                      const float *b, float *c)
{
    /* Row-major: A is m x k (NoTrans) or stored k x m (Trans); B is k x n or
     * stored n x k. */
    int lda = ta == 'N' ? k : m;
    int ldb = tb == 'N' ? n : k;
    cblas_sgemm(CblasRowMajor, ta == 'N' ? CblasNoTrans : CblasTrans,
                tb == 'N' ? CblasNoTrans : CblasTrans, m, n, k, 1.0f, a, lda, b, ldb,
                0.0f, c, n);
}

double px_calib_gemm_time_one(const px_calib_opts *o, char ta, char tb, int64_t m,
                              int64_t n, int64_t k, const float *a, const float *b,
                              float *c)
{
    double flop = 2.0 * (double)m * (double)n * (double)k;
    px_calib_sync(o);
    /* The first call warms caches and the BLAS's buffers and tells how many
     * calls fill the window. */
    double t0 = px_calib_work_s(o);
    gemm_call(ta, tb, (int)m, (int)n, (int)k, a, b, c);
    double first = px_calib_work_s(o) - t0;
    double best = first;
    if (first >= o->min_time_s) {
        /* Big shapes: one more call, keep the faster (an interruption by
         * another process only ever makes a call slower); --quick keeps the
         * first when the thread's CPU clock times it (one BLAS thread),
         * which an interruption does not advance */
        if (o->quick && o->blas_threads == 1)
            return flop / best;
        t0 = px_calib_work_s(o);
        gemm_call(ta, tb, (int)m, (int)n, (int)k, a, b, c);
        best = fmin(best, px_calib_work_s(o) - t0);
        return flop / best;
    }
    /* Small shapes: three batches filling the window, the fastest batch's
     * mean per call. */
    double per_batch_s = o->min_time_s / 3.0;
    long reps = (long)ceil(per_batch_s / fmax(first, 1e-9));
    if (reps < 1)
        reps = 1;
    for (int batch = 0; batch < 3; batch++) {
        t0 = px_calib_work_s(o);
        for (long r = 0; r < reps; r++)
            gemm_call(ta, tb, (int)m, (int)n, (int)k, a, b, c);
        best = fmin(best, (px_calib_work_s(o) - t0) / (double)reps);
    }
    return flop / best;
}

px_status px_calib_gemm_run(const px_calib_opts *o, px_gemm_point *pts, int max_pts,
                            int *n_pts, px_error *err)
{
    int64_t dims[8], mdims[8];
    int nd = px_calib_gemm_dims(o->quick, dims, 8);
    int nm = px_calib_gemm_token_dims(o->quick, mdims, 8); /* m: the tokens */
    int n_tall = o->quick ? 4 : 0; /* quick: m = 4096 at n, k in {256, 1024} */
    if (nm * nd * nd + n_tall > max_pts)
        return PX_FAIL(err, PX_ERR_INTERNAL, "gemm sweep: %d points do not fit in %d",
                       nm * nd * nd + n_tall, max_pts);
    int threads = px_calib_set_blas_threads(o->blas_threads);
    int64_t top = dims[nd - 1];
    size_t elems = (size_t)(top * top);
    if (n_tall && elems < (size_t)PX_CALIB_GEMM_TALL_M * 1024)
        elems = (size_t)PX_CALIB_GEMM_TALL_M * 1024;
    float *a = malloc(elems * sizeof *a);
    float *b = malloc(elems * sizeof *b);
    float *c = malloc(elems * sizeof *c);
    if (!a || !b || !c) {
        free(a);
        free(b);
        free(c);
        return PX_FAIL(err, PX_ERR_NOMEM, "gemm sweep: cannot allocate 3 x %zu floats",
                       elems);
    }
    /* Non-zero, non-denormal data: some BLAS kernels and CPUs slow down on
     * denormals, none on zeros — either would misrepresent training data. */
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < elems; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        a[i] = (float)(x % 2001u) * 1e-3f - 1.0f;
        b[i] = (float)((x >> 11) % 2001u) * 1e-3f - 1.0f;
        c[i] = 0.0f;
    }
    px_calib_say(o, "gemm: %d shapes x 3 forms (NN, NT, TN), dims %lld..%lld, "
                 "%d BLAS thread(s)", nm * nd * nd, (long long)dims[0], (long long)top,
                 threads);
    static const char forms[3][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}};
    int np = 0;
    double t_start = px_calib_now_s();
    for (int im = 0; im < nm; im++) {
        double slice_best = 0.0, slice_worst = INFINITY;
        for (int in = 0; in < nd; in++) {
            for (int ik = 0; ik < nd; ik++) {
                double inv_sum = 0.0;
                for (int f = 0; f < 3; f++) {
                    double fl = px_calib_gemm_time_one(o, forms[f][0], forms[f][1], mdims[im],
                                                       dims[in], dims[ik], a, b, c);
                    inv_sum += 1.0 / fl;
                }
                px_gemm_point *p = &pts[np++];
                p->m = mdims[im];
                p->n = dims[in];
                p->k = dims[ik];
                p->flops = 3.0 / inv_sum;
                slice_best = fmax(slice_best, p->flops);
                slice_worst = fmin(slice_worst, p->flops);
            }
        }
        px_calib_say(o, "gemm: m=%-5lld done (%d/%d shapes): %.1f..%.1f GFLOP/s, %.1f s",
                     (long long)mdims[im], np, nm * nd * nd, slice_worst / 1e9,
                     slice_best / 1e9, px_calib_now_s() - t_start);
    }
    /* --quick stops the lattice at m = 1024, where BLAS still keeps its
     * rate; at the 4096 tokens of a micro-batch of 16 sequences of 256 it
     * runs 15-30 % slower (the output no longer fits the shared cache):
     * four tall shapes over the widths a layer uses carry the cost model
     * there instead of an extrapolation from m = 1024 */
    static const int64_t tall_nk[2] = {256, 1024};
    for (int t = 0; t < n_tall; t++) {
        double inv_sum = 0.0;
        int64_t n = tall_nk[t / 2], k = tall_nk[t % 2];
        for (int f = 0; f < 3; f++)
            inv_sum += 1.0 / px_calib_gemm_time_one(o, forms[f][0], forms[f][1],
                                                    PX_CALIB_GEMM_TALL_M, n, k, a, b, c);
        pts[np++] = (px_gemm_point){PX_CALIB_GEMM_TALL_M, n, k, 3.0 / inv_sum};
    }
    if (n_tall)
        px_calib_say(o, "gemm: m=%d at n, k in {256, 1024} done (%d shapes), %.1f s",
                     PX_CALIB_GEMM_TALL_M, np, px_calib_now_s() - t_start);
    free(a);
    free(b);
    free(c);
    *n_pts = np;
    return PX_OK;
}
