/* px_calib_gemm.h — BLAS GEMM throughput by shape.
 *
 * The sweep is a lattice of (m, n, k) with every dimension in a geometric
 * series of ratio 4 from 16 (a head dimension) to 4096 (1024 with --quick,
 * whose m, the tokens, also takes 512: px_calib_gemm_token_dims):
 * it covers the tokens b*s (32..4096) and the hidden, ffn, head and vocab
 * widths (after TP sharding) of tiny-to-small models, and a regular lattice
 * in log space is what the cost model interpolates over.  Each point is timed
 * in the three forms a training step uses with row-major storage — NN
 * (forward Y = X W), NT (input gradient dX = dY W^T) and TN (weight gradient
 * dW = X^T dY) — and stored as one throughput: the harmonic mean, i.e. the
 * rate of doing all three, which is what a step does with equal FLOPs. */
#ifndef PX_CALIB_GEMM_H
#define PX_CALIB_GEMM_H

#include <stdint.h>

#include "px_calib.h"
#include "px_error.h"
#include "px_hw.h"

/* --quick adds m = PX_CALIB_GEMM_TALL_M at n, k in {256, 1024} to its
 * lattice (px_calib_gemm_run): the tokens of a large micro-batch. */
#define PX_CALIB_GEMM_TALL_M 4096

/* The lattice's dimensions in increasing order; returns how many (<= max). */
int px_calib_gemm_dims(bool quick, int64_t *dims, int max);

/* The dimensions of m (the tokens b·s/cp of a layer GEMM): the same, and
 * with quick 512 between 256 and 1024 (the CPU executor's token counts
 * straddle the per-core L2 there); returns how many (<= max). */
int px_calib_gemm_token_dims(bool quick, int64_t *dims, int max);

/* Times one shape in one form ('N'/'T' for A and B, row-major C[m,n] =
 * op(A) op(B)), returning the achieved FLOP/s (2mnk per call).  Buffers must
 * hold m*k, k*n and m*n floats. */
double px_calib_gemm_time_one(const px_calib_opts *o, char ta, char tb, int64_t m,
                              int64_t n, int64_t k, const float *a, const float *b,
                              float *c);

/* Runs the whole lattice (sets the BLAS thread count first) and fills pts
 * (m, n, k, flops) in lattice order, then --quick's four tall shapes;
 * *n_pts = dims^3 (+ 4) <= max_pts. */
px_status px_calib_gemm_run(const px_calib_opts *o, px_gemm_point *pts, int max_pts,
                            int *n_pts, px_error *err);

#endif
