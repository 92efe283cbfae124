/* px_hybrid.c — hybrid Mamba-2 / attention stacks (px_hybrid.h). */
#include "px_hybrid.h"

#include <stddef.h>
#include <string.h>

#include "px_jfield.h"

/* Upper bounds of the mixer's sizes: far beyond Nemotron-H's (128 heads of
 * 64, state 128, 8 groups, 4 taps), small enough for the 64-bit products of
 * the parameter count. */
#define MAX_MAMBA (1 << 14)

#define FI(key, field, req, mn, mx) \
    {key, PX_JF_I64, offsetof(px_model, field), 0, req, mn, NULL, 0, mx}
static const px_jfield mamba_fields[] = {
    FI("heads", mamba_heads, true, 1, MAX_MAMBA),
    FI("head_dim", mamba_head_dim, true, 1, MAX_MAMBA),
    FI("state", mamba_state, true, 1, MAX_MAMBA),
    FI("groups", mamba_groups, false, 1, MAX_MAMBA),
    FI("conv", mamba_conv, false, 1, 64),
};
#define N_MAMBA_FIELDS ((int)(sizeof mamba_fields / sizeof mamba_fields[0]))

bool px_model_is_hybrid(const px_model *m)
{
    return m->layer_pattern[0] != '\0';
}

px_layer_kind px_hybrid_kind(char symbol)
{
    const char *p = symbol ? strchr(PX_HYBRID_SYMBOLS, symbol) : NULL;
    return p ? (px_layer_kind)(PX_LAYER_MAMBA + (p - PX_HYBRID_SYMBOLS)) : PX_LAYER_DENSE;
}

static bool has_symbol(const px_model *m, char c)
{
    return strchr(m->layer_pattern, c) != NULL;
}

px_status px_hybrid_check(const px_model *m, px_error *err)
{
    const char *n = m->name;
    if (!px_model_is_hybrid(m))
        return m->mamba_heads == 0
                   ? PX_OK
                   : PX_FAIL(err, PX_ERR_INVALID,
                             "model %s: mamba needs a layer_pattern with 'M' layers", n);
    size_t len = strlen(m->layer_pattern);
    size_t bad = strspn(m->layer_pattern, PX_HYBRID_SYMBOLS);
    if (bad < len)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: layer_pattern[%zu] '%c': allowed symbols are M (Mamba-2), * "
                       "(attention), - (MLP), E (experts)", n, bad, m->layer_pattern[bad]);
    if ((int64_t)len != m->n_layers)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: layer_pattern has %zu symbols, n_layers is %lld (one a layer)",
                       n, len, (long long)m->n_layers);
    if (has_symbol(m, 'M')) {
        if (m->mamba_heads <= 0 || m->mamba_head_dim <= 0 || m->mamba_state <= 0 ||
            m->mamba_groups <= 0 || m->mamba_conv <= 0)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "model %s: 'M' layers need mamba heads, head_dim and state > 0 "
                           "(groups default 1, conv %d)", n, PX_MAMBA_CONV_DEFAULT);
        if (m->mamba_heads % m->mamba_groups != 0)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "model %s: mamba groups %lld must divide mamba heads %lld", n,
                           (long long)m->mamba_groups, (long long)m->mamba_heads);
    }
    if (has_symbol(m, 'E') && m->n_experts <= 0)
        return PX_FAIL(err, PX_ERR_INVALID, "model %s: 'E' layers need n_experts > 0", n);
    if (m->block != PX_BLOCK_LLAMA || m->attn != PX_ATTN_STANDARD || m->sandwich_norms ||
        m->n_mtp_modules > 0 || m->sliding_window > 0 || m->first_dense_layers > 0 ||
        m->moe_layer_freq != 1)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: a layer_pattern takes the llama block with standard "
                       "attention; not modelled with it: attention mla, sandwich_norms, "
                       "n_mtp_modules, sliding_window, first_dense_layers, moe_layer_freq "
                       "(the pattern places the experts)", n);
    return PX_OK;
}

px_status px_hybrid_read(px_model *m, json_t *obj, const char *file, const char *path,
                         px_error *err)
{
    char key[256];
    json_t *pat = json_object_get(obj, "layer_pattern");
    json_t *mamba = json_object_get(obj, "mamba");
    m->layer_pattern[0] = '\0';
    m->mamba_heads = m->mamba_head_dim = m->mamba_state = m->mamba_groups = 0;
    m->mamba_conv = 0;
    if (pat) {
        px_jf_join(key, sizeof key, path, "layer_pattern");
        const char *s = json_is_string(pat) ? json_string_value(pat) : NULL;
        if (!s || strlen(s) >= sizeof m->layer_pattern)
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: expected a string of at most %d symbols of \"%s\"", key,
                                PX_MODEL_MAX_LAYERS, PX_HYBRID_SYMBOLS);
        memcpy(m->layer_pattern, s, strlen(s) + 1);
    }
    if (mamba) {
        px_jf_join(key, sizeof key, path, "mamba");
        if (!json_is_object(mamba))
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: expected an object (heads, head_dim, state, groups, conv)",
                                key);
        m->mamba_groups = 1;
        m->mamba_conv = PX_MAMBA_CONV_DEFAULT;
        return px_jf_read(mamba_fields, N_MAMBA_FIELDS, mamba, m, file, key, NULL, err);
    }
    return PX_OK;
}

int px_hybrid_write(const px_model *m, json_t *obj)
{
    if (!px_model_is_hybrid(m))
        return 0;
    if (json_object_set_new(obj, "layer_pattern", json_string(m->layer_pattern)) != 0)
        return -1;
    if (m->mamba_heads <= 0)
        return 0;
    json_t *mb = json_object();
    px_error e;
    if (!mb || px_jf_write(mamba_fields, N_MAMBA_FIELDS, m, mb, "mamba", &e) != PX_OK ||
        json_object_set_new(obj, "mamba", mb) != 0)
        return -1;
    return 0;
}

int64_t px_mamba_d_inner(const px_model *m)
{
    return m->mamba_heads * m->mamba_head_dim;
}

int64_t px_mamba_conv_channels(const px_model *m)
{
    return px_mamba_d_inner(m) + 2 * m->mamba_groups * m->mamba_state;
}

int64_t px_mamba_in_proj_width(const px_model *m)
{
    return px_mamba_d_inner(m) + px_mamba_conv_channels(m) + m->mamba_heads;
}

int64_t px_mamba_matmul_params(const px_model *m)
{
    return m->hidden * px_mamba_in_proj_width(m) + px_mamba_d_inner(m) * m->hidden;
}

int64_t px_mamba_params(const px_model *m)
{
    int64_t conv = px_mamba_conv_channels(m) * (m->mamba_conv + 1); /* weights + bias */
    return px_mamba_matmul_params(m) + conv + 3 * m->mamba_heads + px_mamba_d_inner(m);
}
