/* px_calib_coll.c — the MPI sweep (see px_calib_coll.h). */
#include "px_calib_coll.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "px_calib_fit.h"
#include "px_error_mpi.h"

const char *px_calib_coll_name(px_calib_coll_kind kind)
{
    switch (kind) {
    case PX_CALIB_P2P: return "p2p";
    case PX_CALIB_ALLREDUCE: return "allreduce";
    case PX_CALIB_ALLGATHER: return "allgather";
    case PX_CALIB_REDUCE_SCATTER: return "reduce_scatter";
    case PX_CALIB_ALLTOALL: return "alltoall";
    case PX_CALIB_COLL_COUNT: break;
    }
    return "?";
}

int px_calib_coll_sizes(bool quick, int64_t *bytes, int max)
{
    /* 8 B (latency) to 32 MB (a small model's gradients, beyond the caches);
     * a ratio of 4 (8 with quick: 8 B..16 MB) keeps each protocol regime of
     * the MPI library represented. */
    int64_t step = quick ? 8 : 4, top = quick ? (int64_t)16 << 20 : (int64_t)32 << 20;
    int n = 0;
    for (int64_t b = 8; b <= top && n < max; b *= step)
        bytes[n++] = b;
    return n;
}

int64_t px_calib_coll_split_bytes(void)
{
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l2 <= 0)
        return (int64_t)4 << 20;
    int64_t b = (int64_t)l2;
    return b < ((int64_t)1 << 20) ? (int64_t)1 << 20 : b > ((int64_t)16 << 20) ? (int64_t)16 << 20 : b;
}

/* The collectives' sizes: the sweep's below the split, then the split and
 * its doublings up to PX_CALIB_COLL_BIG_MAX_BYTES (the range where the rate
 * falls with the size, each size its own point). */
static int coll_sizes(bool quick, int64_t *bytes, int max)
{
    int64_t all[24];
    int n_all = px_calib_coll_sizes(quick, all, 24), n = 0;
    int64_t split = px_calib_coll_split_bytes();
    for (int i = 0; i < n_all && n < max; i++)
        if (all[i] < split)
            bytes[n++] = all[i];
    for (int64_t b = split; b <= PX_CALIB_COLL_BIG_MAX_BYTES && n < max; b *= 2)
        bytes[n++] = b;
    return n;
}

/* One call of the operation; buffers sized by the caller. */
static int coll_call(MPI_Comm comm, px_calib_coll_kind kind, int rank, int count_per_rank,
                     int g, float *send, float *recv)
{
    switch (kind) {
    case PX_CALIB_P2P:
        if (rank == 0) {
            int rc = MPI_Send(send, count_per_rank, MPI_FLOAT, 1, 7, comm);
            if (rc != MPI_SUCCESS)
                return rc;
            return MPI_Recv(recv, count_per_rank, MPI_FLOAT, 1, 7, comm, MPI_STATUS_IGNORE);
        } else {
            int rc = MPI_Recv(recv, count_per_rank, MPI_FLOAT, 0, 7, comm, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS)
                return rc;
            return MPI_Send(send, count_per_rank, MPI_FLOAT, 0, 7, comm);
        }
    /* The reductions run in place, as the executor calls them (its gradient
     * buffers are reduced where they are; Open MPI's in-place paths differ
     * from the two-buffer ones).  recv holds zeros: repeated sums stay 0. */
    case PX_CALIB_ALLREDUCE:
        (void)send;
        return MPI_Allreduce(MPI_IN_PLACE, recv, count_per_rank * g, MPI_FLOAT, MPI_SUM, comm);
    case PX_CALIB_ALLGATHER:
        return MPI_Allgather(send, count_per_rank, MPI_FLOAT, recv, count_per_rank,
                             MPI_FLOAT, comm);
    case PX_CALIB_REDUCE_SCATTER:
        return MPI_Reduce_scatter_block(MPI_IN_PLACE, recv, count_per_rank, MPI_FLOAT, MPI_SUM,
                                        comm);
    case PX_CALIB_ALLTOALL:
        return MPI_Alltoall(send, count_per_rank, MPI_FLOAT, recv, count_per_rank,
                            MPI_FLOAT, comm);
    case PX_CALIB_COLL_COUNT:
        break;
    }
    return MPI_ERR_OTHER;
}

