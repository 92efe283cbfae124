/* test_backend_nccl.c — the executor's CUDA backend (backend_cuda.cu) on
 * several GPUs, through its px_backend table only: the NCCL paths the engine
 * takes and test_nccl.c (px_cuda_comm_init's ncclCommSplit) does not.
 *
 * Run one rank per GPU: `mpirun -np N test_backend_nccl`, N >= 2.  It creates
 * the backend, builds three groups with MPI_Comm_split — the whole world,
 * the world with its ranks reversed (group rank != world rank, so a mix-up of
 * the two shows) and pairs (2k, 2k+1; with N odd the last rank is a group of
 * one, which takes the backend's no-NCCL paths) — attaches an NCCL
 * communicator to each with comm_init (px_nccl_comm_from_mpi), and checks
 * against values computed on the host, in fp32 and bf16:
 *   all_reduce sum and max (and n = 0), all_gather out of place and in place
 *   (in == out + rank n), reduce_scatter out of place and in the engine's in
 *   place form (result at the START of the buffer), all_to_all_v with uneven
 *   counts and zeros (and all counts zero), p2p_batch as a ring with two
 *   messages to the same peer in one direction (posting order = matching
 *   order), one batch mixing fp32 and bf16 messages, one batch to every
 *   other rank with uneven counts, a refused batch (peer out of range), the
 *   device timer around a collective and the pool's reserved peak.
 *
 * Values: small integers (bf16) or multiples of 1/8 (fp32), exact in their
 * dtype, so every copy, maximum and sum is compared exactly.  The one
 * exception: bf16 sums over more than 16 ranks can leave bf16's 8-bit
 * significand; NCCL rounds each hop's partial sum to bf16, so there the
 * tolerance is (p - 1) 2^-8 sum|v| (p - 1 roundings, each of at most half an
 * ulp of a partial sum no larger than sum|v|).
 *
 * Results are kept per case on every rank and summed over the world at the
 * end; rank 0 prints one table (ranks, elements checked, #wrong).  With one
 * rank or fewer than two GPUs it exits 77 and says why; more ranks than
 * GPUs on a node is a launch error, which px_backend_cuda_create names.
 *
 * Built with -DPX_TEST_CPU_BACKEND the same cases run on the CPU backend
 * (MPI; no device timer, pool or NCCL handle, so those rows say n/a): the
 * test's own references, counts and posting orders are checked on every
 * machine, so a failure on GPUs points at the CUDA backend. */
#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PX_TEST_CPU_BACKEND
#include "px_backend.h"
#else
#include <cuda_runtime.h>

#include "px_backend_cuda.h"
#include "px_cuda_status.h"
#endif
#include "px_test.h"

/* Elements per rank of the collectives: odd, so the bf16 parts of the
 * in-place forms start at addresses that are not 4-byte aligned. */
#define N_COLL 1003
#define N_RING 777
#define SENTINEL (-1000.0f) /* exact in bf16; no test value equals it */
#define MAX_CASES 128
#define MAX_DEV 16

static px_backend be;
static px_error err;
static int world_rank, world_size;
static int64_t live_bytes, max_live_bytes;

/* ---- results: one row per case, the same sequence on every rank ------------------------ */

static struct {
    char name[64];
    int64_t checked; /* elements compared on this rank (0: not run here) */
    int64_t wrong;
} cases[MAX_CASES];
static int n_cases;

static void record(const char *group, px_dtype t, const char *what, int64_t checked,
                   int64_t wrong)
{
    if (n_cases == MAX_CASES) {
        CHECK_MSG(n_cases < MAX_CASES, "more than %d cases", MAX_CASES);
        return;
    }
    snprintf(cases[n_cases].name, sizeof cases[n_cases].name, "%s %s %s", group,
             px_dtype_name(t), what);
    cases[n_cases].checked = checked;
    cases[n_cases].wrong = wrong;
    CHECK_MSG(wrong == 0, "rank %d: %s: %" PRId64 " of %" PRId64 " elements wrong", world_rank,
              cases[n_cases].name, wrong, checked);
    n_cases++;
}

static void status_ok(px_status st, const char *what)
{
    if (st != PX_OK) {
        char b[1600];
        px_error_format(&err, b, sizeof b);
        fprintf(stderr, "rank %d: %s failed: %s\n", world_rank, what, b);
    }
    CHECK_MSG(st == PX_OK, "rank %d: %s", world_rank, what);
}

/* ---- host <-> device in either dtype ------------------------------------------------------ */

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u); /* nearest even (the values here are exact anyway) */
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Zeroed device memory from the backend's allocator, counted so the pool's
 * peak can be checked against what this test held. */
