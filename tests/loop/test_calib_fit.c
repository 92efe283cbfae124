/* test_calib_fit.c — the fits that turn calibration timings into profile
 * numbers recover known parameters from synthetic measurements, and reject
 * data they cannot fit. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "px_calib_fit.h"
#include "px_calib_gemm.h"
#include "px_test.h"

/* Deterministic noise in [-amp, amp] (xorshift), seed printed on failure. */
static uint32_t rng_state;
static double noise(double amp)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return amp * (2.0 * (double)(rng_state % 100001u) / 100000.0 - 1.0);
}

static void test_lat_bw_exact(void)
{
    double lat = 3e-6, bw = 5e9, x[8], t[8];
    for (int i = 0; i < 8; i++) {
        x[i] = 4096.0 * pow(4.0, i);
        t[i] = lat + x[i] / bw;
    }
    double got_lat = 0, got_bw = 0;
    px_error err;
    CHECK(px_calib_fit_lat_bw(x, t, 8, &got_lat, &got_bw, &err) == PX_OK);
    CHECK_CLOSE(got_lat, lat, 1e-6, 1e-12);
    CHECK_CLOSE(got_bw, bw, 1e-6, 0.0);
}

static void test_lat_bw_noisy(uint32_t seed)
{
    rng_state = seed;
    /* 5% multiplicative noise: the relative-error fit must keep the latency
     * of the small sizes (a plain least-squares fit would not). */
    double lat = 2e-6, bw = 1e10, x[9], t[9];
    for (int i = 0; i < 9; i++) {
        x[i] = 1024.0 * pow(4.0, i);
        t[i] = (lat + x[i] / bw) * (1.0 + noise(0.05));
    }
    double got_lat = 0, got_bw = 0;
    px_error err;
    CHECK(px_calib_fit_lat_bw(x, t, 9, &got_lat, &got_bw, &err) == PX_OK);
    CHECK_MSG(fabs(got_lat - lat) <= 0.15 * lat, "seed %u: lat %g vs %g", seed, got_lat, lat);
    CHECK_MSG(fabs(got_bw - bw) <= 0.10 * bw, "seed %u: bw %g vs %g", seed, got_bw, bw);
}

static void test_lat_bw_clamps_negative_latency(void)
{
    /* Times proportional to size minus a constant: the unconstrained line has
     * a negative intercept, which is no latency; the fit goes through 0. */
    double x[3] = {1e6, 2e6, 4e6}, t[3] = {0.9e-3, 1.9e-3, 3.9e-3};
    double lat = -1, bw = 0;
    px_error err;
    CHECK(px_calib_fit_lat_bw(x, t, 3, &lat, &bw, &err) == PX_OK);
    CHECK(lat == 0.0);
    CHECK(bw > 1e9 && bw < 1.2e9);
}

static void test_lat_bw_errors(void)
{
    px_error err;
    double lat, bw;
    double x1[1] = {8}, t1[1] = {1e-6};
    CHECK(px_calib_fit_lat_bw(x1, t1, 1, &lat, &bw, &err) == PX_ERR_INVALID);
    double x2[2] = {8, 8}, t2[2] = {1e-6, 2e-6};
    CHECK(px_calib_fit_lat_bw(x2, t2, 2, &lat, &bw, &err) == PX_ERR_INVALID);
    double x3[2] = {8, 64}, t3[2] = {1e-6, 0.0};
    CHECK(px_calib_fit_lat_bw(x3, t3, 2, &lat, &bw, &err) == PX_ERR_INVALID);
    /* time shrinking with size: no bandwidth */
    double x4[3] = {1e3, 1e5, 1e7}, t4[3] = {3e-3, 2e-3, 1e-3};
    CHECK(px_calib_fit_lat_bw(x4, t4, 3, &lat, &bw, &err) == PX_ERR_INVALID);
    CHECK_MSG(err.msg[0] != '\0', "error message is empty");
}

static void test_half_dim(void)
{
    /* Square GEMMs following eff = d / (d + 24) exactly, plus one point at
     * peak (no information) and one wild outlier the median must ignore. */
    int64_t dims[6] = {16, 32, 64, 128, 4096, 256};
    double fl[6];
    double peak = 1e11;
    for (int i = 0; i < 6; i++)
        fl[i] = peak * (double)dims[i] / ((double)dims[i] + 24.0);
    fl[4] = peak;
    fl[5] = peak * 0.01; /* outlier */
    double c = px_calib_fit_half_dim(dims, fl, 6, peak, 1.0);
    CHECK_CLOSE(c, 24.0, 0.5, 0.0); /* median of 24,24,24,24,outlier */
    double c_none = px_calib_fit_half_dim(dims + 4, fl + 4, 1, peak, 1.0);
    CHECK(c_none == 0.0);
}

static void test_gemm_summary(void)
{
    px_gemm_point p[4] = {
        {16, 16, 16, 2e10}, {64, 64, 64, 6e10}, {16, 64, 16, 9e10}, {256, 256, 256, 8e10}};
    double peak, emax, half;
    px_calib_fit_gemm_summary(p, 4, &peak, &emax, &half);
    CHECK(peak == 9e10); /* the best shape, square or not */
    CHECK(emax == 1.0);
    CHECK(half > 0.0);
    /* eff(16) = 2/9 => c = 16 * 7/2 = 56; eff(64) = 6/9 => c = 32; eff(256)
     * = 8/9 => c = 32: median 32 */
    CHECK_CLOSE(half, 32.0, 1e-9, 0.0);
}

static void test_gemm_lattice(void)
{
    int64_t d[8], dq[8];
    int n = px_calib_gemm_dims(false, d, 8), nq = px_calib_gemm_dims(true, dq, 8);
    int64_t tq[8];
    int ntq = px_calib_gemm_token_dims(true, tq, 8);
    CHECK(n == 5 && nq == 4 && ntq == 5);
    CHECK(n * n * n <= PX_HW_MAX_GEMM_POINTS && ntq * nq * nq <= PX_HW_MAX_GEMM_POINTS);
    CHECK(d[0] == 16 && d[n - 1] == 4096 && dq[nq - 1] == 1024);
    for (int i = 1; i < n; i++)
        CHECK(d[i] == 4 * d[i - 1]);
    /* quick: the same series to 1024; m also takes 512 */
    int64_t want_q[5] = {16, 64, 256, 512, 1024};
    for (int i = 0; i < ntq && i < 5; i++)
        CHECK(tq[i] == want_q[i]);
}

int main(void)
{
    const char *s = getenv("PX_SEED");
    uint32_t seed = s ? (uint32_t)strtoul(s, NULL, 10) : 12345u;
    fprintf(stderr, "test_calib_fit: seed %u (PX_SEED to reproduce)\n", seed);
    test_lat_bw_exact();
    for (uint32_t i = 0; i < 20; i++)
        test_lat_bw_noisy(seed + i);
    test_lat_bw_clamps_negative_latency();
    test_lat_bw_errors();
    test_half_dim();
    test_gemm_summary();
    test_gemm_lattice();
    return px_test_result("test_calib_fit");
}
