/* px_comm_cuda.c — NCCL bootstrap through MPI and the group communicators
 * (see header). */
#include "px_comm_cuda.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "px_cuda_status.h"
#include "px_error_mpi.h"

enum { PCI_ID_LEN = 32 }; /* "0000:00:00.0" with room to spare */

/* djb2 over the host name: equal on one node, and collisions between nodes
 * only merge local-rank counts (a wrong GPU choice, caught by NCCL). */
static uint64_t host_hash(void)
{
    char name[256];
    if (gethostname(name, sizeof name) != 0)
        name[0] = '\0';
    name[sizeof name - 1] = '\0';
    uint64_t h = 5381;
    for (const char *p = name; *p; p++)
        h = h * 33 + (unsigned char)*p;
    return h;
}


int px_nccl_type_bytes(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

px_status px_cuda_select_device(MPI_Comm mpi_world, int *local_rank, int *local_size,
                                int *device, px_error *err)
{
    int rank = 0, size = 1;
    PX_MPI_TRY(err, MPI_Comm_rank(mpi_world, &rank));
    PX_MPI_TRY(err, MPI_Comm_size(mpi_world, &size));
    uint64_t *hashes = malloc((size_t)size * sizeof *hashes);
    if (!hashes)
        return PX_FAIL(err, PX_ERR_NOMEM, "host hashes");
    hashes[rank] = host_hash();
    int rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, hashes, 1, MPI_UINT64_T,
                           mpi_world);
    if (rc != MPI_SUCCESS) {
        free(hashes);
        return px_mpi_check(rc, "MPI_Allgather(host hashes)", err);
    }
    *local_rank = 0;
    *local_size = 0;
    for (int r = 0; r < size; r++) {
        if (hashes[r] != hashes[rank])
            continue;
        if (r < rank)
            (*local_rank)++;
        (*local_size)++;
    }
    int n_dev = px_cuda_device_count();
    /* One visible device: the launcher already gave each rank its own GPU
     * (CUDA_VISIBLE_DEVICES per rank, as Slurm does).  Several: pick by
     * node-local rank, one rank per GPU. */
    *device = n_dev == 1 ? 0 : *local_rank;
    char bus[PCI_ID_LEN] = "";
    bool usable = n_dev >= 1 && !(n_dev > 1 && *local_size > n_dev);
    if (usable && (cudaSetDevice(*device) != cudaSuccess ||
                   cudaDeviceGetPCIBusId(bus, PCI_ID_LEN, *device) != cudaSuccess))
        bus[0] = '\0';
    /* Every rank learns every rank's GPU (PCI bus id, "" for none) before any
     * gives up, so all fail together, and two ranks of one node on one GPU
     * (which NCCL refuses with a bare "invalid usage") get a clear error. */
    char *all = malloc((size_t)size * PCI_ID_LEN);
    if (!all) {
        free(hashes);
        return PX_FAIL(err, PX_ERR_NOMEM, "PCI bus ids");
    }
    rc = MPI_Allgather(bus, PCI_ID_LEN, MPI_CHAR, all, PCI_ID_LEN, MPI_CHAR, mpi_world);
    px_status st = px_mpi_check(rc, "MPI_Allgather(PCI bus ids)", err);
    for (int r = 0; r < size && !st; r++) {
        const char *b = all + (size_t)r * PCI_ID_LEN;
        if (!b[0])
            st = PX_FAIL(err, PX_ERR_CUDA,
                         r == rank && n_dev > 1
                             ? "rank %d: %d ranks on this node but %d GPUs; launch one rank "
                               "per GPU"
                             : "rank %d: no CUDA device it can use (%d ranks on its node, %d GPUs "
                               "visible here)",
                         r, *local_size, n_dev);
        for (int q = 0; q < r && !st; q++)
            if (hashes[q] == hashes[r] && !strcmp(b, all + (size_t)q * PCI_ID_LEN))
                st = PX_FAIL(err, PX_ERR_INVALID,
                             "ranks %d and %d of one node share GPU %s: launch one rank per "
                             "GPU (CUDA_VISIBLE_DEVICES per rank, or fewer ranks)",
                             q, r, b);
    }
    free(all);
    free(hashes);
    return st;
}

/* Group rank 0 makes the NCCL id and broadcasts it with a status word, so a
 * failure there ends every member's wait instead of hanging them in the
 * broadcast. */
