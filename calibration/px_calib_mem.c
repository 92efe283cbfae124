/* px_calib_mem.c — STREAM-like copy and triad (see px_calib_mem.h). */
#include "px_calib_mem.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

int64_t px_calib_mem_array_bytes(void)
{
    int64_t llc = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0)
        llc = l3;
#endif
    /* Virtual machines sometimes report a host-sized or bogus LLC: capping
     * at 128 MB keeps page-faulting the arrays from dominating the run. */
    int64_t bytes = 2 * llc;
    if (bytes < (int64_t)32 << 20)
        bytes = (int64_t)32 << 20;
    if (bytes > (int64_t)128 << 20)
        bytes = (int64_t)128 << 20;
    return bytes;
}

/* Kept out of line so the compiler cannot merge repetitions or drop them. */
__attribute__((noinline)) static void copy_kernel(float *restrict c,
                                                  const float *restrict a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        c[i] = a[i];
}

__attribute__((noinline)) static void triad_kernel(float *restrict a,
                                                   const float *restrict b,
                                                   const float *restrict c, float s,
                                                   size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

px_status px_calib_mem_run(const px_calib_opts *o, px_calib_mem_result *r, px_error *err)
{
    int64_t bytes = px_calib_mem_array_bytes();
    size_t n = (size_t)(bytes / (int64_t)sizeof(float));
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) {
        free(a);
        free(b);
        free(c);
        return PX_FAIL(err, PX_ERR_NOMEM, "memory bandwidth: cannot allocate 3 x %lld bytes",
                       (long long)bytes);
    }
    /* Touch every page first: first-touch page faults are not bandwidth. */
    for (size_t i = 0; i < n; i++) {
        a[i] = 1.0f;
        b[i] = 2.0f;
        c[i] = 0.5f;
    }
    px_calib_say(o, "memory: STREAM copy and triad over 3 x %.0f MB arrays",
                 (double)bytes / 1e6);
    int reps = o->quick ? 4 : 10;
    double best_copy = INFINITY, best_triad = INFINITY;
    for (int rep = 0; rep < reps; rep++) {
        px_calib_sync(o);
        double t0 = px_calib_work_s(o);
        copy_kernel(c, a, n);
        double t1 = px_calib_work_s(o);
        triad_kernel(a, b, c, 3.0f, n);
        double t2 = px_calib_work_s(o);
        best_copy = fmin(best_copy, t1 - t0);
        best_triad = fmin(best_triad, t2 - t1);
    }
    /* Keep the results observable so the loops are not optimised away. */
    volatile float sink = a[n / 2] + c[n / 3];
    (void)sink;
    free(a);
    free(b);
    free(c);
    r->array_bytes = bytes;
    r->copy_bw = 2.0 * (double)bytes / best_copy;
    r->triad_bw = 3.0 * (double)bytes / best_triad;
    px_calib_say(o, "memory: copy %.2f GB/s, triad %.2f GB/s", r->copy_bw / 1e9,
                 r->triad_bw / 1e9);
    return PX_OK;
}
