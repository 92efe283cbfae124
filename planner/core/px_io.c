/* px_io.c — atomic, fully checked output files (see px_io.h). */
#include "px_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Writes all n bytes to fd, retrying short writes and EINTR. */
static int write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The directory part of path ("." when there is none) into buf. */
static void parent_dir(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, len, ".");
    else if (slash == path)
        snprintf(buf, len, "/");
    else
        snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

px_status px_io_sync_parent_dir(const char *path, px_error *err)
{
    char dir[4096];
    parent_dir(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return px_error_set(err, PX_ERR_IO, dir, 0, 0, "cannot open the directory: %s",
                            strerror(errno));
    /* Some file systems cannot sync a directory (EINVAL): nothing to do there. */
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    if (rc != 0 && saved != EINVAL && saved != EROFS)
        return px_error_set(err, PX_ERR_IO, dir, 0, 0, "cannot sync the directory: %s",
                            strerror(saved));
    return PX_OK;
}

/* The parent directory of path exists, is a directory and may be written. */
static px_status check_parent(const char *path, px_error *err)
{
    char dir[4096];
    parent_dir(path, dir, sizeof dir);
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return px_error_set(err, PX_ERR_IO, path, 0, 0,
                            "the directory %s %s (create it first)", dir,
                            errno == ENOENT ? "does not exist" : strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "%s is not a directory", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "cannot write in the directory %s: %s",
                            dir, strerror(errno));
    return PX_OK;
}

px_status px_io_check_target(const char *path, px_error *err)
{
    if (!path || !path[0])
        return PX_FAIL(err, PX_ERR_INVALID, "an output path is empty (give a file name)");
    if (strlen(path) > 3000)
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0, "output path too long (at most "
                            "3000 characters)");
    if (path[strlen(path) - 1] == '/')
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "is a directory (the path ends in /); give a file name");
    struct stat sb;
    if (lstat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            return px_error_set(err, PX_ERR_IO, path, 0, 0, "is a directory; give a file name");
        if (S_ISLNK(sb.st_mode))
            return px_error_set(err, PX_ERR_IO, path, 0, 0,
                                "is a symbolic link: an output replaces only a regular file "
                                "(give the file's own path)");
        if (!S_ISREG(sb.st_mode))
            return px_error_set(err, PX_ERR_IO, path, 0, 0,
                                "is not a regular file (a device, FIFO or socket): an output "
                                "replaces only a regular file or creates a new one");
        if (access(path, W_OK) != 0)
            return px_error_set(err, PX_ERR_IO, path, 0, 0, "cannot replace the file: %s",
                                strerror(errno));
    } else if (errno != ENOENT) {
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "cannot examine the path: %s",
                            strerror(errno));
    }
    return check_parent(path, err);
}

px_status px_io_make_dir(const char *path, px_error *err)
{
    if (!path || !path[0])
        return PX_FAIL(err, PX_ERR_INVALID, "an output directory is empty (give a directory)");
    struct stat sb;
    if (lstat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            return PX_OK;
        return px_error_set(err, PX_ERR_IO, path, 0, 0,
                            "exists and is not a directory; give a directory");
    }
    /* another process (a rank beside this one) may create it first */
    if (mkdir(path, 0755) != 0 && !(errno == EEXIST && lstat(path, &sb) == 0 &&
                                    S_ISDIR(sb.st_mode)))
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "cannot create the directory: %s",
                            strerror(errno));
    return PX_OK;
}

px_status px_io_check_option(const char *option, const char *path, bool is_dir, px_error *err)
{
    px_status st = is_dir ? px_io_make_dir(path, err) : px_io_check_target(path, err);
    if (st != PX_OK && err) /* the message names the option and the path */
        snprintf(err->file, sizeof err->file, "%s %.400s", option,
                 path && path[0] ? path : "''");
    return st;
}

px_status px_io_write_atomic(const char *path, const void *data, size_t n, px_error *err)
{
    px_status st = px_io_check_target(path, err);
    if (st != PX_OK)
        return st;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return px_error_set(err, PX_ERR_IO, path, 0, 0,
                            "cannot create a temporary file beside it: %s", strerror(errno));
    const char *what = NULL;
    if (write_all(fd, data, n) != 0)
        what = "write failed";
    else if (fsync(fd) != 0)
        what = "fsync failed";
    /* mkstemp makes 0600; an output file gets the usual mode for a new file. */
    else if (fchmod(fd, 0644) != 0)
        what = "chmod failed";
    int saved = errno;
    if (close(fd) != 0 && !what) {
        what = "close failed";
        saved = errno;
    }
    if (!what && rename(tmp, path) != 0) {
        what = "rename failed";
        saved = errno;
    }
    if (what) {
        unlink(tmp);
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "%s: %s (the previous file, if any, "
                            "is unchanged)", what, strerror(saved));
    }
    return px_io_sync_parent_dir(path, err);
}

px_status px_io_flush_stdout(px_error *err)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return PX_OK;
    int saved = errno;
    return PX_FAIL(err, PX_ERR_IO, "standard output: write failed: %s",
                   saved ? strerror(saved) : "an earlier write was refused");
}

px_status px_io_write_json(const char *path, const json_t *root, size_t flags, px_error *err)
{
    char *text = json_dumps(root, flags);
    if (!text)
        return px_error_set(err, PX_ERR_NOMEM, path, 0, 0, "cannot serialise the JSON");
    size_t len = strlen(text);
    char *buf = realloc(text, len + 2);
    if (!buf) {
        free(text);
        return px_error_set(err, PX_ERR_NOMEM, path, 0, 0, "out of memory");
    }
    buf[len] = '\n';
    buf[len + 1] = '\0';
    px_status st = px_io_write_atomic(path, buf, len + 1, err);
    free(buf);
    return st;
}