static void *balloc(int64_t n, px_dtype t)
{
    void *p = NULL;
    int64_t bytes = n * px_dtype_bytes(t);
    px_error_clear(&err);
    px_status st = be.alloc(&be, bytes, &p, &err);
    status_ok(st, "alloc");
    if (st != PX_OK) {
        fprintf(stderr, "rank %d: cannot go on without device memory\n", world_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    live_bytes += bytes;
    if (live_bytes > max_live_bytes)
        max_live_bytes = live_bytes;
    return p;
}

static void bfree(void *p, int64_t n, px_dtype t)
{
    be.free(&be, p);
    live_bytes -= n * px_dtype_bytes(t);
}

/* h[0, n) into d (upload: on the compute stream, as the engine does). */
static void put(void *d, const float *h, int64_t n, px_dtype t)
{
    if (t == PX_F32) {
        be.upload(&be, d, h, n * 4);
        return;
    }
    uint16_t *b = malloc((size_t)(n > 0 ? n : 1) * 2);
    for (int64_t i = 0; i < n; i++)
        b[i] = to_bf16(h[i]);
    be.upload(&be, d, b, n * 2);
    free(b);
}

/* d[0, n) into h: the backend's download waits on the compute stream, which
 * after_comm made wait for the collective: results are read "in device
 * order", with no synchronisation of the test's own. */
static void get(float *h, const void *d, int64_t n, px_dtype t)
{
    if (t == PX_F32) {
        be.download(&be, h, d, n * 4);
        return;
    }
    uint16_t *b = malloc((size_t)(n > 0 ? n : 1) * 2);
    be.download(&be, b, d, n * 2);
    for (int64_t i = 0; i < n; i++)
        h[i] = from_bf16(b[i]);
    free(b);
}

static void fill(void *d, int64_t n, px_dtype t, float v)
{
    float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);
    for (int64_t i = 0; i < n; i++)
        h[i] = v;
    put(d, h, n, t);
    free(h);
}

static float *hvec(int64_t n)
{
    float *h = malloc((size_t)(n > 0 ? n : 1) * sizeof *h);
    if (!h) {
        fprintf(stderr, "out of host memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return h;
}

/* Elements where |got - want| > tol (NaN included). */
static int64_t n_wrong(const float *got, const double *want, const double *tol, int64_t n)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= (tol ? tol[i] : 0.0))) {
            if (bad < 3)
                fprintf(stderr, "rank %d:   element %" PRId64 ": got %.9g, want %.9g\n",
                        world_rank, i, (double)got[i], want[i]);
            bad++;
        }
    }
    return bad;
}

/* ---- the values -------------------------------------------------------------------------- */

static int64_t pmod(int64_t a, int64_t m)
{
    return ((a % m) + m) % m;
}

/* An addend of a sum: in [-16, 16] for bf16 (partial sums of up to 16 ranks
 * stay integers <= 256, exact in bf16), k/8 with |k| <= 1000 for fp32 (exact
 * partial sums for any rank count in practice). */
static float v_sum(px_dtype t, int64_t g, int64_t i, int64_t salt)
{
    if (t == PX_BF16)
        return (float)(pmod(g * 7 + i * 3 + salt, 33) - 16);
    return (float)(pmod(g * 131 + i * 17 + salt, 2001) - 1000) / 8.0f;
}

/* A value naming (a, b, i) — sender, message or receiver, element — exact in
 * its dtype, so a misplaced or swapped message shows. */
static float v_tag(px_dtype t, int64_t a, int64_t b, int64_t i)
{
    if (t == PX_BF16)
        return (float)(pmod(a * 37 + b * 11 + i, 251) - 125);
    return (float)(pmod(a * 1009 + b * 101 + i, 100003) - 50000) + 0.5f;
}

/* Tolerance of a sum of p addends whose magnitudes add to abs_sum. */
static double sum_tol(px_dtype t, int p, double abs_sum)
{
    if (t == PX_F32 || 16 * p <= 256)
        return 0.0;
    return (double)(p - 1) * ldexp(1.0, -8) * abs_sum;
}

/* ---- the cases ---------------------------------------------------------------------------- */

