/* px_calib_cuda.c — GPU calibration (see header).  Every time is taken with
 * CUDA events around repeated launches after warm-up launches. */
#include "px_calib_cuda.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_comm_cuda.h"
#include "px_cuda_gemm.h"
#include "px_cuda_status.h"

typedef struct {
    cudaStream_t stream;
    cudaEvent_t t0, t1;
    px_cuda_blas *blas;
    float *a, *b, *c; /* big enough for every shape */
    FILE *log;
} cal;

static px_status time_gemm(cal *k, int64_t m, int64_t n, int64_t kk, int reps, double *flops,
                           px_error *err)
{
    /* The forward form of the executor: out[m,n] = inp[m,k] W[n,k]^T. */
    for (int i = 0; i < 2; i++)
        PX_TRY(px_cuda_gemm_f32(k->blas, false, true, m, n, kk, 1.0f, k->a, kk, k->b, kk, 0.0f,
                                k->c, n, PX_CUDA_F32_BF16_TC, err));
    PX_CUDA_TRY(err, cudaEventRecord(k->t0, k->stream));
    for (int i = 0; i < reps; i++)
        PX_TRY(px_cuda_gemm_f32(k->blas, false, true, m, n, kk, 1.0f, k->a, kk, k->b, kk, 0.0f,
                                k->c, n, PX_CUDA_F32_BF16_TC, err));
    PX_CUDA_TRY(err, cudaEventRecord(k->t1, k->stream));
    PX_CUDA_TRY(err, cudaEventSynchronize(k->t1));
    float ms = 0.0f;
    PX_CUDA_TRY(err, cudaEventElapsedTime(&ms, k->t0, k->t1));
    *flops = 2.0 * (double)m * (double)n * (double)kk * reps / (ms * 1e-3);
    return PX_OK;
}

static px_status gemms(cal *k, px_hw *hw, bool quick, px_error *err)
{
    /* The shapes of a transformer step: tokens x (qkv, proj, MLP up/down,
     * LM head) and the weight-gradient form with k = tokens. */
    static const int64_t hs_full[] = {1024, 2048, 4096, 8192}, hs_quick[] = {2048, 4096};
    static const int64_t ts_full[] = {1024, 4096, 8192}, ts_quick[] = {4096};
    const int64_t *hs = quick ? hs_quick : hs_full, *ts = quick ? ts_quick : ts_full;
    int nh = quick ? 2 : 4, nt = quick ? 1 : 3, reps = quick ? 3 : 10;
    hw->n_gemm_points = 0;
    double best = 0.0;
    for (int i = 0; i < nh; i++)
        for (int j = 0; j < nt; j++) {
            int64_t h = hs[i], t = ts[j];
            int64_t shapes[][3] = {{t, h, h},     {t, 3 * h, h}, {t, 8 * h, h},
                                   {t, h, 4 * h}, {h, h, t},     {t, 32000, h}};
            for (int s = 0; s < 6 && hw->n_gemm_points < PX_HW_MAX_GEMM_POINTS; s++) {
                double f = 0.0;
                PX_TRY(time_gemm(k, shapes[s][0], shapes[s][1], shapes[s][2], reps, &f, err));
                px_gemm_point *p = &hw->gemm_points[hw->n_gemm_points++];
                p->m = shapes[s][0];
                p->n = shapes[s][1];
                p->k = shapes[s][2];
                p->flops = f;
                best = f > best ? f : best;
                if (k->log)
                    fprintf(k->log, "calibrate-cuda: gemm %6lld x %6lld x %6lld  %7.1f TFLOP/s\n",
                            (long long)p->m, (long long)p->n, (long long)p->k, f / 1e12);
            }
        }
    if (hw->peak_flops <= 0.0)
        hw->peak_flops = best; /* no datasheet peak: the best measured one */
    hw->gemm_eff_max = best / hw->peak_flops;
    return PX_OK;
}

