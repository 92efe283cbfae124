/* fuzz_plan — a plan file (px_plan_read): an accepted plan's degrees
 * multiply to its world size without overflow. */
#include "fuzz_util.h"
#include "px_plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static px_plan plan;
    px_error err;
    px_error_clear(&err);
    px_status st = px_plan_read(px_fuzz_file(data, size, ".json"), &plan, &err);
    px_fuzz_check_error(st, &err);
    if (st == PX_OK && px_parallel_gpus(&plan.par) < 1)
        abort();
    return 0;
}
