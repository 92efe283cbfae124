#include "px_datadir.h"

#include <sys/stat.h>

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

const char *px_datadir_pick(const char *in_source, const char *installed)
{
    if (is_dir(in_source) || !is_dir(installed))
        return in_source;
    return installed;
}