static void case_all_reduce(const char *gname, px_comm *c, px_dtype t)
{
    const int64_t n = N_COLL;
    int p = c->size, g = c->rank;
    float *h = hvec(n), *got = hvec(n);
    double *want = malloc((size_t)n * sizeof *want), *tol = malloc((size_t)n * sizeof *tol);
    void *d = balloc(n, t);

    for (int64_t i = 0; i < n; i++) {
        h[i] = v_sum(t, g, i, 0);
        double s = 0.0, a = 0.0;
        for (int r = 0; r < p; r++) {
            s += v_sum(t, r, i, 0);
            a += fabs(v_sum(t, r, i, 0));
        }
        want[i] = s;
        tol[i] = sum_tol(t, p, a);
    }
    put(d, h, n, t);
    px_error_clear(&err);
    status_ok(be.all_reduce(&be, d, n, t, PX_REDUCE_SUM, c, &err), "all_reduce sum");
    get(got, d, n, t);
    record(gname, t, "all_reduce sum", n, n_wrong(got, want, tol, n));

    /* max: a different salt per rank makes every rank the maximum somewhere */
    for (int64_t i = 0; i < n; i++) {
        h[i] = v_sum(t, g, i, 11 * g);
        double m = -INFINITY;
        for (int r = 0; r < p; r++)
            m = fmax(m, v_sum(t, r, i, 11 * r));
        want[i] = m;
    }
    put(d, h, n, t);
    px_error_clear(&err);
    status_ok(be.all_reduce(&be, d, n, t, PX_REDUCE_MAX, c, &err), "all_reduce max");
    get(got, d, n, t);
    record(gname, t, "all_reduce max", n, n_wrong(got, want, NULL, n));

    /* n = 0: nothing to do, and nothing touched */
    px_error_clear(&err);
    status_ok(be.all_reduce(&be, d, 0, t, PX_REDUCE_SUM, c, &err), "all_reduce n=0");
    get(got, d, n, t);
    record(gname, t, "all_reduce n=0 leaves data", n, n_wrong(got, want, NULL, n));

    bfree(d, n, t);
    free(h);
    free(got);
    free(want);
    free(tol);
}

static void case_all_gather(const char *gname, px_comm *c, px_dtype t)
{
    const int64_t n = N_COLL;
    int p = c->size, g = c->rank;
    int64_t all = (int64_t)p * n;
    float *h = hvec(n), *got = hvec(all);
    double *want = malloc((size_t)all * sizeof *want);
    for (int64_t i = 0; i < n; i++)
        h[i] = v_tag(t, g, 0, i);
    for (int r = 0; r < p; r++)
        for (int64_t i = 0; i < n; i++)
            want[r * n + i] = v_tag(t, r, 0, i);

    void *in = balloc(n, t), *out = balloc(all, t);
    put(in, h, n, t);
    fill(out, all, t, SENTINEL);
    px_error_clear(&err);
    status_ok(be.all_gather(&be, out, in, n, t, c, &err), "all_gather");
    get(got, out, all, t);
    record(gname, t, "all_gather", all, n_wrong(got, want, NULL, all));

    /* in place: in is this rank's part of out (the ZeRO weight gather) */
    fill(out, all, t, SENTINEL);
    void *mine = px_dtype_at(out, (int64_t)g * n, t);
    put(mine, h, n, t);
    px_error_clear(&err);
    status_ok(be.all_gather(&be, out, mine, n, t, c, &err), "all_gather in place");
    get(got, out, all, t);
    record(gname, t, "all_gather in place", all, n_wrong(got, want, NULL, all));

    bfree(in, n, t);
    bfree(out, all, t);
    free(h);
    free(got);
    free(want);
}

static void case_reduce_scatter(const char *gname, px_comm *c, px_dtype t)
{
    const int64_t n = N_COLL;
    int p = c->size, g = c->rank;
    int64_t all = (int64_t)p * n;
    float *h = hvec(all), *got = hvec(n);
    double *want = malloc((size_t)n * sizeof *want), *tol = malloc((size_t)n * sizeof *tol);
    for (int64_t j = 0; j < all; j++)
        h[j] = v_sum(t, g, j, 5);
    for (int64_t i = 0; i < n; i++) {
        double s = 0.0, a = 0.0;
        for (int r = 0; r < p; r++) {
            s += v_sum(t, r, (int64_t)g * n + i, 5);
            a += fabs(v_sum(t, r, (int64_t)g * n + i, 5));
        }
        want[i] = s;
        tol[i] = sum_tol(t, p, a);
    }

    void *in = balloc(all, t), *out = balloc(n, t);
    put(in, h, all, t);
    fill(out, n, t, SENTINEL);
    px_error_clear(&err);
    status_ok(be.reduce_scatter(&be, out, in, n, t, c, &err), "reduce_scatter");
    get(got, out, n, t);
    record(gname, t, "reduce_scatter", n, n_wrong(got, want, tol, n));

    /* the engine's in place: out == in, the result at the start (NCCL's own
     * in-place form leaves it at rank n; the backend moves it down) */
    put(in, h, all, t);
    px_error_clear(&err);
    status_ok(be.reduce_scatter(&be, in, in, n, t, c, &err), "reduce_scatter in place");
    get(got, in, n, t);
    record(gname, t, "reduce_scatter in place", n, n_wrong(got, want, tol, n));

    bfree(in, all, t);
    bfree(out, n, t);
    free(h);
    free(got);
    free(want);
    free(tol);
}

