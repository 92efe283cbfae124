/* px_calib_cuda.c — GPU calibration (see px_calib_cuda.h).  Compiled only
 * when meson finds the CUDA backend (have_cuda). */
#include "px_calib_cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "px_calib_coll.h"
#include "px_calib_fit.h"
#include "px_calib_gemm.h"
#include "px_comm_cuda.h"
#include "px_cuda_gemm.h"
#include "px_cuda_status.h"

int px_calib_cuda_devices(void)
{
    return px_cuda_device_count();
}

const char *px_calib_cuda_base_profile(char *device_name, int len)
{
    struct cudaDeviceProp prop;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(device_name, (size_t)len, "unknown GPU");
        return PX_HW_DEFAULT;
    }
    snprintf(device_name, (size_t)len, "%s", prop.name);
    /* Most specific first: "GB200" contains "B200", "H800" is not an H100. */
    static const char *const map[][2] = {{"GB200", "gb200-nvl72"}, {"B200", "b200"},
                                         {"H200", "h200"},         {"H800", "h800"},
                                         {"H100", "h100-sxm"},     {"A100", "a100-80g"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strstr(prop.name, map[i][0]))
            return map[i][1];
    return PX_HW_DEFAULT;
}

/* Seconds per call of a bf16 GEMM: the fastest of 3 batches filling the
 * window, timed with events on `stream`. */
static px_status time_gemm(const px_calib_opts *o, px_cuda_blas *blas, cudaStream_t stream,
                           cudaEvent_t ev0, cudaEvent_t ev1, bool ta, bool tb, int64_t m,
                           int64_t n, int64_t k, const void *a, const void *b, void *c,
                           double *best_s, px_error *err)
{
    int64_t lda = ta ? m : k, ldb = tb ? k : n;
    PX_TRY(px_cuda_gemm(blas, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n, PX_CUDA_BF16,
                        err)); /* warm-up: cuBLAS picks its kernel */
    PX_CUDA_TRY(err, cudaEventRecord(ev0, stream));
    PX_TRY(px_cuda_gemm(blas, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n, PX_CUDA_BF16,
                        err));
    PX_CUDA_TRY(err, cudaEventRecord(ev1, stream));
    PX_CUDA_TRY(err, cudaEventSynchronize(ev1));
    float ms = 0.0f;
    PX_CUDA_TRY(err, cudaEventElapsedTime(&ms, ev0, ev1));
    double first = fmax(1e-3 * ms, 1e-7);
    long reps = (long)ceil(o->min_time_s / 3.0 / first);
    reps = reps < 1 ? 1 : reps > 2000 ? 2000 : reps;
    double best = first;
    for (int batch = 0; batch < 3; batch++) {
        PX_CUDA_TRY(err, cudaEventRecord(ev0, stream));
        for (long r = 0; r < reps; r++)
            PX_TRY(px_cuda_gemm(blas, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n,
                                PX_CUDA_BF16, err));
        PX_CUDA_TRY(err, cudaEventRecord(ev1, stream));
        PX_CUDA_TRY(err, cudaEventSynchronize(ev1));
        PX_CUDA_TRY(err, cudaEventElapsedTime(&ms, ev0, ev1));
        best = fmin(best, 1e-3 * ms / (double)reps);
    }
    *best_s = best;
    return PX_OK;
}

/* The GPU lattice: the CPU one scaled by 4 (64..16384; quick to 4096):
 * tensor cores need larger tiles before they saturate. */
static int gpu_dims(bool quick, int64_t *dims)
{
    int n = 0;
    for (int64_t d = 64; d <= (quick ? 4096 : 16384); d *= 4)
        dims[n++] = d;
    return n;
}

