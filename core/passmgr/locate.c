/* locate.c: where the shipped plugins and pipelines are.
 *
 * Found relative to the core library itself (dladdr), so the same rule serves
 * a build tree (build/lib/libpassrun.so -> build/lib/passrun/plugins) and any
 * install prefix (PREFIX/lib/libpassrun.so -> PREFIX/lib/passrun/plugins,
 * PREFIX/share/passrun/pipelines), with no environment variable and no path
 * fixed at build time that a `cmake --install --prefix` would make wrong. A
 * build tree's pipelines are the source tree's, compiled in. */
#define _GNU_SOURCE
#include "locate.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The folder libpassrun was loaded from, or "" when it cannot be told. */
static const char *library_dir(void)
{
	static char dir[PATH_MAX];
	static bool done;
	if (!done) {
		done = true;
		Dl_info info;
		char real[PATH_MAX];
		if (dladdr((void *)library_dir, &info) && info.dli_fname &&
		    realpath(info.dli_fname, real)) {
			snprintf(dir, sizeof dir, "%s", dirname(real));
		}
	}
	return dir;
}

const char *pr_locate_plugin_dir(void)
{
	static char path[PATH_MAX + 32];
	if (!library_dir()[0])
		return NULL;
	snprintf(path, sizeof path, "%s/passrun/plugins", library_dir());
	return is_dir(path) ? path : NULL;
}

const char *pr_locate_pipeline_dir(void)
{
	static char path[PATH_MAX + 64];
	if (library_dir()[0]) {
		snprintf(path, sizeof path, "%s/%s", library_dir(), PASSRUN_PIPELINE_DIR_FROM_LIBDIR);
		if (is_dir(path))
			return path;
	}
	return is_dir(PASSRUN_BUILD_PIPELINE_DIR) ? PASSRUN_BUILD_PIPELINE_DIR : NULL;
}