/* Elements group rank s sends group rank r: zero where (s + 2r + 1) % 3 == 0
 * (the own part of some ranks among them), otherwise 5 to 10 (s + r + 1). */
static int64_t a2a_n(int s, int r)
{
    return (int64_t)((s + 2 * r + 1) % 3) * 5 * (s + r + 1);
}

static void case_all_to_all_v(const char *gname, px_comm *c, px_dtype t)
{
    int p = c->size, g = c->rank;
    int64_t *send_n = malloc((size_t)p * sizeof *send_n),
            *recv_n = malloc((size_t)p * sizeof *recv_n);
    int64_t st = 0, rt = 0;
    for (int j = 0; j < p; j++) {
        send_n[j] = a2a_n(g, j);
        recv_n[j] = a2a_n(j, g);
        st += send_n[j];
        rt += recv_n[j];
    }
    float *h = hvec(st), *got = hvec(rt + 1);
    double *want = malloc((size_t)(rt + 1) * sizeof *want);
    int64_t o = 0;
    for (int j = 0; j < p; j++)
        for (int64_t i = 0; i < send_n[j]; i++)
            h[o++] = v_tag(t, g, j, i);
    o = 0;
    for (int j = 0; j < p; j++)
        for (int64_t i = 0; i < recv_n[j]; i++)
            want[o++] = v_tag(t, j, g, i);
    want[rt] = SENTINEL; /* one guard element past the end stays untouched */

    void *in = balloc(st, t), *out = balloc(rt + 1, t);
    put(in, h, st, t);
    fill(out, rt + 1, t, SENTINEL);
    px_error_clear(&err);
    status_ok(be.all_to_all_v(&be, out, recv_n, in, send_n, t, c, &err), "all_to_all_v");
    get(got, out, rt + 1, t);
    record(gname, t, "all_to_all_v uneven, zeros", rt + 1, n_wrong(got, want, NULL, rt + 1));

    /* every count zero: a valid call that moves nothing */
    memset(send_n, 0, (size_t)p * sizeof *send_n);
    memset(recv_n, 0, (size_t)p * sizeof *recv_n);
    px_error_clear(&err);
    status_ok(be.all_to_all_v(&be, out, recv_n, in, send_n, t, c, &err), "all_to_all_v zeros");
    get(got, out, rt + 1, t);
    record(gname, t, "all_to_all_v all zero", rt + 1, n_wrong(got, want, NULL, rt + 1));

    bfree(in, st, t);
    bfree(out, rt + 1, t);
    free(h);
    free(got);
    free(want);
    free(send_n);
    free(recv_n);
}

/* The pipeline's pattern: every rank sends to rank + 1 and receives from
 * rank - 1 in one batch, here two messages each way, posted
 * recv 1, send 1, send 2, recv 2: messages carry no tag, so the first
 * receive from prev must get prev's first send. */
