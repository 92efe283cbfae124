/* px_validate_recipe.h — what a published benchmark recipe ran that its
 * rows of the published-runs schema leave out (docs/validation.md, "What a
 * framework does by default").  Pure functions of the row's strings; the
 * reasons and sources are in px_validate_recipe.c. */
#ifndef PX_VALIDATE_RECIPE_H
#define PX_VALIDATE_RECIPE_H

#include <stdbool.h>

/* Whether a row's run is one of NVIDIA's DGX Cloud performance recipes on
 * NeMo (framework "NeMo (NVIDIA DGX Cloud benchmarking recipe)"). */
bool px_val_recipe_is_nemo_dgxc(const char *framework);

/* The gradient precision of the recipe's run: 1 fp32 main gradients,
 * 0 bf16 (reduced and accumulated in bf16), -1 the recipe does not say
 * (the caller keeps Megatron's default, fp32). */
int px_val_recipe_grad_fp32(const char *framework);

/* The flash-attn generation the recipe forces for the attention core (2:
 * flash-attn 2), read from the row's source location (the recipe's
 * directory and release tag, "grok1/README_314b.md @ ... (v25.02.01)");
 * 0 when the recipe leaves the backend to Transformer Engine. */
int px_val_recipe_flash_version(const char *framework, const char *location);

#endif
