/* test_nccl.c — the NCCL bootstrap and the collectives of the CUDA backend:
 * host-name hash -> local rank -> device, rank 0's id over MPI_Bcast, one
 * communicator per parallel group from px_layout's colours (ncclCommSplit),
 * then all-reduce (sum and max), all-gather, reduce-scatter and a grouped
 * send/receive ring and all-to-all-v with uneven counts (zeros included) in
 * fp32 and bf16, each checked against values computed on the host.
 * Run with one rank per GPU (`mpirun -np G`, or directly for one rank); exits
 * 77 without a GPU. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_comm_cuda.h"
#include "px_cuda_status.h"
#include "px_test.h"

#define N 1000

static void report(px_status st, px_error *err, const char *what)
{
    if (st != PX_OK) {
        char buf[1600];
        px_error_format(err, buf, sizeof buf);
        fprintf(stderr, "%s: %s\n", what, buf);
    }
    CHECK(st == PX_OK);
}

static float *dev_upload(const float *h, int64_t n)
{
    float *d = NULL;
    if (cudaMalloc((void **)&d, (size_t)n * sizeof *d) != cudaSuccess ||
        cudaMemcpy(d, h, (size_t)n * sizeof *d, cudaMemcpyHostToDevice) != cudaSuccess) {
        fprintf(stderr, "device upload failed\n");
        exit(1);
    }
    return d;
}

static void dev_download(float *h, const float *d, int64_t n, cudaStream_t s)
{
    if (cudaStreamSynchronize(s) != cudaSuccess ||
        cudaMemcpy(h, d, (size_t)n * sizeof *h, cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "device download failed\n");
        exit(1);
    }
}

/* Elements rank r sends rank j in the all-to-all-v case: zero where
 * (r + 2 j) % 3 == 0 (rank 0 to itself among them), else up to 3 (r + j + 1). */
static int64_t a2a_count(int r, int j)
{
    return (int64_t)((r + 2 * j) % 3) * (r + j + 1);
}

static float a2a_value(int r, int j, int64_t i)
{
    return (float)((r * 16 + j * 4 + i) % 256); /* integers < 256: exact in bf16 */
}

/* One all-to-all-v, checked element by element on the host.  nc != NULL: the
 * bare-communicator form over nc (me / n its rank and size); else the px_dim
 * form over DP. */
static void a2a_case(px_cuda_comm *c, ncclComm_t nc, int me, int n, ncclDataType_t dtype,
                     const char *what)
{
    int b = px_nccl_type_bytes(dtype);
    int64_t *send_n = malloc((size_t)(2 * n) * sizeof *send_n), *recv_n = send_n + n;
    int64_t st = 0, rt = 0;
    for (int j = 0; j < n; j++) {
        send_n[j] = a2a_count(me, j);
        recv_n[j] = a2a_count(j, me);
        st += send_n[j];
        rt += recv_n[j];
    }
    unsigned char *hs = malloc((size_t)(st + 1) * (size_t)b),
                  *hr = malloc((size_t)(rt + 1) * (size_t)b);
    int64_t o = 0;
    for (int j = 0; j < n; j++)
        for (int64_t i = 0; i < send_n[j]; i++, o++) {
            float v = a2a_value(me, j, i);
            if (b == 4) {
                memcpy(hs + o * 4, &v, 4);
            } else {
                uint32_t u; /* bf16: the high half of an exactly representable float */
                memcpy(&u, &v, 4);
                uint16_t h = (uint16_t)(u >> 16);
                memcpy(hs + o * 2, &h, 2);
            }
        }
    void *ds = NULL, *dr = NULL;
    cudaMalloc(&ds, (size_t)(st + 1) * (size_t)b);
    cudaMalloc(&dr, (size_t)(rt + 1) * (size_t)b);
    cudaMemcpy(ds, hs, (size_t)st * (size_t)b, cudaMemcpyHostToDevice);
    cudaMemset(dr, 0xff, (size_t)(rt + 1) * (size_t)b); /* NaN where nothing arrives */
    px_error e;
    px_error_clear(&e);
    report(nc ? px_nccl_all_to_all_v(nc, c->comm, dr, recv_n, ds, send_n, dtype, &e)
              : px_cuda_all_to_all_v(c, PX_DIM_DP, dr, recv_n, ds, send_n, dtype, &e),
           &e, what);
    cudaStreamSynchronize(c->comm);
    cudaMemcpy(hr, dr, (size_t)rt * (size_t)b, cudaMemcpyDeviceToHost);
    int bad = 0;
    o = 0;
    for (int j = 0; j < n; j++)
        for (int64_t i = 0; i < recv_n[j]; i++, o++) {
            float got = 0.0f;
            if (b == 4) {
                memcpy(&got, hr + o * 4, 4);
            } else {
                uint16_t h;
                memcpy(&h, hr + o * 2, 2);
                uint32_t u = (uint32_t)h << 16;
                memcpy(&got, &u, 4);
            }
            bad += got != a2a_value(j, me, i);
        }
    CHECK_MSG(bad == 0, "all_to_all_v %s: %d of %lld elements wrong", what, bad, (long long)rt);
    printf("  all_to_all_v %-10s %d ranks, %lld elements received: %s\n", what, n,
           (long long)rt, bad ? "FAIL" : "ok");
    cudaFree(ds);
    cudaFree(dr);
    free(hs);
    free(hr);
    free(send_n);
}

