/* test_backend_cuda.c — the executor's CUDA backend table (backend_cuda.cu)
 * on one GPU: memory (zeroed allocations, copies both ways, tracked peak),
 * a kernel through the CPU-signature table against the CPU kernel, a
 * one-member all-reduce, and the error path of the void kernels: a refused
 * call (attention asked for its S x S probabilities) is kept and returned by
 * the next sync with its message.  Exits 77 without a GPU. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_backend_cuda.h"
#include "px_cuda_status.h"
#include "px_kernels_cpu.h"
#include "px_test.h"

int main(int argc, char **argv)
{
    if (px_cuda_device_count() <= 0) {
        printf("# backend_cuda: no CUDA device: skipped\n");
        return 77;
    }
    MPI_Init(&argc, &argv);
    px_error err;
    px_error_clear(&err);
    px_backend be;
    px_status st = px_backend_cuda_create(&be, MPI_COMM_WORLD, &err);
    CHECK(st == PX_OK);
    if (st != PX_OK) {
        fprintf(stderr, "create: %s\n", err.msg);
        MPI_Finalize();
        return 1;
    }
    CHECK(strcmp(be.name, "cuda") == 0);

    /* zeroed allocation, upload, download */
    enum { T = 37, C = 200 };
    float *x = NULL, *w = NULL, *o = NULL, *r = NULL;
    CHECK(be.alloc(&be, T * C * 4, (void **)&x, &err) == PX_OK);
    CHECK(be.alloc(&be, C * 4, (void **)&w, &err) == PX_OK);
    CHECK(be.alloc(&be, T * C * 4, (void **)&o, &err) == PX_OK);
    CHECK(be.alloc(&be, T * 4, (void **)&r, &err) == PX_OK);
    CHECK(px_backend_cuda_peak_bytes(&be) >= (int64_t)(2 * T * C + C + T) * 4);
    static float hx[T * C], hw[C], ho[T * C], hr[T], got[T * C];
    be.download(&be, got, o, sizeof got);
    int nonzero = 0;
    for (int i = 0; i < T * C; i++)
        nonzero += got[i] != 0.0f;
    CHECK_MSG(nonzero == 0, "alloc must return zeroed memory: %d non-zero", nonzero);
    srand(7);
    for (int i = 0; i < T * C; i++)
        hx[i] = (float)rand() / RAND_MAX * 4.0f - 2.0f;
    for (int i = 0; i < C; i++)
        hw[i] = 0.5f + (float)rand() / RAND_MAX;
    be.upload(&be, x, hx, sizeof hx);
    be.upload(&be, w, hw, sizeof hw);

    /* a kernel through the table, against the CPU */
    be.k->rmsnorm_fwd(o, r, x, w, T, C, 1e-5f);
    CHECK(be.sync(&be, &err) == PX_OK);
    be.download(&be, got, o, sizeof got);
    px_cpu_rmsnorm_fwd(ho, hr, hx, hw, T, C, 1e-5f);
    int misses = 0; /* |got - ref| <= 1e-5 + 1e-4 |ref| (fp32 both sides) */
    for (int i = 0; i < T * C; i++)
        misses += !(fabs(got[i] - ho[i]) <= 1e-5 + 1e-4 * fabs(ho[i]));
    CHECK_MSG(misses == 0, "rmsnorm through the backend: %d of %d outside tolerance", misses,
              T * C);

    /* copy and a one-member all-reduce (no NCCL communicator: a no-op) */
    px_comm solo = {MPI_COMM_SELF, 1, 0, NULL};
    CHECK(be.comm_init(&be, &solo, &err) == PX_OK);
    CHECK(solo.native == NULL);
    be.copy(&be, o, x, sizeof hx);
    CHECK(be.all_reduce(&be, o, T * C, PX_F32, PX_REDUCE_SUM, &solo, &err) == PX_OK);
    be.download(&be, got, o, sizeof got);
    CHECK(memcmp(got, hx, sizeof hx) == 0);

    /* the error path: a refused kernel call surfaces at the next sync */
    be.k->attention_fwd(o, r, o /* probs: refused */, x, 4, 1, 1, 1, 64);
    px_error_clear(&err);
    st = be.sync(&be, &err);
    CHECK(st == PX_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "probs") != NULL);
    printf("# backend_cuda: refused call reported as: %s\n", err.msg);

    be.free(&be, x);
    be.free(&be, w);
    be.free(&be, o);
    be.free(&be, r);
    be.destroy(&be);
    int rc = px_test_result("backend_cuda");
    MPI_Finalize();
    return rc;
}
