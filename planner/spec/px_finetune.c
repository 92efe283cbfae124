/* px_finetune.c — the fine-tuning mode and LoRA's settings: names and
 * parsing (px_finetune.h). */
#include "px_finetune.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const mode_names[PX_FT_COUNT] = {"none", "full", "lora"};
static const char *const target_names[PX_LORA_TARGET_COUNT] = {"qkv", "proj", "fc1", "fc2"};

void px_finetune_init(px_finetune *f)
{
    f->mode = PX_FT_NONE;
    f->rank = PX_LORA_DEFAULT_RANK;
    f->alpha = PX_LORA_DEFAULT_ALPHA;
    f->targets = PX_LORA_ALL;
}

const char *px_finetune_mode_name(px_ft_mode m)
{
    return m >= 0 && m < PX_FT_COUNT ? mode_names[m] : "?";
}

px_status px_finetune_mode_parse(const char *s, px_ft_mode *out, px_error *err)
{
    for (int i = 0; i < PX_FT_COUNT; i++)
        if (s && strcmp(s, mode_names[i]) == 0) {
            *out = (px_ft_mode)i;
            return PX_OK;
        }
    return PX_FAIL(err, PX_ERR_INVALID, "finetune: '%s' (expected none, full or lora)",
                   s ? s : "");
}

const char *px_lora_target_name(int bit)
{
    return bit >= 0 && bit < PX_LORA_TARGET_COUNT ? target_names[bit] : "?";
}

static int target_of(const char *name, size_t n)
{
    for (int i = 0; i < PX_LORA_TARGET_COUNT; i++)
        if (strlen(target_names[i]) == n && strncmp(name, target_names[i], n) == 0)
            return i;
    return -1;
}

px_status px_lora_targets_parse(const char *s, unsigned *out, px_error *err)
{
    if (s && strcmp(s, "all") == 0) {
        *out = PX_LORA_ALL;
        return PX_OK;
    }
    unsigned bits = 0;
    const char *p = s ? s : "";
    do {
        size_t n = strcspn(p, ",");
        int t = target_of(p, n);
        if (t < 0)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "lora targets: '%.*s' (expected a comma-separated list of qkv, "
                           "proj, fc1, fc2, or all)",
                           (int)n, p);
        bits |= 1u << t;
        p += n;
    } while (*p++ == ',');
    *out = bits;
    return PX_OK;
}

void px_lora_targets_format(unsigned targets, char *buf, size_t size)
{
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (int i = 0; i < PX_LORA_TARGET_COUNT; i++)
        if (targets & (1u << i)) {
            int w = snprintf(buf + used, size - used, "%s%s", used ? "," : "", target_names[i]);
            if (w < 0 || (size_t)w >= size - used)
                return;
            used += (size_t)w;
        }
}

px_status px_lora_set(px_finetune *f, const char *key, const char *value, px_error *err)
{
    const char *v = value ? value : "";
    char *end = NULL;
    if (strcmp(key, "rank") == 0) {
        long r = strtol(v, &end, 10);
        if (end == v || *end || r < 1 || r > PX_LORA_MAX_RANK)
            return PX_FAIL(err, PX_ERR_INVALID, "lora rank: '%s' (expected an integer 1..%d)", v,
                           PX_LORA_MAX_RANK);
        f->rank = (int)r;
        return PX_OK;
    }
    if (strcmp(key, "alpha") == 0) {
        double a = strtod(v, &end);
        if (end == v || *end || !isfinite(a) || a <= 0.0)
            return PX_FAIL(err, PX_ERR_INVALID, "lora alpha: '%s' (expected a positive number)",
                           v);
        f->alpha = a;
        return PX_OK;
    }
    if (strcmp(key, "targets") == 0)
        return px_lora_targets_parse(v, &f->targets, err);
    return PX_FAIL(err, PX_ERR_INVALID, "lora: unknown setting '%s' (expected rank, alpha, targets)",
                   key);
}