/* Refused before anything is issued (so no rank waits on another): a
 * negative count, an own part whose two counts differ, overlapping buffers. */
static void a2a_rejects(px_cuda_comm *c, int rank, int size)
{
    int64_t *cnt = calloc((size_t)(2 * size), sizeof *cnt), *send_n = cnt, *recv_n = cnt + size;
    float *d = NULL;
    cudaMalloc((void **)&d, 64 * sizeof *d);
    px_error e;
    px_error_clear(&e);
    send_n[size - 1] = -1;
    CHECK(px_nccl_all_to_all_v(c->world, c->comm, d + 32, recv_n, d, send_n, ncclFloat32, &e) ==
          PX_ERR_INVALID);
    send_n[size - 1] = 0;
    send_n[rank] = 2;
    recv_n[rank] = 3;
    CHECK(px_nccl_all_to_all_v(c->world, c->comm, d + 32, recv_n, d, send_n, ncclFloat32, &e) ==
          PX_ERR_INVALID);
    CHECK(strstr(e.msg, "recv_n") != NULL);
    if (size > 1) {
        recv_n[rank] = 2;
        send_n[(rank + 1) % size] = 8;
        recv_n[(rank + 1) % size] = 8;
        CHECK(px_nccl_all_to_all_v(c->world, c->comm, d + 4, recv_n, d, send_n, ncclFloat32,
                                   &e) == PX_ERR_INVALID);
    }
    printf("  all_to_all_v rejects bad counts and overlapping buffers: %s\n",
           px_test_failures ? "FAIL" : "ok");
    cudaFree(d);
    free(cnt);
}

