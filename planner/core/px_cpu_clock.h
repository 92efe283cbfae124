/* px_cpu_clock.h — the calling thread's CPU time beside the wall clock.
 *
 * A thread that another process displaces from its core stops this clock
 * while the wall clock runs on, so on-CPU work timed with it does not depend
 * on the machine's load (docs/calibration.md, "Load").  It still counts a
 * thread that busy-waits: an MPI rank polling for a peer that is off its core
 * accumulates CPU time, which is why the executor reports it beside the wall
 * step time and not instead of it. */
#ifndef PX_CPU_CLOCK_H
#define PX_CPU_CLOCK_H

#include <time.h>

/* Seconds of CPU time the calling thread has used (0 where the clock is
 * missing: differences are then 0, never negative). */
static inline double px_thread_cpu_s(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return 0.0;
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
