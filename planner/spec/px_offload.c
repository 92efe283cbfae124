/* px_offload.c — offload kinds: names and parsing (px_offload.h). */
#include "px_offload.h"

#include <string.h>

static const char *const kind_names[PX_OFFLOAD_COUNT] = {"none", "optimizer"};

void px_offload_init(px_offload *o)
{
    o->kind = PX_OFFLOAD_NONE;
    o->fraction = 1.0;
}

const char *px_offload_kind_name(px_offload_kind k)
{
    return k >= 0 && k < PX_OFFLOAD_COUNT ? kind_names[k] : "?";
}

px_status px_offload_kind_parse(const char *s, px_offload_kind *out, px_error *err)
{
    for (int i = 0; i < PX_OFFLOAD_COUNT; i++)
        if (s && strcmp(s, kind_names[i]) == 0) {
            *out = (px_offload_kind)i;
            return PX_OK;
        }
    if (s && (strcmp(s, "params") == 0 || strcmp(s, "activations") == 0))
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "offload: '%s' is not modelled (parameter and activation offload "
                       "are not costed); allowed: none, optimizer",
                       s);
    return PX_FAIL(err, PX_ERR_INVALID, "offload: '%s' (expected none or optimizer)",
                   s ? s : "");
}
