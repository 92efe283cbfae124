/* px_model_dir.h — a Hugging Face model folder (one holding config.json)
 * given where a model is named. */
#ifndef PX_MODEL_DIR_H
#define PX_MODEL_DIR_H

#include <stdbool.h>
#include <stddef.h>


#include "px_error.h"

/* *is_dir says whether arg is a folder; if it is, path gets arg/config.json,
 * and a folder without that file is PX_ERR_NOT_FOUND naming it. */
px_status px_model_dir_config(const char *arg, char *path, size_t path_len, bool *is_dir,
                              px_error *err);

#endif
