/* gpu_util.h — helpers shared by the GPU tests: a seeded generator, bf16
 * rounding on the host, device tensors that hold either bf16 or fp32 and
 * come back as fp32, and the |ref - got| <= atol + rtol |ref| comparison.
 * (Test code: static functions in one header, included by one test each.) */
#ifndef GPU_UTIL_H
#define GPU_UTIL_H

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "px_cuda_status.h"
#include "px_kernels_cuda.h"
#include "px_test.h"

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static float rng_uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)((rng_next() >> 40) * (1.0 / 16777216.0));
}

/* The seed: PX_TEST_SEED if set (to replay a failure), else from the clock;
 * printed either way. */
static uint64_t test_seed(const char *name)
{
    const char *env = getenv("PX_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)clock();
    rng_state = seed;
    printf("# %s: seed %" PRIu64 " (replay with PX_TEST_SEED=%" PRIu64 ")\n", name, seed, seed);
    return seed;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN stays NaN */
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float round_bf16(float f) { return bf16_to_f32(f32_to_bf16(f)); }

/* n random values in [lo, hi) (host, malloc'd). */
static float *rand_vec(int64_t n, float lo, float hi)
{
    float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        x[i] = rng_uniform(lo, hi);
    return x;
}

static float *copy_vec(const float *x, int64_t n)
{
    float *y = malloc((size_t)(n > 0 ? n : 1) * sizeof *y);
    memcpy(y, x, (size_t)n * sizeof *y);
    return y;
}

/* A device tensor of n elements stored as bf16 (f32 == false) or fp32. */
typedef struct {
    void *p;
    int64_t n;
    bool f32;
} dten;

static int cuda_fail(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    exit(1); /* test program: a broken device is a failed test */
}

/* Uploads host x; for bf16 storage, x itself is rounded to bf16 first so the
 * CPU reference computes on exactly the values the GPU sees. */
static dten dten_up(float *x, int64_t n, bool f32)
{
    dten t = {NULL, n, f32};
    size_t bytes = (size_t)(n > 0 ? n : 1) * (f32 ? 4 : 2);
    cuda_fail(cudaMalloc(&t.p, bytes), "cudaMalloc");
    if (f32) {
        cuda_fail(cudaMemcpy(t.p, x, (size_t)n * 4, cudaMemcpyHostToDevice), "upload");
    } else {
        uint16_t *h = malloc(bytes);
        for (int64_t i = 0; i < n; i++) {
            h[i] = f32_to_bf16(x[i]);
            x[i] = bf16_to_f32(h[i]);
        }
        cuda_fail(cudaMemcpy(t.p, h, (size_t)n * 2, cudaMemcpyHostToDevice), "upload");
        free(h);
    }
    return t;
}

/* fp32 device copy of host data (parameter gradients, statistics). */
static float *f32_up(const float *x, int64_t n)
{
    float *p = NULL;
    cuda_fail(cudaMalloc((void **)&p, (size_t)(n > 0 ? n : 1) * 4), "cudaMalloc");
    cuda_fail(cudaMemcpy(p, x, (size_t)n * 4, cudaMemcpyHostToDevice), "upload");
    return p;
}

static float *f32_down(const float *p, int64_t n)
{
    float *x = malloc((size_t)(n > 0 ? n : 1) * 4);
    cuda_fail(cudaDeviceSynchronize(), "kernel execution");
    cuda_fail(cudaMemcpy(x, p, (size_t)n * 4, cudaMemcpyDeviceToHost), "download");
    return x;
}

static float *dten_down(dten t)
{
    if (t.f32)
        return f32_down(t.p, t.n);
    uint16_t *h = malloc((size_t)(t.n > 0 ? t.n : 1) * 2);
    float *x = malloc((size_t)(t.n > 0 ? t.n : 1) * 4);
    cuda_fail(cudaDeviceSynchronize(), "kernel execution");
    cuda_fail(cudaMemcpy(h, t.p, (size_t)t.n * 2, cudaMemcpyDeviceToHost), "download");
    for (int64_t i = 0; i < t.n; i++)
        x[i] = bf16_to_f32(h[i]);
    free(h);
    return x;
}

static int32_t *i32_up(const int32_t *x, int64_t n)
{
    int32_t *p = NULL;
    cuda_fail(cudaMalloc((void **)&p, (size_t)(n > 0 ? n : 1) * 4), "cudaMalloc");
    cuda_fail(cudaMemcpy(p, x, (size_t)n * 4, cudaMemcpyHostToDevice), "upload");
    return p;
}

/* Compares got against ref with atol = atol_frac * max|ref| (the scale of the
 * tensor) and rtol; prints the worst element and the count of misses. */
static void compare(const char *what, const float *got, const float *ref, int64_t n,
                    double atol_frac, double rtol)
{
    double scale = 0.0;
    for (int64_t i = 0; i < n; i++)
        scale = fmax(scale, fabs((double)ref[i]));
    double atol = atol_frac * (scale > 0 ? scale : 1.0);
    int64_t bad = 0, worst = 0;
    double worst_excess = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        double excess = d - (atol + rtol * fabs((double)ref[i]));
        if (!(excess <= 0)) /* NaN counts as a miss */
            bad++;
        if (excess > worst_excess || isnan(excess)) {
            worst_excess = isnan(excess) ? INFINITY : excess;
            worst = i;
        }
    }
    printf("  %-34s n=%-9" PRId64 " max|ref|=%-10.4g worst: ref %.6g got %.6g  %s\n", what, n,
           scale, n ? ref[worst] : 0.0, n ? got[worst] : 0.0, bad ? "FAIL" : "ok");
    CHECK_MSG(bad == 0, "%s: %" PRId64 " of %" PRId64 " elements outside %.3g + %.3g|ref|",
              what, bad, n, atol, rtol);
}

/* Exit 77 when no device can run the test. */
static void require_gpu(const char *name)
{
    int n = px_cuda_device_count();
    if (n <= 0) {
        printf("# %s: no CUDA device (cudaGetDeviceCount gave 0 or failed): skipped\n", name);
        exit(77);
    }
}

/* The error record every call in a test fills (pass &perr). */
static px_error perr;

/* A px_status check: prints the error record and fails the test. */
#define PX_OK_OR_FAIL(call)                                                                \
    do {                                                                                   \
        px_error_clear(&perr);                                                             \
        px_status s_ = (call);                                                             \
        if (s_ != PX_OK) {                                                                 \
            char b_[1600];                                                                 \
            px_error_format(&perr, b_, sizeof b_);                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, b_);     \
        }                                                                                  \
        CHECK(s_ == PX_OK);                                                                \
    } while (0)

#endif
