/* px_calib.c — options, clock and progress shared by the calibration steps. */
#include "px_calib.h"
#include "px_cpu_clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef PX_HAVE_OPENBLAS_THREADS
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
#endif

void px_calib_opts_init(px_calib_opts *o, bool quick)
{
    o->quick = quick;
    o->blas_threads = px_calib_default_threads();
    /* Long enough that the clock's resolution and one preemption by another
     * process on this shared 2-core machine stay small against it. */
    o->min_time_s = quick ? 0.008 : 0.03;
    o->progress = NULL;
    o->progress_ctx = NULL;
    o->sync = NULL;
    o->sync_ctx = NULL;
}

static int env_positive_int(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (*end != '\0' || n <= 0 || n > 4096)
        return 0;
    return (int)n;
}

int px_calib_default_threads(void)
{
    int n = env_positive_int("OPENBLAS_NUM_THREADS");
    if (n == 0)
        n = env_positive_int("OMP_NUM_THREADS");
    return n > 0 ? n : 1;
}

int px_calib_set_blas_threads(int n)
{
#ifdef PX_HAVE_OPENBLAS_THREADS
    if (n > 0)
        openblas_set_num_threads(n);
    return openblas_get_num_threads();
#else
    (void)n;
    return px_calib_default_threads();
#endif
}

void px_calib_sync(const px_calib_opts *o)
{
    if (o && o->sync)
        o->sync(o->sync_ctx);
}

double px_calib_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double px_calib_work_s(const px_calib_opts *o)
{
    return o && o->blas_threads == 1 ? px_thread_cpu_s() : px_calib_now_s();
}

void px_calib_say(const px_calib_opts *o, const char *fmt, ...)
{
    if (!o || !o->progress)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->progress(o->progress_ctx, "%s", line);
}
