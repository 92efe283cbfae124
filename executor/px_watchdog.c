/* px_watchdog.c — the communication timeout of `execute` (see px_watchdog.h). */
#include "px_watchdog.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_DEPTH 8

typedef struct {
    const char *op;
    double start_s;
} frame;

/* Process-wide by design: one watchdog thread watches the process's one
 * engine (one MPI rank a process), and the backend calls it marks (the
 * wrappers below, entered from anywhere in the engine) carry no context to
 * find a watchdog by.  The lock guards it against that thread. */
static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_wake = PTHREAD_COND_INITIALIZER;
static struct {
    pthread_t thread;
    bool running, stop;
    double timeout_s;
    int rank, world;
    int64_t step;
    frame stack[MAX_DEPTH];
    int depth;
    void (*hook)(void *);
    void *hook_arg;
} wd;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void px_watchdog_enter(const char *op)
{
    pthread_mutex_lock(&wd_lock);
    if (wd.depth < MAX_DEPTH)
        wd.stack[wd.depth] = (frame){op, now_s()};
    wd.depth++;
    pthread_mutex_unlock(&wd_lock);
}

void px_watchdog_leave(void)
{
    pthread_mutex_lock(&wd_lock);
    if (wd.depth > 0)
        wd.depth--;
    /* the enclosing operation waits afresh from here */
    if (wd.depth > 0 && wd.depth <= MAX_DEPTH)
        wd.stack[wd.depth - 1].start_s = now_s();
    pthread_mutex_unlock(&wd_lock);
}

void px_watchdog_set_step(int64_t step)
{
    pthread_mutex_lock(&wd_lock);
    wd.step = step;
    pthread_mutex_unlock(&wd_lock);
}

void px_watchdog_set_abort_hook(void (*hook)(void *), void *arg)
{
    pthread_mutex_lock(&wd_lock);
    wd.hook = hook;
    wd.hook_arg = arg;
    pthread_mutex_unlock(&wd_lock);
}

/* Ends the process: the message, the hook, exit status 3 (no MPI call:
 * the main thread owns MPI and is blocked in it). */
static void expire(const frame *f, double waited_s, int64_t step)
{
    char at[64] = "";
    if (step >= 0)
        snprintf(at, sizeof at, " at step %lld", (long long)step);
    /* one rank alone waits on nobody: its own operation outlasted --timeout */
    const char *why = wd.world > 1 ? "another rank stopped, died or hangs there, or the "
                                     "operation takes longer than --timeout"
                                   : "this job has one rank, so the operation itself takes "
                                     "longer than --timeout (raise it)";
    fprintf(stderr,
            "execute: rank %d: timeout: %s%s did not complete within %g s (waited %.1f s): %s; "
            "ending the job (--timeout)\n",
            wd.rank, f->op, at, wd.timeout_s, waited_s, why);
    fflush(stderr);
    if (wd.hook)
        wd.hook(wd.hook_arg);
    _exit(3);
}

static void *watch(void *arg)
{
    (void)arg;
    /* Wake often enough to end the job within the timeout plus a tenth. */
    double period = wd.timeout_s / 10.0;
    if (period > 1.0)
        period = 1.0;
    pthread_mutex_lock(&wd_lock);
    while (!wd.stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        long long ns = until.tv_nsec + (long long)(period * 1e9);
        until.tv_sec += (time_t)(ns / 1000000000LL);
        until.tv_nsec = (long)(ns % 1000000000LL);
        pthread_cond_timedwait(&wd_wake, &wd_lock, &until);
        if (wd.stop || wd.depth == 0)
            continue;
        int top = (wd.depth <= MAX_DEPTH ? wd.depth : MAX_DEPTH) - 1;
        double waited = now_s() - wd.stack[top].start_s;
        if (waited > wd.timeout_s)
            expire(&wd.stack[top], waited, wd.step);
    }
    pthread_mutex_unlock(&wd_lock);
    return NULL;
}

px_status px_watchdog_start(double timeout_s, int rank, int world, px_error *err)
{
    if (!(timeout_s > 0))
        return PX_FAIL(err, PX_ERR_INVALID, "timeout %g s: must be > 0", timeout_s);
    wd.timeout_s = timeout_s;
    wd.rank = rank;
    wd.world = world;
    wd.step = -1;
    wd.stop = false;
    if (pthread_create(&wd.thread, NULL, watch, NULL) != 0)
        return PX_FAIL(err, PX_ERR_INTERNAL, "cannot start the watchdog thread");
    wd.running = true;
    return PX_OK;
}

void px_watchdog_stop(void)
{
    if (!wd.running)
        return;
    pthread_mutex_lock(&wd_lock);
    wd.stop = true;
    pthread_cond_signal(&wd_wake);
    pthread_mutex_unlock(&wd_lock);
    pthread_join(wd.thread, NULL);
    wd.running = false;
}

/* ---- the backend's blocking calls, each marked ---------------------------- */

/* The wrapped backend's own functions: process-wide with the watchdog (one
 * backend a process; a wrapper's px_backend is the wrapped table, which no
 * longer holds them). */
static px_backend orig;

static px_status w_all_reduce(px_backend *be, void *buf, int64_t n, px_dtype t,
                              px_reduce_op op, px_comm *c, px_error *err)
{
    px_watchdog_enter("all_reduce");
    px_status st = orig.all_reduce(be, buf, n, t, op, c, err);
    px_watchdog_leave();
    return st;
}

static px_status w_all_gather(px_backend *be, void *out, const void *in, int64_t n,
                              px_dtype t, px_comm *c, px_error *err)
{
    px_watchdog_enter("all_gather");
    px_status st = orig.all_gather(be, out, in, n, t, c, err);
    px_watchdog_leave();
    return st;
}

static px_status w_reduce_scatter(px_backend *be, void *out, const void *in, int64_t n,
                                  px_dtype t, px_comm *c, px_error *err)
{
    px_watchdog_enter("reduce_scatter");
    px_status st = orig.reduce_scatter(be, out, in, n, t, c, err);
    px_watchdog_leave();
    return st;
}

static px_status w_p2p_batch(px_backend *be, const px_p2p_op *ops, int n_ops, px_comm *c,
                             px_error *err)
{
    px_watchdog_enter("point-to-point batch (pipeline send/receive)");
    px_status st = orig.p2p_batch(be, ops, n_ops, c, err);
    px_watchdog_leave();
    return st;
}

static px_status w_all_to_all_v(px_backend *be, void *out, const int64_t *recv_n,
                                const void *in, const int64_t *send_n, px_dtype t, px_comm *c,
                                px_error *err)
{
    px_watchdog_enter("all_to_all_v (expert dispatch)");
    px_status st = orig.all_to_all_v(be, out, recv_n, in, send_n, t, c, err);
    px_watchdog_leave();
    return st;
}

static px_status w_sync(px_backend *be, px_error *err)
{
    px_watchdog_enter("device sync (queued kernels and collectives)");
    px_status st = orig.sync(be, err);
    px_watchdog_leave();
    return st;
}

void px_watchdog_wrap_backend(px_backend *be)
{
    orig = *be;
    be->all_reduce = w_all_reduce;
    be->all_gather = w_all_gather;
    be->reduce_scatter = w_reduce_scatter;
    be->p2p_batch = w_p2p_batch;
    if (be->all_to_all_v)
        be->all_to_all_v = w_all_to_all_v;
    be->sync = w_sync;
}
