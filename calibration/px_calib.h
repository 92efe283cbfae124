/* px_calib.h — what every calibration step shares: the options, the clock and
 * the progress callback.
 *
 * Why a callback: calibration takes a while and must show progress, but the
 * library never prints; `calibrate`'s main passes a function that writes to
 * stderr (rank 0 only under MPI). */
#ifndef PX_CALIB_H
#define PX_CALIB_H

#include <stdbool.h>

/* printf-like progress sink; ctx is px_calib_opts.progress_ctx. */
typedef void (*px_calib_progress_fn)(void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

typedef struct {
    bool quick;              /* the short sweep the tests use (well under 30 s) */
    int blas_threads;        /* BLAS threads per process (the executor's count) */
    double min_time_s;       /* shortest timed window for one measurement */
    px_calib_progress_fn progress; /* may be NULL */
    void *progress_ctx;
    /* Called before each measurement when set: under MPI a barrier, so every
     * rank times the same kernel at once, as the executor's ranks run. */
    void (*sync)(void *ctx);
    void *sync_ctx;
} px_calib_opts;

/* Defaults: full sweep, blas_threads from px_calib_default_threads(),
 * min_time_s 0.03 (0.008 with quick), no progress output. */
void px_calib_opts_init(px_calib_opts *o, bool quick);

/* The BLAS thread count the executor uses: OPENBLAS_NUM_THREADS, else
 * OMP_NUM_THREADS, else 1 (the executor runs one rank per core). */
int px_calib_default_threads(void);

/* Applies n BLAS threads (openblas_set_num_threads when the BLAS has it);
 * returns the count in effect afterwards. */
int px_calib_set_blas_threads(int n);

/* Calls o->sync when set. */
void px_calib_sync(const px_calib_opts *o);

/* Monotonic wall clock, seconds. */
double px_calib_now_s(void);

/* The clock that times work on the calling process's cores: with one BLAS
 * thread (o->blas_threads 1, the executor's one rank per core) the calling
 * thread's CPU time (px_cpu_clock.h), which another process taking the core
 * does not advance, so a rate measured on a busy machine is the rate of the
 * cores; with more threads the wall clock (the work is spread over threads
 * this thread's clock does not see). */
double px_calib_work_s(const px_calib_opts *o);

/* Calls o->progress when set. */
void px_calib_say(const px_calib_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