static px_status gemm_sweep(const px_calib_opts *o, px_hw *hw, px_error *err)
{
    int64_t dims[8];
    int nd = gpu_dims(o->quick, dims);
    int64_t top = dims[nd - 1];
    size_t bytes = (size_t)(top * top) * 2; /* bf16 */
    void *a = NULL, *b = NULL, *c = NULL;
    cudaStream_t stream = NULL;
    cudaEvent_t ev0 = NULL, ev1 = NULL;
    px_cuda_blas *blas = NULL;
    px_status st = PX_OK;
    if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess ||
        cudaMalloc(&c, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        st = PX_FAIL(err, PX_ERR_NOMEM, "gemm sweep: cannot allocate 3 x %zu bytes on the GPU",
                     bytes);
    }
    /* 0x3c00 pairs: bf16 1.0-ish values, never denormal */
    if (st == PX_OK)
        st = px_cuda_status(cudaMemset(a, 0x3c, bytes), "cudaMemset", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaMemset(b, 0x3b, bytes), "cudaMemset", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                            "cudaStreamCreate", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaEventCreate(&ev0), "cudaEventCreate", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaEventCreate(&ev1), "cudaEventCreate", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_blas_new(stream, &blas, err);
    px_calib_say(o, "gemm (cuBLAS bf16): %d shapes x 3 forms, dims %lld..%lld", nd * nd * nd,
                 (long long)dims[0], (long long)top);
    int np = 0;
    static const bool forms[3][2] = {{false, false}, {false, true}, {true, false}};
    for (int im = 0; im < nd && st == PX_OK; im++) {
        for (int in = 0; in < nd && st == PX_OK; in++)
            for (int ik = 0; ik < nd && st == PX_OK; ik++) {
                double inv_sum = 0.0;
                for (int f = 0; f < 3 && st == PX_OK; f++) {
                    double t = 0.0;
                    px_calib_sync(o);
                    st = time_gemm(o, blas, stream, ev0, ev1, forms[f][0], forms[f][1],
                                   dims[im], dims[in], dims[ik], a, b, c, &t, err);
                    double flop = 2.0 * (double)dims[im] * (double)dims[in] * (double)dims[ik];
                    inv_sum += t / flop;
                }
                px_gemm_point *p = &hw->gemm_points[np++];
                p->m = dims[im];
                p->n = dims[in];
                p->k = dims[ik];
                p->flops = 3.0 / inv_sum;
            }
        if (st == PX_OK)
            px_calib_say(o, "gemm: m=%-6lld done (%d/%d shapes)", (long long)dims[im], np,
                         nd * nd * nd);
    }
    hw->n_gemm_points = st == PX_OK ? np : 0;
    px_cuda_blas_delete(blas);
    if (ev0)
        cudaEventDestroy(ev0);
    if (ev1)
        cudaEventDestroy(ev1);
    if (stream)
        cudaStreamDestroy(stream);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return st;
}

/* HBM: device-to-device copies (read + write) of a buffer far beyond L2. */
static px_status hbm_sweep(const px_calib_opts *o, px_hw *hw, px_error *err)
{
    size_t free_b = 0, total_b = 0;
    PX_CUDA_TRY(err, cudaMemGetInfo(&free_b, &total_b));
    hw->hbm_bytes = (int64_t)total_b;
    size_t bytes = (size_t)(o->quick ? 256 : 1024) << 20;
    void *src = NULL, *dst = NULL;
    PX_CUDA_TRY(err, cudaMalloc(&src, bytes));
    if (cudaMalloc(&dst, bytes) != cudaSuccess) {
        cudaFree(src);
        return px_cuda_status(cudaGetLastError(), "cudaMalloc", __FILE__, __LINE__, err);
    }
    px_status st = px_cuda_status(cudaMemset(src, 1, bytes), "cudaMemset", __FILE__, __LINE__,
                                  err);
    double best = INFINITY;
    for (int rep = 0; rep < 6 && st == PX_OK; rep++) {
        px_calib_sync(o);
        st = px_cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize", __FILE__,
                            __LINE__, err);
        double t0 = px_calib_now_s();
        if (st == PX_OK)
            st = px_cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice),
                                "cudaMemcpy", __FILE__, __LINE__, err);
        if (st == PX_OK)
            st = px_cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize", __FILE__,
                                __LINE__, err);
        if (rep > 0) /* the first copy pays for lazy mapping */
            best = fmin(best, px_calib_now_s() - t0);
    }
    cudaFree(src);
    cudaFree(dst);
    if (st != PX_OK)
        return st;
    hw->hbm_bw = 2.0 * (double)bytes / best;
    /* The copy is itself an achieved element-wise rate (read one array,
     * write one): the cost model's element-wise operators run at it. */
    hw->mem_bound_eff = 1.0;
    px_calib_say(o, "hbm: device-to-device copy %.0f GB/s (read + write), %.1f GB memory",
                 hw->hbm_bw / 1e9, (double)hw->hbm_bytes / 1e9);
    return PX_OK;
}