static px_status share_unique_id(MPI_Comm group, int rank, ncclUniqueId *id, px_error *err)
{
    struct {
        int ok;
        ncclUniqueId id;
    } msg;
    memset(&msg, 0, sizeof msg);
    px_status st = PX_OK;
    if (rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&msg.id);
        if (r != ncclSuccess)
            st = px_nccl_status(r, NULL, "ncclGetUniqueId", __FILE__, __LINE__, err);
        msg.ok = st == PX_OK;
    }
    PX_MPI_TRY(err, MPI_Bcast(&msg, (int)sizeof msg, MPI_BYTE, 0, group));
    if (st)
        return st;
    if (!msg.ok)
        return PX_FAIL(err, PX_ERR_CUDA, "NCCL: the group's rank 0 could not create its id");
    *id = msg.id;
    return PX_OK;
}

px_status px_nccl_comm_from_mpi(MPI_Comm group, ncclComm_t *out, px_error *err)
{
    *out = NULL;
    int rank = 0, size = 1;
    PX_MPI_TRY(err, MPI_Comm_rank(group, &rank));
    PX_MPI_TRY(err, MPI_Comm_size(group, &size));
    if (size <= 1)
        return PX_OK;
    ncclUniqueId id;
    PX_TRY(share_unique_id(group, rank, &id, err));
    PX_NCCL_TRY(err, NULL, ncclCommInitRank(out, size, id, rank));
    return PX_OK;
}

px_status px_cuda_comm_init(px_cuda_comm *c, MPI_Comm mpi_world, const px_layout *lay,
                            px_error *err)
{
    memset(c, 0, sizeof *c);
    c->layout = *lay;
    PX_MPI_TRY(err, MPI_Comm_rank(mpi_world, &c->world_rank));
    PX_MPI_TRY(err, MPI_Comm_size(mpi_world, &c->world_size));
    if (c->world_size != lay->world)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "MPI world has %d ranks but the plan's layout has %d GPUs; launch "
                       "with mpirun -np %d",
                       c->world_size, lay->world, lay->world);

    PX_TRY(px_cuda_select_device(mpi_world, &c->local_rank, &c->local_size, &c->device, err));
    PX_CUDA_TRY(err, cudaStreamCreateWithFlags(&c->compute, cudaStreamNonBlocking));
    PX_CUDA_TRY(err, cudaStreamCreateWithFlags(&c->comm, cudaStreamNonBlocking));
    PX_CUDA_TRY(err, cudaEventCreateWithFlags(&c->compute_ready, cudaEventDisableTiming));
    PX_CUDA_TRY(err, cudaEventCreateWithFlags(&c->comm_done, cudaEventDisableTiming));

    /* World communicator: rank 0's id, broadcast over MPI. */
    ncclUniqueId id;
    PX_TRY(share_unique_id(mpi_world, c->world_rank, &id, err));
    PX_NCCL_TRY(err, NULL, ncclCommInitRank(&c->world, c->world_size, id, c->world_rank));

    /* One communicator per dimension, split with the layout's colour/key.
     * ncclCommSplit is collective over the parent: every rank calls it for
     * every dimension, in the same order, even where its group has one member
     * (those ranks pass NCCL_SPLIT_NOCOLOR and get no communicator). */
    for (int d = 0; d < PX_DIM_COUNT; d++) {
        int colour = 0, key = 0;
        px_layout_group(lay, c->world_rank, (px_dim)d, &colour, &key);
        int size = px_layout_group_size(lay, (px_dim)d);
        c->group_size[d] = size;
        c->group_rank[d] = key;
        ncclComm_t sub = NULL;
        PX_NCCL_TRY(err, c->world,
                    ncclCommSplit(c->world, size > 1 ? colour : NCCL_SPLIT_NOCOLOR, key, &sub,
                                  NULL));
        c->group[d] = size > 1 ? sub : NULL;
        if (size > 1) {
            int n = 0, r = 0;
            PX_NCCL_TRY(err, sub, ncclCommCount(sub, &n));
            PX_NCCL_TRY(err, sub, ncclCommUserRank(sub, &r));
            if (n != size || r != key)
                return PX_FAIL(err, PX_ERR_INTERNAL,
                               "rank %d: NCCL %s group has %d members (rank %d), layout says "
                               "%d (rank %d)",
                               c->world_rank, px_dim_name((px_dim)d), n, r, size, key);
        }
    }
    return PX_OK;
}

