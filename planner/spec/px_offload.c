/* px_offload.c — offload kinds: names and parsing (px_offload.h). */
#include "px_offload.h"

#include <string.h>

static const char *const kind_names[PX_OFFLOAD_COUNT] = {"none", "optimizer", "params"};

const char *const px_act_offload_mode_names[PX_ACT_OFFLOAD_COUNT] = {
    "none", "leading_layers", "every_layer", "checkpoints"};

void px_offload_init(px_offload *o)
{
    o->kind = PX_OFFLOAD_NONE;
    o->fraction = 1.0;
    o->activations = false;
    o->act_layers = 0;
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
    return PX_FAIL(err, PX_ERR_INVALID, "offload: '%s' (expected none, optimizer or params)",
                   s ? s : "");
}

px_status px_offload_parse_list(const char *s, px_offload *o, px_error *err)
{
    o->kind = PX_OFFLOAD_NONE;
    o->activations = false;
    if (s && strcmp(s, "none") == 0)
        return PX_OK;
    char item[32];
    const char *p = s ? s : "";
    do {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof item)
            return PX_FAIL(err, PX_ERR_INVALID, "offload: '%s' has an empty or unknown item",
                           s ? s : "");
        memcpy(item, p, n);
        item[n] = '\0';
        bool dup;
        if (strcmp(item, "activations") == 0) {
            dup = o->activations;
            o->activations = true;
        } else if (strcmp(item, "optimizer") == 0 || strcmp(item, "params") == 0) {
            dup = o->kind != PX_OFFLOAD_NONE;
            o->kind = item[0] == 'o' ? PX_OFFLOAD_OPTIMIZER : PX_OFFLOAD_PARAMS;
        } else {
            return PX_FAIL(err, PX_ERR_INVALID,
                           strcmp(item, "none") == 0
                               ? "offload: 'none' cannot be listed with others"
                               : "offload: '%s' is not one of optimizer, params, activations",
                           item);
        }
        if (dup)
            return PX_FAIL(err, PX_ERR_INVALID, "offload: '%s' named twice%s", item,
                           item[0] == 'a' ? "" : " (params holds the optimizer)");
        p += n;
    } while (*p++ == ',');
    return PX_OK;
}
