/* test_host_memory.c — the CPU backend keeps the host memory the engine
 * frees: a buffer allocated again after a free comes back as pages the
 * process already holds, not as fresh pages the kernel faults in one 4 KiB
 * page at a time on their first write (docs/executor.md "Host memory").
 * Counts the process's minor page faults (getrusage), which do not depend on
 * the CPU or its load.  Both cases page-fault every page when glibc's
 * defaults apply: a buffer above the 32 MiB ceiling of its mmap threshold is
 * unmapped by free, and a micro-batch's worth of smaller buffers freed
 * together leaves a heap top above its trim threshold, which is returned to
 * the system. */
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#include "px_backend.h"
#include "px_test.h"

static long minor_faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/* Allocates n buffers of `bytes` each, writes every byte, frees them in
 * reverse order (as the backward frees a micro-batch's activations); returns
 * the minor faults taken. */
static long cycle(px_backend *be, int n, int64_t bytes)
{
    void *p[16] = {0};
    px_error err;
    long f0 = minor_faults();
    for (int i = 0; i < n; i++) {
        CHECK(be->alloc(be, bytes, &p[i], &err) == PX_OK);
        if (p[i])
            memset(p[i], 1, (size_t)bytes);
    }
    for (int i = n - 1; i >= 0; i--)
        be->free(be, p[i]);
    return minor_faults() - f0;
}

static void check_reuse(px_backend *be, int n, int64_t bytes, const char *what)
{
    long pages = (long)(n * bytes / 4096);
    cycle(be, n, bytes); /* the first pass faults its pages in */
    long again = cycle(be, n, bytes);
    /* a few pages of bookkeeping at most, against every page when the memory
     * went back to the system */
    CHECK_MSG(again < pages / 16, "%s: %ld minor faults for %ld pages reused", what, again,
              pages);
}

int main(void)
{
#ifndef __GLIBC__
    return 77; /* skipped: the backend sets glibc's allocator only */
#endif
    px_backend be;
    px_error err;
    CHECK(px_backend_cpu_create(&be, &err) == PX_OK);
    check_reuse(&be, 1, (int64_t)48 << 20, "one 48 MiB buffer");
    check_reuse(&be, 12, (int64_t)3 << 20, "twelve 3 MiB buffers");
    be.destroy(&be);
    return px_test_result("exec_host_memory");
}
