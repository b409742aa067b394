/* fileio.c: loading and saving program files.
 *
 * Loading goes by content, never by name: a file that starts with the binary
 * magic is mapped read-only and loaded with borrow, so blobs and constant
 * bytes point into the mapping, which the program then owns
 * (program->mapping; pr_program_free unmaps it). Anything else is text.
 *
 * Saving is a pr_file_sink (fileio.h), the one writer of every file passrun
 * writes, which pr_file_write_atomic wraps for bytes already in memory: a
 * regular target is replaced atomically through a temporary file in its
 * folder (fsync, rename, fsync of the folder), a symbolic link is followed
 * and its target replaced, a device or FIFO is written in place. On any
 * error the target is left as it was; a big file replaced is freed by a
 * thread of its own (release_replaced). Programs are saved through a sink as
 * they are written (pr_binary_write_sink, pr_text_print_sink), so that the
 * file is never held whole in memory. */
#define _GNU_SOURCE   /* fstatat, dirfd */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "passrun/fileio.h"
#include "passrun/format.h"
#include "outbuf.h"

/* ---- loading ------------------------------------------------------------- */

static pr_err *load_text(const char *path, const uint8_t *bytes, size_t len, pr_program **out)
{
	/* Parsed in place: the parser reads no byte past len (the text fuzzer
	 * hands it buffers of exactly their size) and keeps none. A NUL-
	 * terminated copy was, under the CLI's keep_freed_memory, a 78 MB hole
	 * at the bottom of the heap at 10^6, resident to the end: 20 MB of the
	 * .pg pipeline's peak RSS. */
	return pr_text_parse(path, (const char *)bytes, len, out);
}

/* The DATA section of a binary file that loaded: the one part of the mapping
 * the program may still read (blob bytes and constants' storage borrow from
 * it; names and everything else were copied). */
/* Hands back the pages of the mapping outside DATA, read once by the loader
 * and never again, so that they do not stay in the process's memory. Best
 * effort: a page read again is read from the file, as at first. */
static void drop_read_pages(uint8_t *map, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), off, size;
	if (!pr_binary_data_range(map, len, &off, &size))
		return;
	size_t end = off + size;
	size_t keep_from = off / page * page, keep_to = (end + page - 1) / page * page;
	if (off == end)
		keep_from = keep_to = 0;
	if (keep_from)
		madvise(map, keep_from, MADV_DONTNEED);
	if (keep_to < len)
		madvise(map + keep_to, len - keep_to, MADV_DONTNEED);
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
			drop_read_pages(map, len);
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

/* ---- saving (fileio.h) --------------------------------------------------- */

#define TMP_TAG ".passrun-tmp."
#define MAX_LINKS 40   /* the kernel's own limit on links followed in a path */

/* Writes all n bytes at offset at, or at the file's position when at < 0. */
static pr_err *write_all(int fd, const char *what, const uint8_t *p, size_t n, off_t at)
{
	while (n) {
		ssize_t w = at < 0 ? write(fd, p, n) : pwrite(fd, p, n, at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return pr_err_new("%s: cannot write: %s", what, w < 0 ? strerror(errno) : "no progress");
		p += w;
		n -= (size_t)w;
		if (at >= 0)
			at += w;
	}
	return NULL;
}

char *pr_path_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return pr_xstrdup(".");
	if (slash == path)
		return pr_xstrdup("/");
	return pr_xstrndup(path, (size_t)(slash - path));
}

static const char *base_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static void sync_dir(const char *path)
{
	char *dir = pr_path_dir(path);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);   /* best effort: some file systems refuse it */
		close(fd);
	}
	free(dir);
}

/* What a symbolic link points to (malloc'd), NULL with errno set. */
static char *read_link(const char *path)
{
	for (size_t cap = 256;; cap *= 2) {
		char *buf = pr_xmalloc(cap);
		ssize_t n = readlink(path, buf, cap);
		if (n >= 0 && (size_t)n < cap) {
			buf[n] = 0;
			return buf;
		}
		free(buf);
		if (n < 0 || cap > 1 << 20)
			return NULL;
	}
}

/* Follows path while it is a symbolic link, so that the file it ends at is
 * the one replaced and the link stays a link (a dangling one ends at the
 * name to create). Folders on the way need no resolving: rename goes
 * through them. */
