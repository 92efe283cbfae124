/* px_calib_coll.h — MPI point-to-point and collective latency and bandwidth
 * per group size, fitted to time = lat_s + bytes / bw (px_calib_fit.h).
 *
 * Message sizes follow nccl-tests' convention (bytes of the whole buffer: the
 * all-reduce buffer, the gathered output of an all-gather, the unreduced
 * input of a reduce-scatter, one rank's send buffer of an all-to-all), so the
 * fitted bw is an algorithm bandwidth: the cost model divides the message
 * size by it directly, without ring factors.  Group size g uses world ranks
 * 0..g-1 (the executor's innermost groups are consecutive ranks). */
#ifndef PX_CALIB_COLL_H
#define PX_CALIB_COLL_H

#include <stdint.h>

#include <mpi.h>

#include "px_calib.h"
#include "px_error.h"
#include "px_hw.h"

/* Sizes below this are timed (and reported) but left out of the fit: MPI
 * sends them eagerly in ~1 us whatever their size, and a line through both
 * regimes would misprice the messages that actually cost time (a tiny
 * model's 8 KB activations already use the rendezvous protocol). */
#define PX_CALIB_FIT_MIN_BYTES 4096

/* The MPI sweep's collectives (not p2p) fit from here: Open MPI's reductions
 * change algorithm again between the L2-resident sizes and the MB-sized
 * buffers a step reduces (gradients, ZeRO units, TP activations of 0.5 MB
 * and up), and a relative-error fit that includes 4-32 KB calls follows
 * those and prices a 12 MB in-place reduce-scatter 4x too fast (measured
 * here: 0.75 GB/s at 12 MB against a fitted 4.5 GB/s). */
#define PX_CALIB_COLL_FIT_MIN_BYTES 262144

/* A collective's buffer beyond a core's L2 streams from the shared cache or
 * memory, and Open MPI's shared-memory reductions slow down 2-8x there, more
 * the larger the buffer (an in-place reduce-scatter here: 1.4 GB/s at 2 MB,
 * 0.5 GB/s at 8-64 MB).  One (lat, bw) through both priced ZeRO's MB-sized
 * gradient reductions at the L2 rate, so a collective gets one fit below the
 * split (px_calib_coll_split_bytes) and, from the split up to
 * PX_CALIB_COLL_BIG_MAX_BYTES (a small model's whole gradient, what ZeRO-0/1
 * reduce at once), one point per doubling of the size with its own rate:
 * at most PX_CALIB_COLL_MAX_POINTS per group size. */
#define PX_CALIB_COLL_BIG_MAX_BYTES ((int64_t)64 << 20)
#define PX_CALIB_COLL_MAX_POINTS 12

/* The size where the collectives' upper range starts: the per-core L2
 * (sysconf), within [1 MiB, 16 MiB]; 4 MiB when the system does not say. */
int64_t px_calib_coll_split_bytes(void);

typedef enum {
    PX_CALIB_P2P = 0,        /* one-way time of a ping-pong */
    PX_CALIB_ALLREDUCE,
    PX_CALIB_ALLGATHER,
    PX_CALIB_REDUCE_SCATTER,
    PX_CALIB_ALLTOALL,
    PX_CALIB_COLL_COUNT
} px_calib_coll_kind;

const char *px_calib_coll_name(px_calib_coll_kind kind);

/* Message sizes of the sweep in bytes; returns how many (<= max). */
int px_calib_coll_sizes(bool quick, int64_t *bytes, int max);

/* Times one operation on comm (every rank of comm calls it) for `bytes`
 * (rounded up to a whole number of floats per rank); *time_s is the slowest
 * rank's time per call, the same on every rank.  P2P ping-pongs between comm
 * ranks 0 and 1 (comm must have exactly 2 ranks). */
px_status px_calib_coll_time(const px_calib_opts *o, MPI_Comm comm,
                             px_calib_coll_kind kind, int64_t bytes, double *time_s,
                             px_error *err);

/* The whole sweep over world (every rank calls it): p2p between rank 0 and 1
 * (intra_*) and between rank 0 and the first rank on another node (inter_*;
 * equal to intra_* on one node), each collective for g = 2..size; fills
 * hw's communication fields and gpus_per_node (ranks on rank 0's node) on
 * every rank. */
px_status px_calib_coll_run(const px_calib_opts *o, MPI_Comm world, px_hw *hw,
                            px_error *err);

#endif
