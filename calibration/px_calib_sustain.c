/* px_calib_sustain.c — the sustained fraction of the compute rates
 * (px_calib_sustain.h). */
#include "px_calib_sustain.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* The shape: a layer GEMM of the executor's size class (tokens x hidden x
 * ffn of the small models it runs), large enough to be compute-bound. */
enum { SUSTAIN_M = 512, SUSTAIN_N = 1024, SUSTAIN_K = 512 };
/* Operand sets: 8 x (A + B + C) = 8 x 6 MiB, beyond a core's L2 and most
 * last-level caches (not a server L3 of hundreds of MiB). */
enum { SUSTAIN_SETS = 8 };

double px_calib_sustain_window_s(bool quick)
{
    return quick ? 1.0 : 4.0;
}

static void gemm(const float *a, const float *b, float *c)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, SUSTAIN_M, SUSTAIN_N, SUSTAIN_K, 1.0f,
                a, SUSTAIN_K, b, SUSTAIN_K, 0.0f, c, SUSTAIN_N);
}

/* The median of n values (sorted in place). */
static double median_of(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

px_status px_calib_sustain_run(const px_calib_opts *o, double *frac, double *sync_wait_s,
                               double *sync_interval_s, px_error *err)
{
    const size_t na = (size_t)SUSTAIN_M * SUSTAIN_K, nb = (size_t)SUSTAIN_N * SUSTAIN_K,
                 nc = (size_t)SUSTAIN_M * SUSTAIN_N, per = na + nb + nc;
    float *buf = malloc(per * SUSTAIN_SETS * sizeof *buf);
    if (!buf)
        return PX_FAIL(err, PX_ERR_NOMEM, "sustained rate: cannot allocate %zu floats",
                       per * SUSTAIN_SETS);
    uint32_t x = 2463534242u; /* non-zero, non-denormal data, as the GEMM sweep */
    for (size_t i = 0; i < per * SUSTAIN_SETS; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        buf[i] = (float)(x % 2001u) * 1e-3f - 1.0f;
    }
    /* the best single call, operands warm (what the sweep reports) */
    px_calib_sync(o);
    double best = INFINITY;
    for (int r = 0; r < 5; r++) {
        double t0 = px_calib_work_s(o);
        gemm(buf, buf + na, buf + na + nb);
        best = fmin(best, px_calib_work_s(o) - t0);
    }
    /* the stream: one call after another on the next operand set, in
     * STREAM_PARTS parts; the rate is the median part's, as the executor's
     * step time is the median of its steps (a burst of another process's
     * memory traffic in one part does not move it) */
    enum { STREAM_PARTS = 5 };
    px_calib_sync(o);
    double window = px_calib_sustain_window_s(o->quick);
    long calls = 0;
    double part_mean[STREAM_PARTS];
    double t0 = px_calib_work_s(o), t = t0;
    for (int part = 0; part < STREAM_PARTS; part++) {
        double p0 = t;
        long n = 0;
        while (t - p0 < window / STREAM_PARTS || n == 0) {
            float *s = buf + per * (size_t)(calls % SUSTAIN_SETS);
            gemm(s, s + na, s + na + nb);
            calls++;
            n++;
            t = px_calib_work_s(o);
        }
        part_mean[part] = (t - p0) / (double)n;
    }
    double mean = median_of(part_mean, STREAM_PARTS);
    *frac = fmin(1.0, best / mean);
    px_calib_say(o, "sustained: %ld GEMMs %dx%dx%d in %.2f s, median part %.1f GFLOP/s against the "
                 "best call's %.1f: sustained_frac %.3f", calls, SUSTAIN_M, SUSTAIN_N, SUSTAIN_K,
                 t - t0, 2.0 * SUSTAIN_M * SUSTAIN_N * SUSTAIN_K / mean / 1e9,
                 2.0 * SUSTAIN_M * SUSTAIN_N * SUSTAIN_K / best / 1e9, *frac);
    /* The wait at a synchronisation: the same GEMMs, each followed by the
     * barrier every rank reaches after its own call (o->sync; none without
     * MPI).  The barrier's fastest pass is its own cost; the mean beyond it
     * is the wait for the rank that an interruption held back. */
    *sync_wait_s = 0.0;
    *sync_interval_s = mean; /* a synchronisation after each GEMM of the stream */
    if (o->sync) {
        double wait = 0.0, fastest = INFINITY;
        long n = 0;
        /* The same number of passes on every rank, fixed (no rank's own
         * clock or rate decides it): a stop each rank decided by its own
         * clock left one rank in a barrier the others never entered once a
         * busy machine slowed them unequally.  At ~17 ms a GEMM (CPU) about
         * half the stream's window. */
        const long passes = o->quick ? 32 : 96;
        px_calib_sync(o);
        for (n = 0; n < passes; n++) {
            float *s = buf + per * (size_t)(n % SUSTAIN_SETS);
            gemm(s, s + na, s + na + nb);
            double b0 = px_calib_now_s();
            px_calib_sync(o);
            t = px_calib_now_s();
            wait += t - b0;
            fastest = fmin(fastest, t - b0);
        }
        *sync_wait_s = fmax(0.0, wait / (double)n - fastest);
        px_calib_say(o, "sustained: %ld synchronisations after a GEMM each, mean wait %.0f us "
                     "beyond the fastest (%.0f us): sync_wait_s", n, 1e6 * *sync_wait_s,
                     1e6 * fastest);
    }
    free(buf);
    return PX_OK;
}
