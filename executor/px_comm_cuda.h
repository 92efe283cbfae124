/* px_comm_cuda.h — NCCL for the CUDA backend: bootstrap through MPI, one
 * communicator per parallel group, and the collectives / grouped
 * point-to-point the engine needs, on a communication stream of their own.
 *
 * Bootstrap (as nccl-tests does it): every rank hashes its host name; the
 * ranks below it with the same hash give its node-local rank, which picks the
 * GPU (cudaSetDevice(local_rank % devices)).  Rank 0 makes the NCCL unique id,
 * MPI_Bcast hands it out, ncclCommInitRank builds the world communicator, and
 * ncclCommSplit carves one communicator per px_dim with the colour and key of
 * px_layout_group() — the same pure function the CPU backend feeds to
 * MPI_Comm_split, so both backends form identical groups.
 *
 * Streams: kernels and GEMMs run on `compute`; NCCL runs on `comm`.  Before a
 * collective reads a buffer the comm stream waits on an event recorded on the
 * compute stream (px_cuda_comm_after_compute); compute waits for NCCL's result
 * the same way (px_cuda_comm_join) — so communication overlaps whatever
 * compute is issued between the two calls, and nothing is ever
 * host-synchronised for ordering.  (The executor backend joins right after
 * each collective: its engine needs the result next.) */
#ifndef PX_COMM_CUDA_H
#define PX_COMM_CUDA_H

#include <stdint.h>

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "px_error.h"
#include "px_layout.h"

typedef enum { PX_RED_SUM = 0, PX_RED_MAX = 1 } px_cuda_redop;

typedef struct {
    int world_rank, world_size;
    int local_rank, local_size; /* on this node (host-name hash) */
    int device;
    px_layout layout;
    ncclComm_t world;
    ncclComm_t group[PX_DIM_COUNT];   /* NULL where the group has one member */
    int group_size[PX_DIM_COUNT];
    int group_rank[PX_DIM_COUNT];
    cudaStream_t compute, comm;
    cudaEvent_t compute_ready, comm_done;
} px_cuda_comm;

/* Collective over mpi_world: the node-local rank from the host-name hashes,
 * then cudaSetDevice(local_rank) — or device 0 when each rank sees a single
 * GPU (CUDA_VISIBLE_DEVICES set per rank).  Fails when a node has more ranks
 * than visible GPUs. */
px_status px_cuda_select_device(MPI_Comm mpi_world, int *local_rank, int *local_size,
                                int *device, px_error *err);

/* Collective over the members of `group` (an MPI communicator of one
 * parallel group): group rank 0 makes the NCCL id, MPI_Bcast hands it out,
 * ncclCommInitRank joins.  *out is NULL for a group of one. */
px_status px_nccl_comm_from_mpi(MPI_Comm group, ncclComm_t *out, px_error *err);

/* Collective over mpi_world: picks and sets this rank's device, creates the
 * streams, the NCCL world communicator and every group's.  lay->world must
 * equal the MPI world size. */
px_status px_cuda_comm_init(px_cuda_comm *c, MPI_Comm mpi_world, const px_layout *lay,
                            px_error *err);

/* Destroys communicators, events and streams (safe on a zeroed struct). */
void px_cuda_comm_destroy(px_cuda_comm *c);

/* comm stream waits for everything issued on compute so far. */
px_status px_cuda_comm_after_compute(px_cuda_comm *c, px_error *err);
/* compute stream waits for everything issued on comm so far. */
px_status px_cuda_comm_join(px_cuda_comm *c, px_error *err);

/* In-place collectives over the group of dimension d, issued on the comm
 * stream (call px_cuda_comm_after_compute first when the data was produced
 * on compute).  Counts are elements; dtype ncclBfloat16 or ncclFloat32.
 * Groups of one member are no-ops (the copy for allgather/reduce_scatter is
 * done when the buffers differ). */
px_status px_cuda_allreduce(px_cuda_comm *c, px_dim d, void *buf, int64_t n_elems,
                            ncclDataType_t dtype, px_cuda_redop op, px_error *err);
/* recv holds group_size * n_elems_per_rank elements, rank i's part at i. */
px_status px_cuda_allgather(px_cuda_comm *c, px_dim d, const void *send, void *recv,
                            int64_t n_elems_per_rank, ncclDataType_t dtype, px_error *err);
/* send holds group_size * n_elems_per_rank elements; recv gets this rank's
 * summed part. */
px_status px_cuda_reduce_scatter(px_cuda_comm *c, px_dim d, const void *send, void *recv,
                                 int64_t n_elems_per_rank, ncclDataType_t dtype,
                                 px_error *err);

/* Point-to-point between world ranks, grouped (ncclGroupStart/End) so a send
 * and a receive with the same peer, or with two neighbours, cannot deadlock.
 * Either list may be empty; peers are world ranks. */
typedef struct {
    int peer;
    void *buf;
    int64_t n_elems;
    ncclDataType_t dtype;
} px_cuda_p2p_op;

px_status px_cuda_p2p(px_cuda_comm *c, const px_cuda_p2p_op *sends, int n_sends,
                      const px_cuda_p2p_op *recvs, int n_recvs, px_error *err);

/* All-to-all with per-peer counts (the MoE dispatch and combine), with the
 * semantics of px_backend.h's all_to_all_v: to group rank j this rank sends
 * send_n[j] elements taken back to back, in rank order, from `send`, and
 * receives recv_n[j] elements from j into `recv`, back to back in rank
 * order.  Counts are elements of dtype (ncclBfloat16 or ncclFloat32).  It is
 * one ncclGroupStart/End of ncclSend/ncclRecv to every peer with a non-zero
 * count, issued on the comm stream like the collectives above (call
 * px_cuda_comm_after_compute before and px_cuda_comm_join after); the part
 * this rank keeps is a device copy on the same stream.
 * Checked here (PX_ERR_INVALID, before anything is issued): every count >= 0,
 * send_n[me] == recv_n[me], the byte totals fit int64, non-NULL buffers when
 * their totals are non-zero, and send / recv not overlapping (they may be the
 * same buffer only in a group of one).  Counts must also agree between ranks
 * (send_n[j] on rank i == recv_n[i] on rank j); no rank can see that without
 * an extra exchange, and NCCL hangs or fails when they do not. */
px_status px_cuda_all_to_all_v(px_cuda_comm *c, px_dim d, void *recv, const int64_t *recv_n,
                               const void *send, const int64_t *send_n, ncclDataType_t dtype,
                               px_error *err);
/* The same on a bare communicator and stream: the executor backend's own
 * per-group communicators (comm NULL: a group of one, the copy only).
 * recv_n / send_n hold ncclCommCount(comm) entries. */
px_status px_nccl_all_to_all_v(ncclComm_t comm, cudaStream_t stream, void *recv,
                               const int64_t *recv_n, const void *send, const int64_t *send_n,
                               ncclDataType_t dtype, px_error *err);

/* Bytes of one element of an NCCL type (0 for types the backend never uses). */
int px_nccl_type_bytes(ncclDataType_t t);

#ifdef __cplusplus
}
#endif

#endif
