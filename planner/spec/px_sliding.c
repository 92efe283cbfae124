/* px_sliding.c — sliding-window attention per layer (px_sliding.h). */
#include "px_sliding.h"

#include <string.h>

bool px_model_layer_is_sliding(const px_model *m, int64_t layer)
{
    if (m->sliding_window <= 0 || layer < 0 || layer >= 8 * (int64_t)sizeof m->layer_sliding)
        return false;
    return (m->layer_sliding[layer / 8] >> (layer % 8)) & 1u;
}

int64_t px_model_n_sliding_layers(const px_model *m)
{
    int64_t n = 0;
    for (int64_t l = 0; l < m->n_layers; l++)
        n += px_model_layer_is_sliding(m, l) ? 1 : 0;
    return n;
}

static void set_layer(px_model *m, int64_t l, bool on)
{
    if (on)
        m->layer_sliding[l / 8] |= (uint8_t)(1u << (l % 8));
    else
        m->layer_sliding[l / 8] &= (uint8_t)~(1u << (l % 8));
}

px_status px_sliding_read(px_model *m, json_t *types, const char *file, const char *key,
                          px_error *err)
{
    memset(m->layer_sliding, 0, sizeof m->layer_sliding);
    int64_t max = 8 * (int64_t)sizeof m->layer_sliding;
    if (m->sliding_window < 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "sliding_window %lld: must be >= 0 (0: no sliding window)",
                            (long long)m->sliding_window);
    if (!types || json_is_null(types)) {
        for (int64_t l = 0; l < m->n_layers && l < max && m->sliding_window > 0; l++)
            set_layer(m, l, true);
        return PX_OK;
    }
    if (!json_is_array(types) || (int64_t)json_array_size(types) != m->n_layers)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "%s: expected an array of %lld strings (one a layer), each "
                            "\"sliding_attention\" or \"full_attention\"",
                            key, (long long)m->n_layers);
    size_t i;
    json_t *v;
    bool any = false;
    json_array_foreach(types, i, v) {
        const char *t = json_is_string(v) ? json_string_value(v) : "";
        bool slide = strcmp(t, "sliding_attention") == 0;
        if (!slide && strcmp(t, "full_attention") != 0)
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s[%zu]: allowed values are \"sliding_attention\", "
                                "\"full_attention\"",
                                key, i);
        if ((int64_t)i < max)
            set_layer(m, (int64_t)i, slide);
        any = any || slide;
    }
    if (any && m->sliding_window <= 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "%s has sliding_attention layers but sliding_window is %lld: give "
                            "the window (tokens, > 0)",
                            key, (long long)m->sliding_window);
    return PX_OK;
}

json_t *px_sliding_write(const px_model *m)
{
    if (m->sliding_window <= 0)
        return NULL;
    json_t *a = json_array();
    for (int64_t l = 0; a && l < m->n_layers; l++)
        json_array_append_new(a, json_string(px_model_layer_is_sliding(m, l)
                                                 ? "sliding_attention"
                                                 : "full_attention"));
    return a;
}

double px_sliding_keys_full(const px_model *m, int64_t layer, int64_t s)
{
    if (px_model_layer_is_sliding(m, layer) && m->sliding_window < s)
        return (double)m->sliding_window;
    return (double)s;
}

double px_sliding_keys_causal(const px_model *m, int64_t layer, int64_t s)
{
    double sd = (double)s, w = (double)m->sliding_window;
    if (s <= 0)
        return 0.0;
    if (px_model_layer_is_sliding(m, layer) && m->sliding_window < s)
        return w - w * (w - 1.0) / (2.0 * sd);
    return 0.5 * (sd + 1.0);
}

double px_sliding_causal_fraction(const px_model *m, int64_t s)
{
    if (m->sliding_window <= 0 || s <= 0 || m->n_layers <= 0)
        return 1.0;
    double sum = 0.0;
    for (int64_t l = 0; l < m->n_layers; l++)
        sum += px_model_layer_is_sliding(m, l) && m->sliding_window < s
                   ? px_sliding_keys_causal(m, l, s) / (0.5 * (double)s)
                   : 1.0;
    return sum / (double)m->n_layers;
}