static px_status hbm(cal *k, px_hw *hw, bool quick, px_error *err)
{
    size_t bytes = (size_t)1 << (quick ? 29 : 31);
    void *x = NULL, *y = NULL;
    PX_CUDA_TRY(err, cudaMalloc(&x, bytes));
    cudaError_t e = cudaMalloc(&y, bytes);
    if (e != cudaSuccess) {
        cudaFree(x);
        return px_cuda_status(e, "cudaMalloc (bandwidth buffer)", __FILE__, __LINE__, err);
    }
    int reps = quick ? 5 : 20;
    px_status st = PX_OK;
    float ms = 0.0f;
    for (int i = 0; i < reps + 2 && st == PX_OK; i++) {
        if (i == 2)
            st = px_cuda_status(cudaEventRecord(k->t0, k->stream), "cudaEventRecord", __FILE__,
                                __LINE__, err);
        if (st == PX_OK)
            st = px_cuda_status(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, k->stream),
                                "cudaMemcpyAsync", __FILE__, __LINE__, err);
    }
    if (st == PX_OK)
        st = px_cuda_status(cudaEventRecord(k->t1, k->stream), "cudaEventRecord", __FILE__,
                            __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaEventSynchronize(k->t1), "cudaEventSynchronize", __FILE__,
                            __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaEventElapsedTime(&ms, k->t0, k->t1), "cudaEventElapsedTime",
                            __FILE__, __LINE__, err);
    cudaFree(x);
    cudaFree(y);
    if (st != PX_OK)
        return st;
    /* A copy reads and writes every byte. */
    hw->hbm_bw = 2.0 * (double)bytes * reps / (ms * 1e-3);
    hw->mem_bound_eff = 1.0; /* measured, not a datasheet number */
    if (k->log)
        fprintf(k->log, "calibrate-cuda: device copy %.0f GB/s (read + write)\n", hw->hbm_bw / 1e9);
    return PX_OK;
}

/* NCCL all-reduce over every rank: time = lat + bytes / bw fitted on
 * 1 MiB..256 MiB (bytes of the buffer, the algorithm bandwidth). */
static px_status collectives(cal *k, px_hw *hw, MPI_Comm world, bool quick, px_error *err)
{
    int size = 1;
    MPI_Comm_size(world, &size);
    if (size < 2)
        return PX_OK;
    ncclComm_t nc = NULL;
    PX_TRY(px_nccl_comm_from_mpi(world, &nc, err));
    double xs[16], ys[16];
    int n = 0;
    px_status st = PX_OK;
    for (int64_t bytes = (int64_t)1 << 20; bytes <= ((int64_t)1 << 28) && st == PX_OK;
         bytes <<= (quick ? 4 : 2)) {
        int64_t count = bytes / 4;
        int reps = 5;
        ncclResult_t r = ncclSuccess;
        for (int i = 0; i < reps + 1 && r == ncclSuccess; i++) {
            if (i == 1)
                cudaEventRecord(k->t0, k->stream);
            r = ncclAllReduce(k->c, k->c, (size_t)count, ncclFloat32, ncclSum, nc, k->stream);
        }
        if (r != ncclSuccess) {
            st = px_nccl_status(r, nc, "ncclAllReduce", __FILE__, __LINE__, err);
            break;
        }
        cudaEventRecord(k->t1, k->stream);
        float ms = 0.0f;
        st = px_cuda_status(cudaEventSynchronize(k->t1), "cudaEventSynchronize", __FILE__,
                            __LINE__, err);
        if (st == PX_OK)
            cudaEventElapsedTime(&ms, k->t0, k->t1);
        double t = ms * 1e-3 / reps;
        /* the slowest rank's time is the collective's */
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, world);
        xs[n] = (double)bytes;
        ys[n] = t;
        n++;
        if (k->log)
            fprintf(k->log, "calibrate-cuda: all-reduce %d ranks %8.1f MiB  %.3f ms\n", size,
                    bytes / 1048576.0, t * 1e3);
    }
    ncclCommDestroy(nc);
    if (st != PX_OK || n < 2)
        return st;
    /* least squares t = lat + bytes / bw */
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        sx += xs[i];
        sy += ys[i];
        sxx += xs[i] * xs[i];
        sxy += xs[i] * ys[i];
    }
    double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx), lat = (sy - slope * sx) / n;
    if (slope > 0 && hw->n_coll_points < PX_HW_MAX_COLL_POINTS) {
        px_coll_point *p = &hw->allreduce_points[hw->n_coll_points++];
        p->n_ranks = size;
        p->lat_s = lat > 0 ? lat : 0;
        p->bw = 1.0 / slope;
        /* ring all-reduce moves 2 (n-1)/n of the buffer per rank: the link bandwidth */
        hw->intra_bw = p->bw * 2.0 * (size - 1) / size;
        hw->intra_lat_s = p->lat_s;
    }
    return PX_OK;
}