/* One NCCL operation on comm (g ranks, rank r), bytes as px_calib_coll.h
 * counts them (bf16 elements). */
static ncclResult_t nccl_call(px_calib_coll_kind kind, ncclComm_t comm, int r, int g,
                              int64_t per_rank, void *send, void *recv, cudaStream_t s)
{
    switch (kind) {
    case PX_CALIB_P2P: { /* rank 0 and 1 exchange msg bytes each way at once */
        ncclResult_t rc = ncclGroupStart();
        if (r == 0) {
            ncclSend(send, (size_t)per_rank, ncclBfloat16, 1, comm, s);
            ncclRecv(recv, (size_t)per_rank, ncclBfloat16, 1, comm, s);
        } else {
            ncclRecv(recv, (size_t)per_rank, ncclBfloat16, 0, comm, s);
            ncclSend(send, (size_t)per_rank, ncclBfloat16, 0, comm, s);
        }
        return rc == ncclSuccess ? ncclGroupEnd() : rc;
    }
    case PX_CALIB_ALLREDUCE:
        return ncclAllReduce(send, recv, (size_t)(per_rank * g), ncclBfloat16, ncclSum, comm, s);
    case PX_CALIB_ALLGATHER:
        return ncclAllGather(send, recv, (size_t)per_rank, ncclBfloat16, comm, s);
    case PX_CALIB_REDUCE_SCATTER:
        return ncclReduceScatter(send, recv, (size_t)per_rank, ncclBfloat16, ncclSum, comm, s);
    case PX_CALIB_ALLTOALL: {
        ncclResult_t rc = ncclGroupStart();
        for (int peer = 0; peer < g && rc == ncclSuccess; peer++) {
            rc = ncclSend((char *)send + (size_t)(peer * per_rank) * 2, (size_t)per_rank,
                          ncclBfloat16, peer, comm, s);
            if (rc == ncclSuccess)
                rc = ncclRecv((char *)recv + (size_t)(peer * per_rank) * 2, (size_t)per_rank,
                              ncclBfloat16, peer, comm, s);
        }
        ncclResult_t end = ncclGroupEnd();
        return rc == ncclSuccess ? end : rc;
    }
    case PX_CALIB_COLL_COUNT:
        break;
    }
    return ncclInvalidArgument;
}

/* Times every size for one operation on an NCCL communicator over mpi_comm
 * (the slowest rank, fastest of 3 batches) and fits lat/bw. */