static void case_p2p_ring(const char *gname, px_comm *c, px_dtype t)
{
    int p = c->size, g = c->rank;
    if (p < 2) { /* the same rows on every rank (report() sums them) */
        record(gname, t, "p2p ring, 2 messages per peer", 0, 0);
        record(gname, t, "p2p ring, reused buffer", 0, 0);
        return;
    }
    const int64_t n = N_RING;
    int next = (g + 1) % p, prev = (g + p - 1) % p;
    float *h = hvec(n), *got = hvec(n);
    double *want = malloc((size_t)n * sizeof *want);
    void *x1 = balloc(n, t), *x2 = balloc(n, t), *y1 = balloc(n, t), *y2 = balloc(n, t);
    for (int64_t i = 0; i < n; i++)
        h[i] = v_tag(t, g, 1, i);
    put(x1, h, n, t);
    for (int64_t i = 0; i < n; i++)
        h[i] = v_tag(t, g, 2, i);
    put(x2, h, n, t);
    fill(y1, n, t, SENTINEL);
    fill(y2, n, t, SENTINEL);
    px_p2p_op ops[4] = {
        {y1, n, t, prev, false},
        {x1, n, t, next, true},
        {x2, n, t, next, true},
        {y2, n, t, prev, false},
    };
    px_error_clear(&err);
    status_ok(be.p2p_batch(&be, ops, 4, c, &err), "p2p ring");
    int64_t bad = 0;
    for (int k = 1; k <= 2; k++) {
        get(got, k == 1 ? y1 : y2, n, t);
        for (int64_t i = 0; i < n; i++)
            want[i] = v_tag(t, prev, k, i);
        bad += n_wrong(got, want, NULL, n);
    }
    record(gname, t, "p2p ring, 2 messages per peer", 2 * n, bad);
    /* the send buffers may be reused at once (px_backend.h): refill x1 and
     * send it again; the receiver must see the new values */
    for (int64_t i = 0; i < n; i++)
        h[i] = v_tag(t, g, 3, i);
    put(x1, h, n, t);
    px_p2p_op again[2] = {{x1, n, t, next, true}, {y1, n, t, prev, false}};
    px_error_clear(&err);
    status_ok(be.p2p_batch(&be, again, 2, c, &err), "p2p ring again");
    get(got, y1, n, t);
    for (int64_t i = 0; i < n; i++)
        want[i] = v_tag(t, prev, 3, i);
    record(gname, t, "p2p ring, reused buffer", n, n_wrong(got, want, NULL, n));

    bfree(x1, n, t);
    bfree(x2, n, t);
    bfree(y1, n, t);
    bfree(y2, n, t);
    free(h);
    free(got);
    free(want);
}

/* One batch with an fp32 and a bf16 message each way around the ring, of
 * different lengths (a gradient and an activation in one step). */
static void case_p2p_mixed(const char *gname, px_comm *c)
{
    int p = c->size, g = c->rank;
    if (p < 2) {
        record(gname, PX_F32, "+ bf16 p2p ring, one batch", 0, 0);
        return;
    }
    const int64_t nf = 500, nb = 1200;
    int next = (g + 1) % p, prev = (g + p - 1) % p;
    float *h = hvec(nb), *got = hvec(nb);
    double *want = malloc((size_t)nb * sizeof *want);
    void *sf = balloc(nf, PX_F32), *rf = balloc(nf, PX_F32);
    void *sb = balloc(nb, PX_BF16), *rb = balloc(nb, PX_BF16);
    for (int64_t i = 0; i < nf; i++)
        h[i] = v_tag(PX_F32, g, 4, i);
    put(sf, h, nf, PX_F32);
    for (int64_t i = 0; i < nb; i++)
        h[i] = v_tag(PX_BF16, g, 5, i);
    put(sb, h, nb, PX_BF16);
    fill(rf, nf, PX_F32, SENTINEL);
    fill(rb, nb, PX_BF16, SENTINEL);
    /* the fp32 message first in both directions (posting order = matching order) */
    px_p2p_op ops[4] = {
        {sf, nf, PX_F32, next, true},
        {rf, nf, PX_F32, prev, false},
        {rb, nb, PX_BF16, prev, false},
        {sb, nb, PX_BF16, next, true},
    };
    px_error_clear(&err);
    status_ok(be.p2p_batch(&be, ops, 4, c, &err), "p2p mixed dtypes");
    get(got, rf, nf, PX_F32);
    for (int64_t i = 0; i < nf; i++)
        want[i] = v_tag(PX_F32, prev, 4, i);
    int64_t bad = n_wrong(got, want, NULL, nf);
    get(got, rb, nb, PX_BF16);
    for (int64_t i = 0; i < nb; i++)
        want[i] = v_tag(PX_BF16, prev, 5, i);
    bad += n_wrong(got, want, NULL, nb);
    record(gname, PX_F32, "+ bf16 p2p ring, one batch", nf + nb, bad);

    bfree(sf, nf, PX_F32);
    bfree(rf, nf, PX_F32);
    bfree(sb, nb, PX_BF16);
    bfree(rb, nb, PX_BF16);
    free(h);
    free(got);
    free(want);
}

/* Message s -> r of the all-peers batch: its length and dtype (the same on
 * both sides: the dtype depends on the pair only). */
static int64_t pp_n(int s, int r)
{
    return 1 + (int64_t)((s * 5 + r * 3) % 7) * 13;
}

static px_dtype pp_t(int s, int r)
{
    return (s + r) % 2 ? PX_BF16 : PX_F32;
}

/* Every rank sends to and receives from every other rank in one batch:
 * several peers, uneven lengths, both dtypes; sends posted by ascending
 * peer, receives by descending peer. */