int main(int argc, char **argv)
{
    if (px_cuda_device_count() <= 0) {
        printf("# nccl: no CUDA device: skipped\n");
        return 77;
    }
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    px_parallel par;
    px_parallel_init(&par);
    par.tp = size % 2 == 0 ? 2 : 1;
    par.dp = size / par.tp;
    px_error err;
    px_error_clear(&err);
    px_layout lay;
    report(px_layout_init(&lay, &par, &err), &err, "px_layout_init");
    px_cuda_comm c;
    px_status st = px_cuda_comm_init(&c, MPI_COMM_WORLD, &lay, &err);
    report(st, &err, "px_cuda_comm_init");
    if (st != PX_OK) {
        MPI_Finalize();
        return 1;
    }
    if (rank == 0)
        printf("# nccl: %d ranks, tp %d x dp %d, rank 0 on device %d (local %d of %d)\n", size,
               par.tp, par.dp, c.device, c.local_rank, c.local_size);

    float h[N], got[N];
    int tp = c.group_size[PX_DIM_TP], tpr = c.group_rank[PX_DIM_TP];
    /* all-reduce sum and max over TP */
    for (int i = 0; i < N; i++)
        h[i] = (float)(rank + 1) + 0.5f * (float)i;
    float *d = dev_upload(h, N);
    report(px_cuda_allreduce(&c, PX_DIM_TP, d, N, ncclFloat32, PX_RED_SUM, &err), &err,
           "allreduce");
    dev_download(got, d, N, c.comm);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        double want = 0.0; /* members of my TP group: world ranks of the group */
        for (int j = 0; j < tp; j++)
            want += px_layout_group_member(&lay, rank, PX_DIM_TP, j) + 1 + 0.5 * i;
        bad += got[i] != (float)want;
    }
    CHECK_MSG(bad == 0, "allreduce sum: %d wrong", bad);
    report(px_cuda_allreduce(&c, PX_DIM_TP, d, N, ncclFloat32, PX_RED_MAX, &err), &err,
           "allreduce max");
    float sum0 = got[0];
    dev_download(got, d, N, c.comm);
    CHECK(got[0] == sum0); /* every rank holds the same sums now: max = that sum */

    /* all-gather over DP: part r of the result is r's coordinate. */
    int dp = c.group_size[PX_DIM_DP], dpr = c.group_rank[PX_DIM_DP];
    float *part = NULL, *all = NULL;
    cudaMalloc((void **)&part, 16 * sizeof(float));
    cudaMalloc((void **)&all, (size_t)(16 * dp) * sizeof(float));
    float hp[16];
    for (int i = 0; i < 16; i++)
        hp[i] = (float)(100 * dpr + i);
    cudaMemcpy(part, hp, sizeof hp, cudaMemcpyHostToDevice);
    report(px_cuda_allgather(&c, PX_DIM_DP, part, all, 16, ncclFloat32, &err), &err,
           "allgather");
    float *ha = malloc((size_t)(16 * dp) * sizeof *ha);
    dev_download(ha, all, 16 * dp, c.comm);
    bad = 0;
    for (int r = 0; r < dp; r++)
        for (int i = 0; i < 16; i++)
            bad += ha[r * 16 + i] != (float)(100 * r + i);
    CHECK_MSG(bad == 0, "allgather: %d wrong", bad);

    /* reduce-scatter over DP: sum of dp copies of 0..16dp-1, my part. */
    for (int i = 0; i < 16 * dp; i++)
        ha[i] = (float)i;
    cudaMemcpy(all, ha, (size_t)(16 * dp) * sizeof(float), cudaMemcpyHostToDevice);
    report(px_cuda_reduce_scatter(&c, PX_DIM_DP, all, part, 16, ncclFloat32, &err), &err,
           "reduce_scatter");
    dev_download(hp, part, 16, c.comm);
    bad = 0;
    for (int i = 0; i < 16; i++)
        bad += hp[i] != (float)(dp * (16 * dpr + i));
    CHECK_MSG(bad == 0, "reduce_scatter: %d wrong", bad);

    /* grouped send/receive around the world ring */
    if (size > 1) {
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        for (int i = 0; i < N; i++)
            h[i] = (float)(rank * 1000 + i);
        float *sb = dev_upload(h, N), *rb = dev_upload(h, N);
        px_cuda_p2p_op s = {next, sb, N, ncclFloat32}, r = {prev, rb, N, ncclFloat32};
        report(px_cuda_p2p(&c, &s, 1, &r, 1, &err), &err, "p2p ring");
        dev_download(got, rb, N, c.comm);
        bad = 0;
        for (int i = 0; i < N; i++)
            bad += got[i] != (float)(prev * 1000 + i);
        CHECK_MSG(bad == 0, "p2p ring: %d wrong", bad);
    }
    /* all-to-all-v: fp32 over the world communicator (the bare form), bf16
     * over DP (the px_dim form).  Uneven counts with zeros, the own part
     * included: rank r sends a2a_count(r, j) elements to j, each naming
     * (r, j, i) in a value exact in bf16. */
    a2a_case(&c, c.world, rank, size, ncclFloat32, "world fp32");
    a2a_case(&c, NULL, dpr, dp, ncclBfloat16, "dp bf16");
    a2a_rejects(&c, rank, size);
    (void)tpr;
    px_cuda_comm_destroy(&c);
    int fails = px_test_failures, all_fails = 0;
    MPI_Allreduce(&fails, &all_fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("# nccl: %s\n", all_fails ? "FAIL" : "ok");
    MPI_Finalize();
    return all_fails ? 1 : 0;
}
