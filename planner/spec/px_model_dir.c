/* px_model_dir.c — a downloaded Hugging Face model folder as a --model
 * argument: the folder's config.json describes the network. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "px_model_dir.h"

px_status px_model_dir_config(const char *arg, char *path, size_t path_len, bool *is_dir,
                              px_error *err)
{
    struct stat sb;
    *is_dir = stat(arg, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (!*is_dir)
        return PX_OK;
    size_t n = strlen(arg);
    const char *sep = n > 0 && arg[n - 1] == '/' ? "" : "/";
    if ((size_t)snprintf(path, path_len, "%s%sconfig.json", arg, sep) >= path_len)
        return PX_FAIL(err, PX_ERR_INVALID, "model folder path too long: %s", arg);
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return PX_FAIL(err, PX_ERR_NOT_FOUND,
                       "%s: no such file; a model folder must hold the Hugging Face "
                       "config.json",
                       path);
    return PX_OK;
}