static pr_err *resolve_links(const char *path, char **out)
{
	char *p = pr_xstrdup(path);
	for (int i = 0; i <= MAX_LINKS; i++) {
		struct stat st;
		if (lstat(p, &st) < 0 || !S_ISLNK(st.st_mode)) {
			*out = p;
			return NULL;
		}
		char *target = read_link(p);
		if (!target) {
			pr_err *e = pr_err_new("%s: cannot read the symbolic link %s: %s", path, p,
					       strerror(errno));
			free(p);
			return e;
		}
		char *dir = pr_path_dir(p);
		char *next = target[0] == '/' ? pr_xstrdup(target) : pr_xasprintf("%s/%s", dir, target);
		free(dir);
		free(target);
		free(p);
		p = next;
	}
	free(p);
	return pr_err_new("%s: cannot write: more than %d symbolic links to follow", path, MAX_LINKS);
}

/* The pid in a temporary file's name ".BASE.passrun-tmp.PID.XXXXXX", or 0. */
static pid_t tmp_owner_pid(const char *name, const char *prefix)
{
	size_t k = strlen(prefix);
	if (strncmp(name, prefix, k))
		return 0;
	char *end;
	errno = 0;
	long pid = strtol(name + k, &end, 10);
	if (errno || end == name + k || pid <= 0 || pid != (pid_t)pid || *end != '.' ||
	    strlen(end + 1) != 6)
		return 0;
	return (pid_t)pid;
}

/* Removes the temporary files of earlier writes to target that their writer
 * never renamed or removed (it was killed): ours by name, owned by this user,
 * and their process gone. Best effort: a file we cannot remove stays. */
static void remove_stale_temps(const char *target)
{
	char *dir = pr_path_dir(target);
	char *prefix = pr_xasprintf(".%s" TMP_TAG, base_of(target));
	DIR *d = opendir(dir);
	for (struct dirent *ent; d && (ent = readdir(d));) {
		pid_t pid = tmp_owner_pid(ent->d_name, prefix);
		struct stat st;
		if (pid <= 0 || pid == getpid() ||
		    fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (kill(pid, 0) < 0 && errno == ESRCH)
			unlinkat(dirfd(d), ent->d_name, 0);
	}
	if (d)
		closedir(d);
	free(prefix);
	free(dir);
}

/* A fresh temporary file next to target. Created with open(O_EXCL, mode),
 * so that a new file gets exactly the permissions a plain create would
 * (umask, default ACLs); the random part only has to differ from other
 * writers'. */
static int temp_next_to(const char *target, mode_t mode, char **tmp_out)
{
	char *dir = pr_path_dir(target);
	static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	static unsigned counter;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 40);
	int fd = -1;
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		x = x * 6364136223846793005u + 1442695040888963407u + counter++;
		char rnd[7];
		for (int i = 0; i < 6; i++)
			rnd[i] = digits[(x >> (10 + 6 * i)) % 36];
		rnd[6] = 0;
		char *tmp = pr_xasprintf("%s/.%s" TMP_TAG "%d.%s", dir, base_of(target),
					 (int)getpid(), rnd);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd >= 0)
			*tmp_out = tmp;
		else
			free(tmp);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	free(dir);
	return fd;
}

/* The replaced file's permission bits, and its owner where we may set it
 * (chown first: it may clear mode bits). */
static void keep_mode(int fd, const struct stat *old)
{
	if ((old->st_uid != geteuid() || old->st_gid != getegid()) &&
	    fchown(fd, old->st_uid, old->st_gid) < 0)
		(void)!fchown(fd, (uid_t)-1, old->st_gid);   /* at least the group, if we may */
	fchmod(fd, old->st_mode & 0777);
}

/* ---- the sink (fileio.h) -------------------------------------------------- */

struct pr_file_sink {
	char *path;     /* as given, for messages */
	char *target;   /* path with its links followed: the file written */
	char *tmp;      /* the temporary file renamed over target; NULL in place */
	int fd;         /* -1: not open yet (a target written in place opens late) */
	bool in_place;  /* a device or FIFO, written directly */
	uint64_t end;      /* the temporary file's bytes written front to back so far */
	uint64_t flushed;  /* how many of them the disk was told to start writing */
	pr_err *err;    /* the first failure; every later write does nothing */
};