px_status px_calib_coll_time(const px_calib_opts *o, MPI_Comm comm,
                             px_calib_coll_kind kind, int64_t bytes, double *time_s,
                             px_error *err)
{
    int rank = 0, g = 0;
    px_status st = px_mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", err);
    if (st == PX_OK)
        st = px_mpi_check(MPI_Comm_size(comm, &g), "MPI_Comm_size", err);
    if (st != PX_OK)
        return st;
    if (kind == PX_CALIB_P2P && g != 2)
        return PX_FAIL(err, PX_ERR_INVALID, "p2p timing needs a 2-rank communicator, got %d",
                       g);
    /* Elements per rank: the whole buffer split over g ranks (p2p: the
     * message itself), at least one float each. */
    int64_t total_elems = (bytes + (int64_t)sizeof(float) - 1) / (int64_t)sizeof(float);
    int64_t per_rank = kind == PX_CALIB_P2P ? total_elems : (total_elems + g - 1) / g;
    if (per_rank < 1)
        per_rank = 1;
    if (per_rank * g > INT32_MAX)
        return PX_FAIL(err, PX_ERR_INVALID, "%s: %lld bytes is too large for one MPI call",
                       px_calib_coll_name(kind), (long long)bytes);
    size_t n = (size_t)(per_rank * g);
    float *send = malloc(n * sizeof *send), *recv = malloc(n * sizeof *recv);
    if (!send || !recv) {
        free(send);
        free(recv);
        return PX_FAIL(err, PX_ERR_NOMEM, "%s: cannot allocate 2 x %zu floats",
                       px_calib_coll_name(kind), n);
    }
    for (size_t i = 0; i < n; i++) {
        send[i] = (float)(i % 97) * 0.01f;
        recv[i] = 0.0f;
    }
    /* Warm-up (connection setup, buffer registration), then one timed call
     * decides the repetition count; rank 0's count is used everywhere so
     * every rank makes the same calls. */
    int rc = MPI_Barrier(comm);
    for (int w = 0; w < 2 && rc == MPI_SUCCESS; w++)
        rc = coll_call(comm, kind, rank, (int)per_rank, g, send, recv);
    double t0 = px_calib_now_s();
    if (rc == MPI_SUCCESS)
        rc = coll_call(comm, kind, rank, (int)per_rank, g, send, recv);
    double first = px_calib_now_s() - t0;
    long reps = (long)ceil(o->min_time_s / 3.0 / fmax(first, 1e-7));
    reps = reps < 1 ? 1 : reps > 20000 ? 20000 : reps;
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(&reps, 1, MPI_LONG, 0, comm);
    double best = INFINITY;
    for (int batch = 0; batch < 3 && rc == MPI_SUCCESS; batch++) {
        rc = MPI_Barrier(comm);
        t0 = px_calib_now_s();
        for (long r = 0; r < reps && rc == MPI_SUCCESS; r++)
            rc = coll_call(comm, kind, rank, (int)per_rank, g, send, recv);
        double mine = (px_calib_now_s() - t0) / (double)reps, slowest = mine;
        if (rc == MPI_SUCCESS)
            rc = MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
        best = fmin(best, slowest);
    }
    free(send);
    free(recv);
    st = px_mpi_check(rc, px_calib_coll_name(kind), err);
    if (st != PX_OK)
        return st;
    /* A ping-pong's time is a round trip: the one-way time is half. */
    *time_s = kind == PX_CALIB_P2P ? best / 2.0 : best;
    return PX_OK;
}

/* Fits lat/bw to the n sizes x[], t[] into *out; a single size gives
 * lat 0 and its own rate.  Returns the worst relative error of the fit. */
