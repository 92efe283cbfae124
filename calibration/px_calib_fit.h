/* px_calib_fit.h — turning timings into the few numbers a hardware profile
 * keeps.  Pure arithmetic (no MPI, no BLAS), so the tests check it directly. */
#ifndef PX_CALIB_FIT_H
#define PX_CALIB_FIT_H

#include <stdint.h>

#include "px_error.h"
#include "px_hw.h"

/* Fits time_s = lat_s + bytes / bw over n measurements (n >= 2, at least two
 * distinct sizes, all times > 0).  Least squares on the RELATIVE error (weights
 * 1/time^2): a plain fit would be all bandwidth and leave the latency of small
 * messages, which dominates tensor-parallel traffic of tiny models, to noise.
 * A negative latency is clamped to 0 and the bandwidth refitted through the
 * origin.  PX_ERR_INVALID when time does not grow with size. */
px_status px_calib_fit_lat_bw(const double *bytes, const double *time_s, int n,
                              double *lat_s, double *bw, px_error *err);

/* Half-efficiency dimension c of the shape model eff(d) = eff_max * d / (d + c),
 * from square GEMMs (d, d, d) at achieved `flops`, eff relative to
 * peak_flops * eff_max.  The median of the per-point estimates (robust to one
 * noisy size); points at or above eff_max give no information and are
 * skipped.  Returns 0 when no point is below eff_max. */
double px_calib_fit_half_dim(const int64_t *dim, const double *flops, int n,
                             double peak_flops, double eff_max);

/* Summary of a GEMM sweep: peak = the best point's throughput (the calibrated
 * notion of peak: what BLAS reaches on this core, so MFU reads against what
 * the machine can do), eff_max = 1 by that definition, half_dim from the
 * square points of the lattice (all three dims equal). */
void px_calib_fit_gemm_summary(const px_gemm_point *pts, int n, double *peak_flops,
                               double *eff_max, double *half_dim);

#endif