static void case_p2p_all_peers(const char *gname, px_comm *c)
{
    int p = c->size, g = c->rank;
    if (p < 2) {
        record(gname, PX_F32, "+ bf16 p2p to every peer", 0, 0);
        return;
    }
    px_p2p_op *ops = calloc((size_t)(2 * p), sizeof *ops);
    void **rbuf = calloc((size_t)p, sizeof *rbuf), **sbuf = calloc((size_t)p, sizeof *sbuf);
    float *h = hvec(128), *got = hvec(128);
    double *want = malloc(128 * sizeof *want);
    int n_ops = 0;
    for (int j = 0; j < p; j++) {
        if (j == g)
            continue;
        int64_t n = pp_n(g, j);
        px_dtype t = pp_t(g, j);
        sbuf[j] = balloc(n, t);
        for (int64_t i = 0; i < n; i++)
            h[i] = v_tag(t, g, 100 + j, i);
        put(sbuf[j], h, n, t);
        ops[n_ops++] = (px_p2p_op){sbuf[j], n, t, j, true};
    }
    for (int j = p - 1; j >= 0; j--) {
        if (j == g)
            continue;
        int64_t n = pp_n(j, g);
        px_dtype t = pp_t(j, g);
        rbuf[j] = balloc(n, t);
        fill(rbuf[j], n, t, SENTINEL);
        ops[n_ops++] = (px_p2p_op){rbuf[j], n, t, j, false};
    }
    px_error_clear(&err);
    status_ok(be.p2p_batch(&be, ops, n_ops, c, &err), "p2p to every peer");
    int64_t bad = 0, checked = 0;
    for (int j = 0; j < p; j++) {
        if (j == g)
            continue;
        int64_t n = pp_n(j, g);
        px_dtype t = pp_t(j, g);
        get(got, rbuf[j], n, t);
        for (int64_t i = 0; i < n; i++)
            want[i] = v_tag(t, j, 100 + g, i);
        bad += n_wrong(got, want, NULL, n);
        checked += n;
        bfree(rbuf[j], n, t);
        bfree(sbuf[j], pp_n(g, j), pp_t(g, j));
    }
    record(gname, PX_F32, "+ bf16 p2p to every peer", checked, bad);
    free(ops);
    free(rbuf);
    free(sbuf);
    free(h);
    free(got);
    free(want);
}

/* Refused before anything is posted (so no peer waits): a peer outside the
 * group, a negative length. */
static void case_p2p_refused(const char *gname, px_comm *c)
{
#ifdef PX_TEST_CPU_BACKEND
    /* the CPU backend leaves the peer's range to MPI */
    record(gname, PX_F32, "p2p refuses bad peer / length", 0, 0);
    (void)c;
#else
    float *d = balloc(8, PX_F32);
    px_p2p_op bad_peer = {d, 8, PX_F32, c->size, true};
    px_p2p_op bad_n = {d, -1, PX_F32, 0, false};
    px_error_clear(&err);
    px_status s1 = be.p2p_batch(&be, &bad_peer, 1, c, &err);
    bool named = strstr(err.msg, "rank") != NULL;
    px_error_clear(&err);
    px_status s2 = be.p2p_batch(&be, &bad_n, 1, c, &err);
    record(gname, PX_F32, "p2p refuses bad peer / length", 3,
           (s1 != PX_ERR_INVALID) + (s2 != PX_ERR_INVALID) + !named);
    bfree(d, 8, PX_F32);
#endif
}

/* ---- setup ------------------------------------------------------------------------------- */

#ifndef PX_TEST_CPU_BACKEND
/* GPUs behind all ranks: distinct (host, PCI bus id) pairs over every device
 * each rank sees, so that two ranks sharing one GPU, or each seeing the same
 * 2 GPUs, are counted right. */
static int count_gpus(int n_dev)
{
    enum { ID = 32 };
    size_t per = MPI_MAX_PROCESSOR_NAME + (size_t)MAX_DEV * ID;
    char *mine = calloc(1, per), *all = calloc((size_t)world_size, per);
    int len = 0;
    MPI_Get_processor_name(mine, &len);
    for (int d = 0; d < n_dev && d < MAX_DEV; d++)
        if (cudaDeviceGetPCIBusId(mine + MPI_MAX_PROCESSOR_NAME + d * ID, ID, d) != cudaSuccess)
            mine[MPI_MAX_PROCESSOR_NAME + d * ID] = '\0';
    MPI_Allgather(mine, (int)per, MPI_CHAR, all, (int)per, MPI_CHAR, MPI_COMM_WORLD);
    int distinct = 0;
    for (int r = 0; r < world_size; r++)
        for (int d = 0; d < MAX_DEV; d++) {
            const char *host = all + (size_t)r * per, *bus = host + MPI_MAX_PROCESSOR_NAME + d * ID;
            if (!bus[0])
                continue;
            bool seen = false;
            for (int q = 0; q <= r && !seen; q++)
                for (int e = 0; e < (q == r ? d : MAX_DEV) && !seen; e++) {
                    const char *h2 = all + (size_t)q * per,
                               *b2 = h2 + MPI_MAX_PROCESSOR_NAME + e * ID;
                    seen = !strcmp(host, h2) && !strcmp(bus, b2);
                }
            distinct += !seen;
        }
    free(mine);
    free(all);
    return distinct;
}
#endif