static double fit_range(const px_calib_opts *o, px_calib_coll_kind kind, int g,
                        const double *x, const double *t, int n, px_coll_point *out)
{
    px_error fit_err;
    if (n == 1) {
        out->lat_s = 0.0;
        out->bw = x[0] / t[0];
    } else if (px_calib_fit_lat_bw(x, t, n, &out->lat_s, &out->bw, &fit_err) != PX_OK) {
        /* Noise can make a sweep non-monotonic: keep a usable point (the
         * smallest size's time as latency, the largest's rate as bandwidth)
         * rather than fail the whole calibration, and say so. */
        out->lat_s = t[0];
        out->bw = x[n - 1] / t[n - 1];
        px_calib_say(o, "%s n=%d: %s; using lat = the smallest size's time, bw = the "
                     "largest size's rate", px_calib_coll_name(kind), g, fit_err.msg);
    }
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        double pred = out->lat_s + x[i] / out->bw;
        worst = fmax(worst, fabs(pred - t[i]) / t[i]);
    }
    return worst;
}

/* Times every size on comm.  p2p: one lat/bw fit from
 * PX_CALIB_FIT_MIN_BYTES.  A collective: one fit over
 * [PX_CALIB_COLL_FIT_MIN_BYTES, split) that prices every message below the
 * split, then one point per size from the split up (lat 0, bw = the size's
 * own rate, min_bytes = the size): *n_out points, at most max.  On ranks
 * outside the group (comm == MPI_COMM_NULL) nothing happens. */
static px_status sweep_fit(const px_calib_opts *o, MPI_Comm comm, px_calib_coll_kind kind,
                           int g, px_coll_point *out, int max, int *n_out, px_error *err)
{
    int64_t sizes[24];
    bool p2p = kind == PX_CALIB_P2P;
    int ns = p2p ? px_calib_coll_sizes(o->quick, sizes, 24) : coll_sizes(o->quick, sizes, 24);
    int64_t min_fit = p2p ? PX_CALIB_FIT_MIN_BYTES : PX_CALIB_COLL_FIT_MIN_BYTES;
    int64_t split = p2p ? INT64_MAX : px_calib_coll_split_bytes();
    double x[24], t[24];
    int nfit = 0;
    double t_start = px_calib_now_s();
    *n_out = 0;
    for (int i = 0; i < ns; i++) {
        double ti = 0.0;
        px_status st = px_calib_coll_time(o, comm, kind, sizes[i], &ti, err);
        if (st != PX_OK)
            return st;
        if (sizes[i] >= split && *n_out + 1 < max) {
            px_coll_point *pt = &out[1 + (*n_out)++];
            *pt = (px_coll_point){g, 0.0, (double)sizes[i] / ti, sizes[i]};
        } else if (sizes[i] >= min_fit && sizes[i] < split) {
            x[nfit] = (double)sizes[i];
            t[nfit++] = ti;
        }
    }
    if (nfit > 0) {
        out[0].n_ranks = g;
        out[0].min_bytes = 0;
        double worst = fit_range(o, kind, g, x, t, nfit, &out[0]);
        px_calib_say(o, "%-14s n=%-2d lat %7.2f us  bw %7.2f GB/s  (fit over %d sizes "
                     "%.0f B..%.0f B, max err %.0f%%; %.1f s)", px_calib_coll_name(kind), g,
                     out[0].lat_s * 1e6, out[0].bw / 1e9, nfit, x[0], x[nfit - 1],
                     100.0 * worst, px_calib_now_s() - t_start);
        (*n_out)++;
    } else {
        /* no size below the split: the points start at index 1 */
        memmove(&out[0], &out[1], (size_t)*n_out * sizeof out[0]);
        if (*n_out > 0)
            out[0].min_bytes = 0;
    }
    if (!p2p && *n_out > 1) {
        char line[512];
        int len = snprintf(line, sizeof line, "%-14s n=%-2d from %lld B, each size its own "
                           "rate:", px_calib_coll_name(kind), g, (long long)split);
        for (int i = nfit > 0 ? 1 : 0; i < *n_out && len < (int)sizeof line - 40; i++)
            len += snprintf(line + len, sizeof line - (size_t)len, " %.0f MB %.2f GB/s",
                            (double)out[i].min_bytes / 1e6, out[i].bw / 1e9);
        px_calib_say(o, "%s", line);
    }
    return PX_OK;
}

