/* px_datadir.h — where the presets are read from when no directory is
 * given: the source tree's (a build run in place), else the installed copy
 * under share/parallax/ (meson install), so that installed tools work after
 * the source tree is gone. */
#ifndef PX_DATADIR_H
#define PX_DATADIR_H

/* in_source if that directory exists, else installed (if it exists), else
 * in_source (so that the "not found" message names the usual place). */
const char *px_datadir_pick(const char *in_source, const char *installed);

#endif
