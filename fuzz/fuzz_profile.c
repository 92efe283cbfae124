/* fuzz_profile — a hardware profile: accepted profiles have finite, positive
 * rates (the cost model divides by them). */
#include <math.h>

#include "fuzz_util.h"
#include "px_hw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static px_hw hw;
    px_error err;
    px_error_clear(&err);
    px_status st = px_hw_load(px_fuzz_file(data, size, ".json"), NULL, &hw, &err);
    px_fuzz_check_error(st, &err);
    if (st == PX_OK && !(isfinite(hw.peak_flops) && hw.peak_flops > 0 && isfinite(hw.hbm_bw) &&
                         hw.hbm_bw > 0 && hw.intra_bw > 0 && hw.inter_bw > 0))
        abort();
    return 0;
}
