/* fuzz_model — a model preset or a Hugging Face config.json (px_model_load
 * tells them apart by "model_type"): accepted models must pass validation
 * and count their parameters without overflow (UBSan watches). */
#include "fuzz_util.h"
#include "px_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    px_model m;
    px_error err;
    px_error_clear(&err);
    px_status st = px_model_load(px_fuzz_file(data, size, ".json"), NULL, &m, &err);
    px_fuzz_check_error(st, &err);
    if (st == PX_OK) {
        if (px_model_validate(&m, &err) != PX_OK)
            abort();
        px_param_count pc;
        px_model_count_params(&m, &pc);
        if (pc.total <= 0 || pc.total > PX_MODEL_MAX_PARAMS)
            abort();
    }
    return 0;
}