void px_cuda_comm_destroy(px_cuda_comm *c)
{
    if (c->comm)
        (void)cudaStreamSynchronize(c->comm);
    if (c->compute)
        (void)cudaStreamSynchronize(c->compute);
    for (int d = 0; d < PX_DIM_COUNT; d++)
        if (c->group[d])
            (void)ncclCommDestroy(c->group[d]);
    if (c->world)
        (void)ncclCommDestroy(c->world);
    if (c->compute_ready)
        (void)cudaEventDestroy(c->compute_ready);
    if (c->comm_done)
        (void)cudaEventDestroy(c->comm_done);
    if (c->compute)
        (void)cudaStreamDestroy(c->compute);
    if (c->comm)
        (void)cudaStreamDestroy(c->comm);
    memset(c, 0, sizeof *c);
}

px_status px_cuda_comm_after_compute(px_cuda_comm *c, px_error *err)
{
    PX_CUDA_TRY(err, cudaEventRecord(c->compute_ready, c->compute));
    PX_CUDA_TRY(err, cudaStreamWaitEvent(c->comm, c->compute_ready, 0));
    return PX_OK;
}

px_status px_cuda_comm_join(px_cuda_comm *c, px_error *err)
{
    PX_CUDA_TRY(err, cudaEventRecord(c->comm_done, c->comm));
    PX_CUDA_TRY(err, cudaStreamWaitEvent(c->compute, c->comm_done, 0));
    return PX_OK;
}

static px_status check_args(const px_cuda_comm *c, px_dim d, int64_t n_elems,
                            ncclDataType_t dtype, const char *what, px_error *err)
{
    if (d < 0 || d >= PX_DIM_COUNT)
        return PX_FAIL(err, PX_ERR_INVALID, "%s: dimension %d out of range", what, (int)d);
    if (n_elems < 0 || px_nccl_type_bytes(dtype) == 0)
        return PX_FAIL(err, PX_ERR_INVALID, "%s over %s: %lld elements of NCCL type %d", what,
                       px_dim_name(d), (long long)n_elems, (int)dtype);
    (void)c;
    return PX_OK;
}

px_status px_cuda_allreduce(px_cuda_comm *c, px_dim d, void *buf, int64_t n_elems,
                            ncclDataType_t dtype, px_cuda_redop op, px_error *err)
{
    PX_TRY(check_args(c, d, n_elems, dtype, "allreduce", err));
    if (!c->group[d] || n_elems == 0)
        return PX_OK;
    PX_NCCL_TRY(err, c->group[d],
                ncclAllReduce(buf, buf, (size_t)n_elems, dtype,
                              op == PX_RED_MAX ? ncclMax : ncclSum, c->group[d], c->comm));
    return PX_OK;
}

/* A group of one (no communicator): all-gather and reduce-scatter are a copy
 * of the rank's own part (nothing to do in place). */
static px_status copy_alone(px_cuda_comm *c, const void *send, void *recv, int64_t n_elems,
                            ncclDataType_t dtype, px_error *err)
{
    if (send != recv)
        PX_CUDA_TRY(err, cudaMemcpyAsync(recv, send,
                                         (size_t)n_elems * (size_t)px_nccl_type_bytes(dtype),
                                         cudaMemcpyDeviceToDevice, c->comm));
    return PX_OK;
}

px_status px_cuda_allgather(px_cuda_comm *c, px_dim d, const void *send, void *recv,
                            int64_t n_elems_per_rank, ncclDataType_t dtype, px_error *err)
{
    PX_TRY(check_args(c, d, n_elems_per_rank, dtype, "allgather", err));
    if (n_elems_per_rank == 0)
        return PX_OK;
    if (!c->group[d])
        return copy_alone(c, send, recv, n_elems_per_rank, dtype, err);
    PX_NCCL_TRY(err, c->group[d],
                ncclAllGather(send, recv, (size_t)n_elems_per_rank, dtype, c->group[d],
                              c->comm));
    return PX_OK;
}