typedef struct {
    const char *name;
    px_comm c;
} group;

static void group_make(group *gr, const char *name, int colour, int key)
{
    gr->name = name;
    MPI_Comm m;
    MPI_Comm_split(MPI_COMM_WORLD, colour, key, &m);
    gr->c = (px_comm){m, 1, 0, NULL};
    MPI_Comm_size(m, &gr->c.size);
    MPI_Comm_rank(m, &gr->c.rank);
    px_error_clear(&err);
    status_ok(be.comm_init(&be, &gr->c, &err), "comm_init");
#ifndef PX_TEST_CPU_BACKEND
    /* a group of one has no NCCL communicator: the backend's local paths */
    CHECK_MSG((gr->c.native != NULL) == (gr->c.size > 1),
              "rank %d: %s group of %d: native handle %p", world_rank, name, gr->c.size,
              gr->c.native);
#endif
}

static void group_run(group *gr)
{
    for (int k = 0; k < 2; k++) {
        px_dtype t = k ? PX_BF16 : PX_F32;
        case_all_reduce(gr->name, &gr->c, t);
        case_all_gather(gr->name, &gr->c, t);
        case_reduce_scatter(gr->name, &gr->c, t);
        case_all_to_all_v(gr->name, &gr->c, t);
        case_p2p_ring(gr->name, &gr->c, t);
    }
    case_p2p_mixed(gr->name, &gr->c);
    case_p2p_all_peers(gr->name, &gr->c);
    case_p2p_refused(gr->name, &gr->c);
}

/* The device timer around one large all-reduce on the world group, and the
 * pool's reserved peak against the most this test held at once. */
static void case_timer_and_peak(group *world)
{
#ifdef PX_TEST_CPU_BACKEND
    record(world->name, PX_F32, "timer > 0 around all_reduce", 0, 0);
    record(world->name, PX_F32, "reserved_peak >= held", 0, 0);
    record(world->name, PX_F32, "reserved_peak after reset", 0, 0);
#else
    const int64_t n = (int64_t)1 << 22; /* 16 MB of fp32 */
    float *d = balloc(n, PX_F32);
    double elapsed_s = -1.0;
    px_error_clear(&err);
    status_ok(be.timer_start(&be, &err), "timer_start");
    px_error_clear(&err);
    status_ok(be.all_reduce(&be, d, n, PX_F32, PX_REDUCE_SUM, &world->c, &err),
              "all_reduce (timed)");
    px_error_clear(&err);
    status_ok(be.timer_stop(&be, &elapsed_s, &err), "timer_stop");
    bool time_ok = elapsed_s > 0.0 && elapsed_s < 60.0;
    CHECK_MSG(time_ok, "rank %d: timer gave %g s around a 16 MB all-reduce", world_rank,
              elapsed_s);
    record(world->name, PX_F32, "timer > 0 around all_reduce", 1, !time_ok);

    int64_t reserved = be.reserved_peak_bytes(&be), tracked = px_backend_cuda_peak_bytes(&be);
    bool peak_ok = tracked >= max_live_bytes && reserved >= tracked;
    CHECK_MSG(peak_ok,
              "rank %d: held at most %" PRId64 " B; tracked peak %" PRId64
              " B, reserved peak %" PRId64 " B",
              world_rank, max_live_bytes, tracked, reserved);
    record(world->name, PX_F32, "reserved_peak >= held", 1, !peak_ok);

    /* after a reset the peak restarts at what is held now (the 16 MB) */
    be.reset_reserved_peak(&be);
    reserved = be.reserved_peak_bytes(&be);
    bool reset_ok = reserved >= live_bytes;
    CHECK_MSG(reset_ok, "rank %d: after reset, reserved peak %" PRId64 " B < %" PRId64 " B held",
              world_rank, reserved, live_bytes);
    record(world->name, PX_F32, "reserved_peak after reset", 1, !reset_ok);
    if (world_rank == 0)
        printf("# backend_nccl: 16 MB all-reduce %.3f ms on the device clock; held at most "
               "%.1f MB, pool reserved %.1f MB at its peak\n",
               1e3 * elapsed_s, max_live_bytes / 1e6, (double)reserved / 1e6);
    bfree(d, n, PX_F32);
#endif
}

