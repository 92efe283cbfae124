/* px_plan_recipe.h — `plan --recipe NAME|FILE`: a published training recipe
 * (recipes/, docs/plan-cli.md, "Recipes") as plan options.  A recipe is the
 * options a framework's recipe sets (model, GPUs, layout, batch, fine-tuning
 * ...); the command line's own options win over the recipe's, so a user
 * plans the recipe as published or changes one setting of it. */
#ifndef PX_PLAN_RECIPE_H
#define PX_PLAN_RECIPE_H

#include <stdbool.h>
#include <stdio.h>

#include "px_error.h"

/* A command line with a recipe's options in front of the user's. */
typedef struct {
    int argc;
    char **argv;   /* argv[argc] is NULL */
    char **owned;  /* the option texts made from the recipe */
    int n_owned;
} plan_argv;

/* The recipes' directory: $PARALLAX_RECIPES_DIR if set, else recipes/ of the
 * source tree (or the installed copy). */
const char *px_recipes_dir_default(void);

/* out: argv with the options of the recipe named by --recipe (if any) put
 * in front, leaving out those the command line gives under any spelling
 * (and --model when model_given: a binding's model object).  Without
 * --recipe, out is a copy of argv.  Errors name the recipe file, the field
 * and the allowed values.  Free out with plan_argv_free. */
px_status plan_recipe_expand(int argc, char **argv, bool model_given, plan_argv *out,
                             px_error *err);

void plan_argv_free(plan_argv *a);

/* `plan --list-recipes`: a header naming the directory, then one line per
 * recipe, its name and description, in name order. */
void plan_recipe_list(FILE *out);

#endif
