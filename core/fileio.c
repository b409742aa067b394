/* fileio.c: loading and saving program files.
 *
 * Loading goes by content, never by name: a file that starts with the binary
 * magic is mapped read-only and loaded with borrow, so blobs and constant
 * bytes point into the mapping, which the program then owns
 * (program->mapping; pr_program_free unmaps it). Anything else is text.
 *
 * Saving is atomic: the bytes go to a fresh temporary file in the target's
 * folder (so the rename cannot cross file systems), which is flushed to disk
 * with fsync and renamed over the target; the folder is synced too, so the
 * rename itself survives a crash. On any error the temporary file is removed
 * and the target is left as it was. */
#define _GNU_SOURCE   /* mkostemp */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "passrun/format.h"

/* ---- loading ------------------------------------------------------------- */

static pr_err *load_text(const char *path, const uint8_t *bytes, size_t len, pr_program **out)
{
	/* A NUL-terminated copy: the parser gets its length, but a terminator
	 * costs nothing and protects any helper that looks one byte ahead. */
	char *text = pr_xmalloc(len + 1);
	if (len)
		memcpy(text, bytes, len);
	text[len] = 0;
	pr_err *e = pr_text_parse(path, text, len, out);
	free(text);
	return e;
}

static pr_err *load_mapped(const char *path, int fd, size_t len, pr_program **out)
{
	void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return pr_err_new("%s: cannot map the file: %s", path, strerror(errno));
	pr_err *e;
	if (pr_binary_sniff(map, len)) {
		e = pr_binary_load(path, map, len, true, out);
		if (!e) {
			(*out)->mapping = map;
			(*out)->mapping_size = len;
			return NULL;
		}
	} else {
		e = load_text(path, map, len, out);
	}
	munmap(map, len);
	return e;
}

pr_err *pr_program_load_file(const char *path, pr_program **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return pr_err_new("%s: cannot open: %s", path, strerror(errno));
	struct stat st;
	pr_err *e;
	if (fstat(fd, &st) < 0)
		e = pr_err_new("%s: cannot stat: %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		e = pr_err_new("%s: not a regular file", path);
	else if (st.st_size == 0)   /* mmap refuses an empty range; text decides */
		e = load_text(path, (const uint8_t *)"", 0, out);
	else
		e = load_mapped(path, fd, (size_t)st.st_size, out);
	close(fd);
	return e;
}

/* ---- saving -------------------------------------------------------------- */

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

static pr_err *write_all(int fd, const char *tmp, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return pr_err_new("%s: cannot write: %s", tmp, w < 0 ? strerror(errno) : "no progress");
		p += w;
		n -= (size_t)w;
	}
	return NULL;
}

/* The folder part of path ("." when there is none). */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return pr_xstrdup(".");
	if (slash == path)
		return pr_xstrdup("/");
	return pr_xstrndup(path, (size_t)(slash - path));
}

static void sync_dir(const char *path)
{
	char *dir = dir_of(path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);   /* best effort: some file systems refuse it */
		close(fd);
	}
	free(dir);
}

/* A fresh file next to path, with the permissions a plain create would give. */
static int temp_next_to(const char *path, char **tmp_out)
{
	char *dir = dir_of(path);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char *tmp = pr_xasprintf("%s/.%s.tmp.XXXXXX", dir, base);
	free(dir);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		free(tmp);
		return -1;
	}
	mode_t mask = umask(0);
	umask(mask);
	fchmod(fd, 0666 & ~mask);
	*tmp_out = tmp;
	return fd;
}

static pr_err *save_bytes(const char *path, const uint8_t *bytes, size_t len)
{
	char *tmp = NULL;
	int fd = temp_next_to(path, &tmp);
	if (fd < 0)
		return pr_err_new("%s: cannot create a temporary file next to it: %s", path,
				  strerror(errno));
	pr_err *e = write_all(fd, tmp, bytes, len);
	if (!e && fsync(fd) < 0)
		e = pr_err_new("%s: cannot flush to disk: %s", tmp, strerror(errno));
	if (close(fd) < 0 && !e)
		e = pr_err_new("%s: cannot close: %s", tmp, strerror(errno));
	if (!e && rename(tmp, path) < 0)
		e = pr_err_new("%s: cannot replace it with %s: %s", path, tmp, strerror(errno));
	if (e)
		unlink(tmp);
	else
		sync_dir(path);
	free(tmp);
	return e;
}

pr_err *pr_program_save_file(const pr_program *p, const char *path)
{
	uint8_t *bytes;
	size_t len;
	if (has_suffix(path, ".bin")) {
		pr_err *e = pr_binary_write(p, &bytes, &len);
		if (e)
			return pr_err_wrap(e, "%s", path);
	} else {
		bytes = (uint8_t *)pr_text_print(p, &len);
	}
	pr_err *e = save_bytes(path, bytes, len);
	free(bytes);
	return e;
}