/* Sums every rank's table and prints it on rank 0; returns the world's
 * failure count. */
static int report(void)
{
    int lo = 0, hi = 0;
    MPI_Allreduce(&n_cases, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&n_cases, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK_MSG(lo == hi, "ranks ran %d to %d cases", lo, hi);
    int64_t checked[MAX_CASES] = {0}, wrong[MAX_CASES] = {0};
    int64_t ran[MAX_CASES] = {0}, sum_c[MAX_CASES], sum_w[MAX_CASES], sum_r[MAX_CASES];
    for (int i = 0; i < lo; i++) {
        ran[i] = cases[i].checked > 0;
        checked[i] = cases[i].checked;
        wrong[i] = cases[i].wrong;
    }
    MPI_Reduce(ran, sum_r, lo, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(checked, sum_c, lo, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(wrong, sum_w, lo, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    int fails = px_test_failures, all_fails = 0;
    MPI_Allreduce(&fails, &all_fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) {
        printf("%-46s %6s %10s %7s\n", "# case", "ranks", "elements", "#wrong");
        for (int i = 0; i < lo; i++)
            printf("%-46s %6" PRId64 " %10" PRId64 " %7" PRId64 "  %s\n", cases[i].name,
                   sum_r[i], sum_c[i], sum_w[i],
                   sum_w[i] ? "FAIL" : sum_r[i] ? "ok" : "n/a (groups of one / CPU)");
        printf("# backend_nccl: %d ranks, %s (%d failed checks over all ranks)\n", world_size,
               all_fails ? "FAIL" : "ok", all_fails);
    }
    return all_fails;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
#ifdef PX_TEST_CPU_BACKEND
    if (world_size < 2) {
        printf("# backend_nccl (CPU backend): 1 rank: needs mpirun -np N, N >= 2: skipped\n");
        MPI_Finalize();
        return 77;
    }
    int n_gpu = 0;
    px_error_clear(&err);
    px_status st = px_backend_cpu_create(&be, &err);
    status_ok(st, "px_backend_cpu_create");
#else
    int n_dev = px_cuda_device_count(), min_dev = 0;
    MPI_Allreduce(&n_dev, &min_dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int n_gpu = min_dev > 0 ? count_gpus(n_dev) : 0;
    if (world_size < 2 || min_dev <= 0 || n_gpu < 2) {
        if (world_rank == 0)
            printf("# backend_nccl: %d rank(s), %d GPU(s)%s: needs mpirun -np N with N >= 2, "
                   "one rank per GPU: skipped\n",
                   world_size, n_gpu, min_dev <= 0 ? " (a rank sees no CUDA device)" : "");
        MPI_Finalize();
        return 77;
    }

    px_error_clear(&err);
    px_status st = px_backend_cuda_create(&be, MPI_COMM_WORLD, &err);
    status_ok(st, "px_backend_cuda_create");
#endif
    if (st != PX_OK) { /* collective: every rank fails together (device selection) */
        MPI_Finalize();
        return 1;
    }
    if (world_rank == 0)
        printf("# backend_nccl: %d ranks on %d GPUs (0: the CPU backend); groups: world, world "
               "reversed, pairs\n",
               world_size, n_gpu);

    group gs[3];
    group_make(&gs[0], "world", 0, world_rank);
    group_make(&gs[1], "reversed", 0, world_size - 1 - world_rank);
    group_make(&gs[2], "pairs", world_rank / 2, world_rank);
    CHECK(gs[1].c.rank == world_size - 1 - world_rank);
    for (int i = 0; i < 3; i++)
        group_run(&gs[i]);
    case_timer_and_peak(&gs[0]);

    px_error_clear(&err);
    status_ok(be.sync(&be, &err), "sync");
    CHECK_MSG(live_bytes == 0, "test bookkeeping: %" PRId64 " B still held", live_bytes);
    for (int i = 0; i < 3; i++) {
        be.comm_free(&be, &gs[i].c);
        CHECK(gs[i].c.native == NULL);
        MPI_Comm_free(&gs[i].c.mpi);
    }
    int all_fails = report();
    be.destroy(&be);
    MPI_Finalize();
    return all_fails ? 1 : 0;
}
