/* fuzz_report — a report written by `execute --report`, as `compare` reads
 * it (px_report_read). */
#include "fuzz_util.h"
#include "px_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static px_report rep;
    px_error err;
    px_error_clear(&err);
    px_status st = px_report_read(px_fuzz_file(data, size, ".json"), &rep, &err);
    px_fuzz_check_error(st, &err);
    px_report_free(&rep);
    return 0;
}