px_status px_cuda_reduce_scatter(px_cuda_comm *c, px_dim d, const void *send, void *recv,
                                 int64_t n_elems_per_rank, ncclDataType_t dtype,
                                 px_error *err)
{
    PX_TRY(check_args(c, d, n_elems_per_rank, dtype, "reduce_scatter", err));
    if (n_elems_per_rank == 0)
        return PX_OK;
    if (!c->group[d])
        return copy_alone(c, send, recv, n_elems_per_rank, dtype, err);
    PX_NCCL_TRY(err, c->group[d],
                ncclReduceScatter(send, recv, (size_t)n_elems_per_rank, dtype, ncclSum,
                                  c->group[d], c->comm));
    return PX_OK;
}

px_status px_cuda_p2p(px_cuda_comm *c, const px_cuda_p2p_op *sends, int n_sends,
                      const px_cuda_p2p_op *recvs, int n_recvs, px_error *err)
{
    if (n_sends + n_recvs == 0)
        return PX_OK;
    for (int i = 0; i < n_sends + n_recvs; i++) {
        const px_cuda_p2p_op *o = i < n_sends ? &sends[i] : &recvs[i - n_sends];
        if (o->peer < 0 || o->peer >= c->world_size || o->peer == c->world_rank ||
            o->n_elems < 0 || px_nccl_type_bytes(o->dtype) == 0)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "p2p %s peer %d (world %d, self %d), %lld elements of type %d",
                           i < n_sends ? "send to" : "recv from", o->peer, c->world_size,
                           c->world_rank, (long long)o->n_elems, (int)o->dtype);
    }
    PX_NCCL_TRY(err, c->world, ncclGroupStart());
    for (int i = 0; i < n_sends; i++) {
        ncclResult_t r = ncclSend(sends[i].buf, (size_t)sends[i].n_elems, sends[i].dtype,
                                  sends[i].peer, c->world, c->comm);
        if (r != ncclSuccess) {
            (void)ncclGroupEnd();
            return px_nccl_status(r, c->world, "ncclSend", __FILE__, __LINE__, err);
        }
    }
    for (int i = 0; i < n_recvs; i++) {
        ncclResult_t r = ncclRecv(recvs[i].buf, (size_t)recvs[i].n_elems, recvs[i].dtype,
                                  recvs[i].peer, c->world, c->comm);
        if (r != ncclSuccess) {
            (void)ncclGroupEnd();
            return px_nccl_status(r, c->world, "ncclRecv", __FILE__, __LINE__, err);
        }
    }
    PX_NCCL_TRY(err, c->world, ncclGroupEnd());
    return PX_OK;
}

/* ---- all-to-all with per-peer counts ------------------------------------------------ */

/* The local half of the count check: what one rank can see of its own
 * arguments.  Fills the displacements (elements) and the byte totals. */
static px_status a2a_check(int rank, int size, const void *recv, const int64_t *recv_n,
                           const void *send, const int64_t *send_n, int type_bytes,
                           int64_t *sdisp, int64_t *rdisp, int64_t *send_bytes,
                           int64_t *recv_bytes, px_error *err)
{
    if (type_bytes == 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "all_to_all_v: dtype has no size; use ncclBfloat16 or ncclFloat32");
    if (!recv_n || !send_n)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "all_to_all_v: recv_n and send_n must hold %d counts (one per rank)",
                       size);
    int64_t so = 0, ro = 0, lim = INT64_MAX / type_bytes;
    for (int j = 0; j < size; j++) {
        if (send_n[j] < 0 || recv_n[j] < 0)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "all_to_all_v: send_n[%d] = %lld, recv_n[%d] = %lld; counts must be "
                           ">= 0",
                           j, (long long)send_n[j], j, (long long)recv_n[j]);
        if (send_n[j] > lim - so || recv_n[j] > lim - ro)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "all_to_all_v: counts up to rank %d exceed %lld elements of %d bytes",
                           j, (long long)lim, type_bytes);
        sdisp[j] = so;
        rdisp[j] = ro;
        so += send_n[j];
        ro += recv_n[j];
    }
    if (send_n[rank] != recv_n[rank])
        return PX_FAIL(err, PX_ERR_INVALID,
                       "all_to_all_v: rank %d sends itself send_n[%d] = %lld elements but "
                       "expects recv_n[%d] = %lld; the two must be equal",
                       rank, rank, (long long)send_n[rank], rank, (long long)recv_n[rank]);
    if ((so > 0 && !send) || (ro > 0 && !recv))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "all_to_all_v: %s buffer is NULL with %lld elements to %s",
                       so > 0 && !send ? "send" : "recv", (long long)(so > 0 && !send ? so : ro),
                       so > 0 && !send ? "send" : "receive");
    *send_bytes = so * type_bytes;
    *recv_bytes = ro * type_bytes;
    /* NCCL's sends read `send` while its receives write `recv`, in no fixed
     * order: overlapping buffers would corrupt the data, except a group of
     * one where the whole exchange is the copy to itself. */
    const char *s0 = send, *r0 = recv;
    bool overlap = so > 0 && ro > 0 && s0 < r0 + *recv_bytes && r0 < s0 + *send_bytes;
    if (overlap && !(size == 1 && s0 == r0))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "all_to_all_v: send and recv buffers overlap; they must be distinct "
                       "(the same buffer only in a group of one)");
    return PX_OK;
}

