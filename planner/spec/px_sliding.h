/* px_sliding.h — sliding-window attention per layer (px_model.sliding_window,
 * layer_sliding): reading and writing the per-layer kinds as Hugging Face's
 * `layer_types` ("sliding_attention" / "full_attention"), and the keys a
 * query attends to under each FLOP convention (docs/cost-model.md, "The
 * step"; docs/model-schema.md). */
#ifndef PX_SLIDING_H
#define PX_SLIDING_H

#include <stdbool.h>
#include <stdint.h>

#include "px_error.h"
#include "px_model.h"
#include "px_plan_json.h"

bool px_model_layer_is_sliding(const px_model *m, int64_t layer);
int64_t px_model_n_sliding_layers(const px_model *m);

/* Sets the sliding layers from a `layer_types` array (NULL: every layer
 * slides when sliding_window > 0).  Errors name file, the key and the
 * allowed values: an array of n_layers strings, each "sliding_attention" or
 * "full_attention", and a positive sliding_window when any layer slides. */
px_status px_sliding_read(px_model *m, json_t *layer_types, const char *file, const char *key,
                          px_error *err);

/* The `layer_types` array of m (a new reference), NULL without a window. */
json_t *px_sliding_write(const px_model *m);

/* Keys one query of layer `layer` is counted against at sequence length s:
 * full convention (mfu): s, or min(s, w) on a sliding layer (the band's
 * full product); as executed (mfu_causal): (s + 1)/2, or on a sliding layer
 * the mean of min(i + 1, w) over the positions i, w − w(w − 1)/(2s) when
 * s > w. */
double px_sliding_keys_full(const px_model *m, int64_t layer, int64_t s);
double px_sliding_keys_causal(const px_model *m, int64_t layer, int64_t s);

/* The mean over the model's layers of px_sliding_keys_causal / (s / 2): the
 * fraction of a full causal attention core the average layer executes (1
 * without sliding layers; a causal kernel's cost is charged s/2 keys). */
double px_sliding_causal_fraction(const px_model *m, int64_t s);

#endif
