/* px_calib_fit.c — latency/bandwidth and GEMM-efficiency fits. */
#include "px_calib_fit.h"

#include <math.h>
#include <stdlib.h>

px_status px_calib_fit_lat_bw(const double *bytes, const double *time_s, int n,
                              double *lat_s, double *bw, px_error *err)
{
    if (n < 2)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "lat/bw fit: %d measurements, need at least 2", n);
    double xmin = bytes[0], xmax = bytes[0];
    for (int i = 0; i < n; i++) {
        if (!(time_s[i] > 0.0) || !(bytes[i] >= 0.0))
            return PX_FAIL(err, PX_ERR_INVALID,
                           "lat/bw fit: measurement %d has time %g s, bytes %g "
                           "(need time > 0, bytes >= 0)", i, time_s[i], bytes[i]);
        xmin = fmin(xmin, bytes[i]);
        xmax = fmax(xmax, bytes[i]);
    }
    if (xmax <= xmin)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "lat/bw fit: every measurement has %g bytes, need two sizes", xmin);
    /* Weighted normal equations of min sum w (a + b x - t)^2, w = 1/t^2. */
    double s0 = 0, s1 = 0, s2 = 0, t0 = 0, t1 = 0;
    for (int i = 0; i < n; i++) {
        double w = 1.0 / (time_s[i] * time_s[i]);
        double x = bytes[i];
        s0 += w;
        s1 += w * x;
        s2 += w * x * x;
        t0 += w * time_s[i];
        t1 += w * x * time_s[i];
    }
    double det = s0 * s2 - s1 * s1;
    double a = 0.0, b = 0.0;
    if (det > 0.0) {
        a = (t0 * s2 - s1 * t1) / det;
        b = (s0 * t1 - s1 * t0) / det;
    }
    if (!(det > 0.0) || a < 0.0) {
        a = 0.0;
        b = t1 / s2;
    }
    if (!(b > 0.0))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "lat/bw fit: time does not grow with message size "
                       "(%g B to %g B); cannot derive a bandwidth", xmin, xmax);
    *lat_s = a;
    *bw = 1.0 / b;
    return PX_OK;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

double px_calib_fit_half_dim(const int64_t *dim, const double *flops, int n,
                             double peak_flops, double eff_max)
{
    double est[PX_HW_MAX_GEMM_POINTS];
    int m = 0;
    for (int i = 0; i < n && m < PX_HW_MAX_GEMM_POINTS; i++) {
        double e = flops[i] / (peak_flops * eff_max);
        if (!(e > 0.0) || e >= 0.999)
            continue;
        /* e = d / (d + c)  =>  c = d (1 - e) / e */
        est[m++] = (double)dim[i] * (1.0 - e) / e;
    }
    if (m == 0)
        return 0.0;
    qsort(est, (size_t)m, sizeof est[0], cmp_double);
    return m % 2 ? est[m / 2] : 0.5 * (est[m / 2 - 1] + est[m / 2]);
}

void px_calib_fit_gemm_summary(const px_gemm_point *pts, int n, double *peak_flops,
                               double *eff_max, double *half_dim)
{
    double peak = 0.0;
    for (int i = 0; i < n; i++)
        peak = fmax(peak, pts[i].flops);
    int64_t dims[PX_HW_MAX_GEMM_POINTS];
    double fl[PX_HW_MAX_GEMM_POINTS];
    int m = 0;
    for (int i = 0; i < n && m < PX_HW_MAX_GEMM_POINTS; i++) {
        if (pts[i].m == pts[i].n && pts[i].n == pts[i].k) {
            dims[m] = pts[i].m;
            fl[m++] = pts[i].flops;
        }
    }
    *peak_flops = peak;
    *eff_max = 1.0;
    *half_dim = peak > 0.0 ? px_calib_fit_half_dim(dims, fl, m, peak, 1.0) : 0.0;
}
