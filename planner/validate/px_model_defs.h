/* px_model_defs.h — what a framework's published model definitions fix
 * where a published run leaves a field out.
 *
 * A run names its framework and the model's shape (layers, hidden, heads)
 * but not always its vocabulary; when that shape is one of the framework's
 * own experiment configurations, the configuration's vocabulary is the one
 * the run trained with.  The table holds only what those configuration
 * files state (the source of each entry is in px_model_defs.c). */
#ifndef PX_MODEL_DEFS_H
#define PX_MODEL_DEFS_H

#include <stdbool.h>
#include <stdint.h>

/* The vocabulary of the framework's model definition with this shape;
 * false when the framework has none of that shape.  framework is the
 * run's framework as published ("Paxml (JAX)"); *source names the file. */
bool px_model_def_vocab(const char *framework, int64_t layers, int64_t hidden, int64_t heads,
                        int64_t *vocab, const char **source);

#endif