/* Splits world into {0, peer} (colour 0) and the rest (no communicator). */
static px_status pair_comm(MPI_Comm world, int rank, int peer, MPI_Comm *pair, px_error *err)
{
    int colour = (rank == 0 || rank == peer) ? 0 : MPI_UNDEFINED;
    return px_mpi_check(MPI_Comm_split(world, colour, rank, pair), "MPI_Comm_split", err);
}

/* Broadcasts one point from world rank 0 (its only measurer for p2p). */
static px_status bcast_point(MPI_Comm world, px_coll_point *p, px_error *err)
{
    double v[4] = {(double)p->n_ranks, p->lat_s, p->bw, (double)p->min_bytes};
    px_status st = px_mpi_check(MPI_Bcast(v, 4, MPI_DOUBLE, 0, world), "MPI_Bcast", err);
    p->n_ranks = (int)v[0];
    p->lat_s = v[1];
    p->bw = v[2];
    p->min_bytes = (int64_t)v[3];
    return st;
}

/* The node structure: ranks on rank 0's node (*ppn) and the first rank on
 * another node (*remote, -1 when one node), from each rank's node leader. */
static px_status node_layout(MPI_Comm world, int rank, int size, int *ppn, int *remote,
                             px_error *err)
{
    px_status st;
    MPI_Comm node = MPI_COMM_NULL;
    st = px_mpi_check(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                                       &node), "MPI_Comm_split_type", err);
    if (st != PX_OK)
        return st;
    int node_size = 0, node_rank = 0, leader = rank;
    MPI_Comm_size(node, &node_size);
    MPI_Comm_rank(node, &node_rank);
    st = px_mpi_check(MPI_Bcast(&leader, 1, MPI_INT, 0, node), "MPI_Bcast", err);
    MPI_Comm_free(&node);
    if (st != PX_OK)
        return st;
    int *leaders = malloc((size_t)size * sizeof *leaders);
    if (!leaders)
        return PX_FAIL(err, PX_ERR_NOMEM, "cannot allocate %d ints", size);
    st = px_mpi_check(MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, world),
                   "MPI_Allgather", err);
    *ppn = node_size;
    if (st == PX_OK)
        st = px_mpi_check(MPI_Bcast(ppn, 1, MPI_INT, 0, world), "MPI_Bcast", err);
    *remote = -1;
    for (int r = 1; r < size && *remote < 0; r++)
        if (leaders[r] != leaders[0])
            *remote = r;
    free(leaders);
    if (st != PX_OK)
        return st;
    return PX_OK;
}

/* Appends one measured point to the profile's array of collective kind
 * (a group size past the arrays' room keeps only the points that fit). */
static void add_coll_point(px_hw *hw, px_calib_coll_kind kind, const px_coll_point *pt)
{
    px_coll_point *arr = NULL;
    int *n = NULL;
    switch (kind) {
    case PX_CALIB_ALLREDUCE: arr = hw->allreduce_points; n = &hw->n_coll_points; break;
    case PX_CALIB_ALLGATHER: arr = hw->allgather_points; n = &hw->n_allgather_points; break;
    case PX_CALIB_REDUCE_SCATTER:
        arr = hw->reduce_scatter_points;
        n = &hw->n_reduce_scatter_points;
        break;
    case PX_CALIB_ALLTOALL: arr = hw->alltoall_points; n = &hw->n_alltoall_points; break;
    default: return;
    }
    if (*n < PX_HW_MAX_COLL_POINTS)
        arr[(*n)++] = *pt;
}