static px_status nccl_sweep(const px_calib_opts *o, MPI_Comm mpi_comm, ncclComm_t comm,
                            px_calib_coll_kind kind, px_coll_point *out, px_error *err)
{
    int r = 0, g = 0;
    MPI_Comm_rank(mpi_comm, &r);
    MPI_Comm_size(mpi_comm, &g);
    int64_t sizes[16];
    /* NCCL's regimes (LL, LL128, Simple) span KBs to MBs: sizes to 256 MB. */
    int ns = 0;
    for (int64_t bsz = 8; bsz <= ((int64_t)256 << 20) && ns < 16; bsz *= o->quick ? 8 : 4)
        sizes[ns++] = bsz;
    int64_t max_elems = (sizes[ns - 1] / 2 + g - 1) / g * g;
    void *send = NULL, *recv = NULL;
    PX_CUDA_TRY(err, cudaMalloc(&send, (size_t)max_elems * 2));
    if (cudaMalloc(&recv, (size_t)max_elems * 2) != cudaSuccess) {
        cudaFree(send);
        return px_cuda_status(cudaGetLastError(), "cudaMalloc", __FILE__, __LINE__, err);
    }
    cudaStream_t s = NULL;
    px_status st = px_cuda_status(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking),
                                  "cudaStreamCreate", __FILE__, __LINE__, err);
    double x[16], t[16];
    int nfit = 0;
    for (int i = 0; i < ns && st == PX_OK; i++) {
        int64_t elems = (sizes[i] + 1) / 2;
        int64_t per_rank = kind == PX_CALIB_P2P ? elems : (elems + g - 1) / g;
        if (per_rank < 1)
            per_rank = 1;
        double best = INFINITY;
        long reps = 0;
        for (int batch = 0; batch < 4 && st == PX_OK; batch++) {
            MPI_Barrier(mpi_comm);
            double t0 = px_calib_now_s();
            long n_calls = batch == 0 ? 2 : reps;
            for (long c = 0; c < n_calls && st == PX_OK; c++)
                st = px_nccl_status(nccl_call(kind, comm, r, g, per_rank, send, recv, s), comm,
                                    px_calib_coll_name(kind), __FILE__, __LINE__, err);
            if (st == PX_OK)
                st = px_cuda_status(cudaStreamSynchronize(s), "cudaStreamSynchronize",
                                    __FILE__, __LINE__, err);
            double mine = (px_calib_now_s() - t0) / (double)n_calls, slowest = mine;
            MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, mpi_comm);
            if (batch == 0) { /* warm-up, and the count for the window */
                reps = (long)ceil(o->min_time_s / 3.0 / fmax(slowest, 1e-7));
                reps = reps < 1 ? 1 : reps > 5000 ? 5000 : reps;
                MPI_Bcast(&reps, 1, MPI_LONG, 0, mpi_comm);
            } else {
                best = fmin(best, slowest);
            }
        }
        /* (p2p is one grouped exchange, both directions at once: its time
         * is the one-way transfer's, unlike MPI's ping-pong) */
        if (st == PX_OK && sizes[i] >= PX_CALIB_FIT_MIN_BYTES) {
            x[nfit] = (double)sizes[i];
            t[nfit++] = best;
        }
    }
    if (s)
        cudaStreamDestroy(s);
    cudaFree(send);
    cudaFree(recv);
    if (st != PX_OK)
        return st;
    out->n_ranks = g;
    PX_TRY(px_calib_fit_lat_bw(x, t, nfit, &out->lat_s, &out->bw, err));
    px_calib_say(o, "nccl %-14s n=%-3d lat %7.2f us  bw %8.2f GB/s", px_calib_coll_name(kind), g,
                 out->lat_s * 1e6, out->bw / 1e9);
    return PX_OK;
}

/* Every rank calls it; ranks outside the group pass MPI_COMM_NULL. */
static px_status group_sweep(const px_calib_opts *o, MPI_Comm sub, px_calib_coll_kind first,
                             px_calib_coll_kind last, px_coll_point *pts, px_error *err)
{
    if (sub == MPI_COMM_NULL)
        return PX_OK;
    ncclComm_t comm = NULL;
    PX_TRY(px_nccl_comm_from_mpi(sub, &comm, err));
    px_status st = PX_OK;
    for (int k = first; k <= (int)last && st == PX_OK; k++)
        st = nccl_sweep(o, sub, comm, (px_calib_coll_kind)k, &pts[k], err);
    if (comm)
        ncclCommDestroy(comm);
    return st;
}

static void bcast_points(MPI_Comm world, px_coll_point *pts, int n)
{
    for (int i = 0; i < n; i++) {
        double v[3] = {(double)pts[i].n_ranks, pts[i].lat_s, pts[i].bw};
        MPI_Bcast(v, 3, MPI_DOUBLE, 0, world);
        pts[i].n_ranks = (int)v[0];
        pts[i].lat_s = v[1];
        pts[i].bw = v[2];
    }
}