px_status px_calib_cuda(px_hw *hw, const px_calib_cuda_opts *opts, MPI_Comm world,
                        px_error *err)
{
    px_calib_cuda_opts def = {false, stderr};
    const px_calib_cuda_opts *o = opts ? opts : &def;
    cal k;
    memset(&k, 0, sizeof k);
    k.log = o->progress;
    int local = 0, local_size = 0, dev = 0;
    PX_TRY(px_cuda_select_device(world, &local, &local_size, &dev, err));
    struct cudaDeviceProp prop;
    PX_CUDA_TRY(err, cudaGetDeviceProperties(&prop, dev));
    if (k.log)
        fprintf(k.log, "calibrate-cuda: device %d: %s, %.1f GB, sm_%d%d\n", dev, prop.name,
                prop.totalGlobalMem / 1e9, prop.major, prop.minor);
    hw->hbm_bytes = (int64_t)prop.totalGlobalMem;
    hw->dtype_bytes = 4; /* the executor's engine keeps fp32 buffers */
    if (local_size > 1)
        hw->gpus_per_node = local_size > hw->gpus_per_node ? local_size : hw->gpus_per_node;

    PX_CUDA_TRY(err, cudaStreamCreateWithFlags(&k.stream, cudaStreamNonBlocking));
    px_status st = px_cuda_status(cudaEventCreate(&k.t0), "cudaEventCreate", __FILE__, __LINE__,
                                  err);
    if (st == PX_OK)
        st = px_cuda_status(cudaEventCreate(&k.t1), "cudaEventCreate", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_blas_new(k.stream, &k.blas, err);
    /* largest operands (h 8192, 8192 tokens): a = m x k up to 8192 x 32768
     * (1 GiB), b = n x k up to 65536 x 8192 and c = m x n up to 8192 x 65536
     * (2 GiB each) */
    size_t big = (size_t)8192 * 65536 * sizeof(float);
    if (st == PX_OK)
        st = px_cuda_status(cudaMalloc((void **)&k.a, big / 2), "cudaMalloc", __FILE__, __LINE__,
                            err);
    if (st == PX_OK)
        st = px_cuda_status(cudaMalloc((void **)&k.b, big), "cudaMalloc", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaMalloc((void **)&k.c, big), "cudaMalloc", __FILE__, __LINE__, err);
    /* Zeroed operands: uninitialised memory could hold NaN or denormal
     * patterns; the tensor-core time does not otherwise depend on values. */
    if (st == PX_OK)
        st = px_cuda_status(cudaMemsetAsync(k.a, 0, big / 2, k.stream), "cudaMemset", __FILE__,
                            __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaMemsetAsync(k.b, 0, big, k.stream), "cudaMemset", __FILE__,
                            __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaMemsetAsync(k.c, 0, big, k.stream), "cudaMemset", __FILE__,
                            __LINE__, err);
    if (st == PX_OK)
        st = gemms(&k, hw, o->quick, err);
    if (st == PX_OK)
        st = hbm(&k, hw, o->quick, err);
    if (st == PX_OK)
        st = collectives(&k, hw, world, o->quick, err);
    cudaFree(k.a);
    cudaFree(k.b);
    cudaFree(k.c);
    px_cuda_blas_delete(k.blas);
    if (k.t0)
        cudaEventDestroy(k.t0);
    if (k.t1)
        cudaEventDestroy(k.t1);
    cudaStreamDestroy(k.stream);
    return st;
}