static void sink_fail(pr_file_sink *s, pr_err *e)
{
	if (!s->err)
		s->err = e;
	else
		pr_err_free(e);
}

/* Starts the temporary file that replaces target; old is the file it
 * replaces, NULL when there is none. */
static void sink_start_temp(pr_file_sink *s, const struct stat *old)
{
	s->in_place = false;
	remove_stale_temps(s->target);
	/* Replacing a file: private until it has the old file's mode. */
	s->fd = temp_next_to(s->target, old ? 0600 : 0666, &s->tmp);
	if (s->fd < 0) {
		sink_fail(s, pr_err_new("%s: cannot create a temporary file next to it: %s", s->path,
					strerror(errno)));
		return;
	}
	if (old)
		keep_mode(s->fd, old);
}

/* A target written in place is opened at its first write (or at commit), so
 * that a writer that fails before it has written anything leaves a FIFO
 * unopened. When the name turned into a regular file since it was looked at,
 * it is replaced after all (written in place it would keep a longer old
 * tail). */
static bool sink_ready(pr_file_sink *s)
{
	if (s->err)
		return false;
	if (s->fd >= 0)
		return true;
	s->fd = open(s->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (s->fd < 0) {
		sink_fail(s, pr_err_new("%s: cannot open for writing: %s", s->path, strerror(errno)));
		return false;
	}
	struct stat st;
	if (fstat(s->fd, &st) == 0 && S_ISREG(st.st_mode)) {
		close(s->fd);
		sink_start_temp(s, &st);
	}
	return !s->err;
}

pr_err *pr_file_sink_open(const char *path, pr_file_sink **out)
{
	char *target = NULL;
	pr_err *e = resolve_links(path, &target);
	if (e)
		return e;
	struct stat st;
	bool exists = stat(target, &st) == 0;
	if (!*base_of(target) || (exists && S_ISDIR(st.st_mode))) {
		free(target);
		return pr_err_new("%s: cannot write: it is a folder", path);
	}
	pr_file_sink *s = pr_xcalloc(1, sizeof *s);
	s->path = pr_xstrdup(path);
	s->target = target;
	s->fd = -1;
	if (exists && !S_ISREG(st.st_mode))
		s->in_place = true;
	else
		sink_start_temp(s, exists ? &st : NULL);
	if (s->err) {
		e = s->err;
		s->err = NULL;
		pr_file_sink_abort(s);
		return e;
	}
	*out = s;
	return NULL;
}

bool pr_file_sink_can_seek(const pr_file_sink *s)
{
	return !s->in_place;
}

/* A temporary file's bytes start for the disk every SINK_FLUSH_STEP bytes,
 * while the writer makes the next ones, so that the fsync at commit waits
 * for the last few only (at a million nodes the file is 200 MB, and the
 * fsync of all of it at the end took longer than making it). Only a start:
 * the fsync still makes the file durable, and a failure here is the fsync's
 * to report. */
#define SINK_FLUSH_STEP ((uint64_t)8 << 20)

static void sink_start_writeback(pr_file_sink *s)
{
#ifdef SYNC_FILE_RANGE_WRITE
	if (s->end - s->flushed >= SINK_FLUSH_STEP) {
		sync_file_range(s->fd, (off_t)s->flushed, (off_t)(s->end - s->flushed),
				SYNC_FILE_RANGE_WRITE);
		s->flushed = s->end;
	}
#else
	(void)s;   /* no early start here: the fsync at commit writes it all */
#endif
}

/* A long run (DATA, a FIFO's whole file) goes in steps, each started for
 * the disk as it is written. */
void pr_file_sink_write(pr_file_sink *s, const void *bytes, size_t len)
{
	const uint8_t *p = bytes;
	while (sink_ready(s) && len) {
		size_t n = len < SINK_FLUSH_STEP ? len : (size_t)SINK_FLUSH_STEP;
		sink_fail(s, write_all(s->fd, s->path, p, n, -1));
		if (!s->in_place && !s->err) {
			s->end += n;
			sink_start_writeback(s);
		}
		p += n;
		len -= n;
	}
}

void pr_file_sink_write_at(pr_file_sink *s, uint64_t offset, const void *bytes, size_t len)
{
	if (!sink_ready(s))
		return;
	if (s->in_place) {   /* a caller's mistake: pr_file_sink_can_seek said no */
		sink_fail(s, pr_err_new("%s: cannot write at an offset: it is written in place",
					s->path));
		return;
	}
	sink_fail(s, write_all(s->fd, s->path, bytes, len, (off_t)offset));
}

static void sink_free(pr_file_sink *s)
{
	pr_err_free(s->err);
	free(s->path);
	free(s->target);
	free(s->tmp);
	free(s);
}

void pr_file_sink_abort(pr_file_sink *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	if (s->tmp)
		unlink(s->tmp);
	sink_free(s);
}

/* Freeing a replaced file of some size is slow, and not the rename's work:
 * the kernel frees its blocks when the last reference to it goes (130-190
 * ms for 200 MB on ext4 mounted with discard, nearly all of it waiting, not
 * computing), so the rename leaves that reference to a thread of its own.
 * Below RELEASE_AWAY_MIN bytes a thread costs more than it saves. */
#define RELEASE_AWAY_MIN ((off_t)8 << 20)

/* The file at target, held open so that the rename over it is not the one
 * to free it (release_replaced is); -1 when there is none, or it is small. */
static int hold_replaced(const char *target)
{
	int fd = open(target, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < RELEASE_AWAY_MIN)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void *close_replaced(void *fd)
{
	close((int)(intptr_t)fd);
	return NULL;
}

/* Drops the hold on a replaced file, in a detached thread where one can be
 * started: its last close is where the kernel frees it. A process that ends
 * first has it closed by the kernel, which frees it then. */
static void release_replaced(int fd)
{
	pthread_t t;
	pthread_attr_t attr;
	if (fd < 0)
		return;
	bool started = !pthread_attr_init(&attr) &&
		       !pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) &&
		       !pthread_create(&t, &attr, close_replaced, (void *)(intptr_t)fd);
	pthread_attr_destroy(&attr);
	if (!started)
		close(fd);
}

/* A temporary file: flushed, closed and renamed over the target. */
static pr_err *commit_temp(pr_file_sink *s)
{
	pr_err *e = NULL;
	if (fsync(s->fd) < 0)
		e = pr_err_new("%s: cannot flush to disk: %s", s->path, strerror(errno));
	if (close(s->fd) < 0 && !e)
		e = pr_err_new("%s: cannot close: %s", s->path, strerror(errno));
	s->fd = -1;
	int replaced = e ? -1 : hold_replaced(s->target);
	if (!e && rename(s->tmp, s->target) < 0)
		e = pr_err_new("%s: cannot replace it with %s: %s", s->path, s->tmp, strerror(errno));
	release_replaced(replaced);
	if (e)
		return e;
	free(s->tmp);
	s->tmp = NULL;   /* renamed: nothing left to remove */
	sync_dir(s->target);
	return NULL;
}

pr_err *pr_file_sink_commit(pr_file_sink *s)
{
	pr_err *e = NULL;
	if (!sink_ready(s)) {
		e = s->err;
		s->err = NULL;
	} else if (s->in_place) {
		if (close(s->fd) < 0)
			e = pr_err_new("%s: cannot close: %s", s->path, strerror(errno));
		s->fd = -1;
	} else {
		e = commit_temp(s);
	}
	pr_file_sink_abort(s);   /* what is left: the temporary file of a failed commit */
	return e;
}

pr_err *pr_file_write_atomic(const char *path, const void *bytes, size_t len)
{
	pr_file_sink *s;
	pr_err *e = pr_file_sink_open(path, &s);
	if (e)
		return e;
	pr_file_sink_write(s, bytes, len);
	return pr_file_sink_commit(s);
}

/* ---- programs ------------------------------------------------------------ */

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

pr_err *pr_program_save_file(const pr_program *p, const char *path)
{
	pr_file_sink *s;
	pr_err *e = pr_file_sink_open(path, &s);
	if (e)
		return e;
	if (has_suffix(path, ".bin")) {
		e = pr_binary_write_sink(p, s);
		if (e)
			e = pr_err_wrap(e, "%s", path);
	} else {
		pr_text_print_sink(p, s);
	}
	if (e) {
		pr_file_sink_abort(s);
		return e;
	}
	return pr_file_sink_commit(s);
}