px_status px_nccl_all_to_all_v(ncclComm_t comm, cudaStream_t stream, void *recv,
                               const int64_t *recv_n, const void *send, const int64_t *send_n,
                               ncclDataType_t dtype, px_error *err)
{
    int rank = 0, size = 1;
    if (comm) {
        PX_NCCL_TRY(err, comm, ncclCommCount(comm, &size));
        PX_NCCL_TRY(err, comm, ncclCommUserRank(comm, &rank));
    }
    int64_t stack_disp[2 * 16], *disp = stack_disp;
    if (size > 16 && !(disp = malloc((size_t)(2 * size) * sizeof *disp)))
        return PX_FAIL(err, PX_ERR_NOMEM, "all_to_all_v: out of memory (%d ranks)", size);
    int64_t *sdisp = disp, *rdisp = disp + size, send_bytes = 0, recv_bytes = 0;
    int b = px_nccl_type_bytes(dtype);
    px_status st = a2a_check(rank, size, recv, recv_n, send, send_n, b, sdisp, rdisp,
                             &send_bytes, &recv_bytes, err);
    const char *sp = send;
    char *rp = recv;
    /* This rank's own part: a device copy, ordered on the same stream. */
    if (st == PX_OK && send_n[rank] > 0 && sp + sdisp[rank] * b != rp + rdisp[rank] * b)
        st = px_cuda_status(cudaMemcpyAsync(rp + rdisp[rank] * b, sp + sdisp[rank] * b,
                                            (size_t)(send_n[rank] * b),
                                            cudaMemcpyDeviceToDevice, stream),
                            "cudaMemcpyAsync (all_to_all_v, own part)", __FILE__, __LINE__, err);
    if (st == PX_OK && size > 1) {
        ncclResult_t r = ncclGroupStart();
        /* Zero counts post nothing on either side, so they still pair up. */
        for (int j = 0; j < size && r == ncclSuccess; j++) {
            if (j == rank)
                continue;
            if (send_n[j] > 0)
                r = ncclSend(sp + sdisp[j] * b, (size_t)send_n[j], dtype, j, comm, stream);
            if (r == ncclSuccess && recv_n[j] > 0)
                r = ncclRecv(rp + rdisp[j] * b, (size_t)recv_n[j], dtype, j, comm, stream);
        }
        /* The group is always closed, even after a failed call inside it. */
        ncclResult_t r_end = ncclGroupEnd();
        if (r != ncclSuccess && r != ncclInProgress)
            st = px_nccl_status(r, comm, "ncclSend/ncclRecv (all_to_all_v)", __FILE__, __LINE__,
                                err);
        else if (r_end != ncclSuccess && r_end != ncclInProgress)
            st = px_nccl_status(r_end, comm, "ncclGroupEnd (all_to_all_v)", __FILE__, __LINE__,
                                err);
    }
    if (disp != stack_disp)
        free(disp);
    return st;
}

px_status px_cuda_all_to_all_v(px_cuda_comm *c, px_dim d, void *recv, const int64_t *recv_n,
                               const void *send, const int64_t *send_n, ncclDataType_t dtype,
                               px_error *err)
{
    PX_TRY(check_args(c, d, 0, dtype, "all_to_all_v", err));
    return px_nccl_all_to_all_v(c->group[d], c->comm, recv, recv_n, send, send_n, dtype, err);
}