px_status px_calib_coll_run(const px_calib_opts *o, MPI_Comm world, px_hw *hw,
                            px_error *err)
{
    int rank = 0, size = 0;
    px_status st = px_mpi_check(MPI_Comm_rank(world, &rank), "MPI_Comm_rank", err);
    if (st == PX_OK)
        st = px_mpi_check(MPI_Comm_size(world, &size), "MPI_Comm_size", err);
    if (st != PX_OK)
        return st;

    int ppn = 0, remote = -1;
    st = node_layout(world, rank, size, &ppn, &remote, err);
    if (st != PX_OK)
        return st;
    hw->gpus_per_node = ppn;
    if (size < 2) {
        px_calib_say(o, "mpi: one rank, no communication to measure");
        return PX_OK;
    }
    px_calib_say(o, "mpi: %d ranks, %d on rank 0's node; %s", size, ppn,
                 remote < 0 ? "one node" : "several nodes");

    /* Point-to-point: rank 0 with rank 1 (same node when ppn > 1), and with
     * the first rank of another node. */
    px_coll_point p2p_intra = {0}, p2p_inter = {0};
    int peers[2] = {1, remote};
    for (int which = 0; which < 2 && st == PX_OK; which++) {
        int peer = peers[which];
        if (peer < 0 || (which == 0 && ppn < 2))
            continue;
        MPI_Comm pair = MPI_COMM_NULL;
        st = pair_comm(world, rank, peer, &pair, err);
        if (st == PX_OK && pair != MPI_COMM_NULL) {
            int n_pts = 0;
            st = sweep_fit(o, pair, PX_CALIB_P2P, 2, which == 0 ? &p2p_intra : &p2p_inter, 1,
                           &n_pts, err);
            MPI_Comm_free(&pair);
        }
        /* Only rank 0 and the peer measured: make the outcome collective. */
        int ok = st == PX_OK, all_ok = 0;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, world);
        if (st == PX_OK && !all_ok)
            st = PX_FAIL(err, PX_ERR_MPI, "p2p timing failed on another rank");
        if (st == PX_OK)
            st = bcast_point(world, which == 0 ? &p2p_intra : &p2p_inter, err);
    }
    if (st != PX_OK)
        return st;
    if (p2p_intra.n_ranks == 0)
        p2p_intra = p2p_inter;
    if (p2p_inter.n_ranks == 0)
        p2p_inter = p2p_intra;
    hw->intra_lat_s = p2p_intra.lat_s;
    hw->intra_bw = p2p_intra.bw;
    hw->inter_lat_s = p2p_inter.lat_s;
    hw->inter_bw = p2p_inter.bw;

    /* Collectives for each group size. */
    hw->n_coll_points = hw->n_allgather_points = 0;
    hw->n_reduce_scatter_points = hw->n_alltoall_points = 0;
    for (int g = 2; g <= size && st == PX_OK; g++) {
        MPI_Comm sub = MPI_COMM_NULL;
        st = px_mpi_check(MPI_Comm_split(world, rank < g ? 0 : MPI_UNDEFINED, rank, &sub),
                       "MPI_Comm_split", err);
        if (st != PX_OK)
            break;
        for (int k = PX_CALIB_ALLREDUCE; k < PX_CALIB_COLL_COUNT && st == PX_OK; k++) {
            px_coll_point pts[PX_CALIB_COLL_MAX_POINTS];
            int n_pts = 0;
            if (sub != MPI_COMM_NULL)
                st = sweep_fit(o, sub, (px_calib_coll_kind)k, g, pts, PX_CALIB_COLL_MAX_POINTS,
                               &n_pts, err);
            int ok = st == PX_OK, all_ok = 0;
            MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, world);
            if (st == PX_OK && !all_ok)
                st = PX_FAIL(err, PX_ERR_MPI, "%s timing failed on another rank",
                             px_calib_coll_name((px_calib_coll_kind)k));
            if (st == PX_OK)
                st = px_mpi_check(MPI_Bcast(&n_pts, 1, MPI_INT, 0, world), "MPI_Bcast", err);
            for (int j = 0; j < n_pts && st == PX_OK; j++)
                st = bcast_point(world, &pts[j], err);
            if (st != PX_OK)
                break;
            for (int j = 0; j < n_pts; j++)
                add_coll_point(hw, (px_calib_coll_kind)k, &pts[j]);
        }
        if (sub != MPI_COMM_NULL)
            MPI_Comm_free(&sub);
    }
    return st;
}