px_status px_calib_cuda_run(const px_calib_opts *o, MPI_Comm world, bool use_mpi, px_hw *hw,
                            px_error *err)
{
    int rank = 0, size = 1, local_rank = 0, local_size = 1, device = 0;
    if (use_mpi) {
        MPI_Comm_rank(world, &rank);
        MPI_Comm_size(world, &size);
        PX_TRY(px_cuda_select_device(world, &local_rank, &local_size, &device, err));
    } else {
        PX_CUDA_TRY(err, cudaSetDevice(0));
    }
    PX_TRY(gemm_sweep(o, hw, err));
    if (use_mpi && size > 1) {
        /* every GPU measured at once: keep the mean throughput per shape */
        for (int i = 0; i < hw->n_gemm_points; i++) {
            double f = hw->gemm_points[i].flops, sum = f;
            MPI_Allreduce(&f, &sum, 1, MPI_DOUBLE, MPI_SUM, world);
            hw->gemm_points[i].flops = sum / size;
        }
    }
    px_calib_fit_gemm_summary(hw->gemm_points, hw->n_gemm_points, &hw->peak_flops,
                              &hw->gemm_eff_max, &hw->gemm_eff_half_dim);
    px_calib_say(o, "gemm: peak (best shape) %.1f TFLOP/s bf16", hw->peak_flops / 1e12);
    PX_TRY(hbm_sweep(o, hw, err));
    hw->dtype_bytes = 2;
    if (!use_mpi || size < 2)
        return PX_OK;

    hw->gpus_per_node = local_size;
    MPI_Bcast(&hw->gpus_per_node, 1, MPI_INT, 0, world);
    /* p2p between rank 0 and 1 (NVLink when they share a node) */
    px_coll_point p2p[PX_CALIB_COLL_COUNT];
    memset(p2p, 0, sizeof p2p);
    MPI_Comm pair = MPI_COMM_NULL;
    MPI_Comm_split(world, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    px_status st = group_sweep(o, pair, PX_CALIB_P2P, PX_CALIB_P2P, p2p, err);
    if (pair != MPI_COMM_NULL)
        MPI_Comm_free(&pair);
    int ok = st == PX_OK, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, world);
    if (!all_ok)
        return st != PX_OK ? st : PX_FAIL(err, PX_ERR_CUDA, "NCCL p2p failed on another rank");
    bcast_points(world, &p2p[PX_CALIB_P2P], 1);
    hw->intra_lat_s = p2p[PX_CALIB_P2P].lat_s;
    hw->intra_bw = p2p[PX_CALIB_P2P].bw;
    hw->n_coll_points = hw->n_allgather_points = 0;
    hw->n_reduce_scatter_points = hw->n_alltoall_points = 0;
    for (int g = 2; g <= size && g - 2 < PX_HW_MAX_COLL_POINTS; g++) {
        px_coll_point pts[PX_CALIB_COLL_COUNT];
        memset(pts, 0, sizeof pts);
        MPI_Comm sub = MPI_COMM_NULL;
        MPI_Comm_split(world, rank < g ? 0 : MPI_UNDEFINED, rank, &sub);
        st = group_sweep(o, sub, PX_CALIB_ALLREDUCE, PX_CALIB_ALLTOALL, pts, err);
        if (sub != MPI_COMM_NULL)
            MPI_Comm_free(&sub);
        ok = st == PX_OK;
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, world);
        if (!all_ok)
            return st != PX_OK ? st
                               : PX_FAIL(err, PX_ERR_CUDA, "NCCL timing failed on another rank");
        bcast_points(world, pts, PX_CALIB_COLL_COUNT);
        hw->allreduce_points[hw->n_coll_points++] = pts[PX_CALIB_ALLREDUCE];
        hw->allgather_points[hw->n_allgather_points++] = pts[PX_CALIB_ALLGATHER];
        hw->reduce_scatter_points[hw->n_reduce_scatter_points++] = pts[PX_CALIB_REDUCE_SCATTER];
        hw->alltoall_points[hw->n_alltoall_points++] = pts[PX_CALIB_ALLTOALL];
    }
    return PX_OK;
}
