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
 * error the target is left as it was; a temporary file is written by a
 * thread of its own (the stager), and a big file replaced is freed by
 * another (release_replaced). Programs are saved through a sink as
 * they are written (pr_binary_write_sink, pr_text_print_sink), made in the
 * stages it lends (pr_file_sink_lend), so that the file is never held whole
 * in memory and what the writers make is not copied again to be written. */
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

/* Writes all n bytes at offset at, or at the file's position when at < 0;
 * 0, or the errno of the failure. */
static int write_all(int fd, const uint8_t *p, size_t n, off_t at)
{
	while (n) {
		ssize_t w = at < 0 ? write(fd, p, n) : pwrite(fd, p, n, at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		p += w;
		n -= (size_t)w;
		if (at >= 0)
			at += w;
	}
	return 0;
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

/* ---- the temporary file's writer thread ----------------------------------- */

/* A temporary file is written by a thread of its own, from STAGES aligned
 * buffers of STAGE_SIZE bytes that the caller fills in turn, so that making
 * the next megabyte and writing the last overlap. The file is set O_DIRECT
 * where the file system lets it: the bytes go from the stage to the disk,
 * not through the page cache (a million nodes' 198 MB .bin took 250-416 ms
 * to write through the cache, 162-293 ms this way, on ext4).
 * A file system that refuses O_DIRECT, at fcntl or at a write (EINVAL), is
 * written through the cache instead, the disk told every SINK_FLUSH_STEP
 * bytes to start writing them, so that the fsync at commit has little left
 * to wait for. A file that fits in one stage starts no thread: the stage is
 * written through the cache at commit. The last stage, partly full, goes
 * the same way after its whole blocks. */
#define STAGE_SIZE ((size_t)1 << 20)
#define STAGES 3
#define DIRECT_ALIGN 4096   /* what O_DIRECT asks of buffers, offsets and sizes */
#define SINK_FLUSH_STEP ((uint64_t)8 << 20)

typedef struct stager {
	int fd;
	uint8_t *stage[STAGES];
	uint64_t at[STAGES];    /* where in the file each stage's bytes go */
	size_t len[STAGES];
	pthread_t thread;
	bool started;           /* the thread runs (and must be joined) */
	pthread_mutex_t mu;     /* guards the four fields after the two conditions */
	pthread_cond_t work, done;
	unsigned first, queued; /* stages handed to the thread, from first, in order */
	bool stop;              /* the thread ends, dropping what is still queued */
	int err;                /* the first write's errno; the thread writes no more after it */
	/* The writer's, one at a time: the thread, or the caller once drained. */
	bool direct;            /* fd is O_DIRECT */
	uint64_t written, flushed;   /* stage bytes written through the cache; started for the disk */
} stager;

static bool stager_set_direct(stager *g, bool on)
{
	int flags = fcntl(g->fd, F_GETFL);
	if (flags < 0 || fcntl(g->fd, F_SETFL, on ? flags | O_DIRECT : flags & ~O_DIRECT) < 0)
		return false;
	g->direct = on;
	return true;
}

/* Only a start: the fsync at commit still makes the file durable, and a
 * failure here is the fsync's to report. */
static void stager_start_writeback(stager *g, size_t n)
{
	g->written += n;
#ifdef SYNC_FILE_RANGE_WRITE
	if (g->written - g->flushed >= SINK_FLUSH_STEP) {
		sync_file_range(g->fd, (off_t)g->flushed, (off_t)(g->written - g->flushed),
				SYNC_FILE_RANGE_WRITE);
		g->flushed = g->written;
	}
#endif
}

/* n bytes of a stage at at, O_DIRECT when the file is; a refusal of
 * O_DIRECT (EINVAL) turns it off for good and writes them through the
 * cache. Only one thread writes at a time: the writer, or the caller once
 * the writer is idle. */
static int stager_write(stager *g, const uint8_t *p, size_t n, uint64_t at)
{
	int err = write_all(g->fd, p, n, (off_t)at);
	if (err == EINVAL && g->direct && stager_set_direct(g, false))
		err = write_all(g->fd, p, n, (off_t)at);   /* a short write before it is rewritten whole */
	if (!err && !g->direct)
		stager_start_writeback(g, n);
	return err;
}

static void *stager_run(void *arg)
{
	stager *g = arg;
	pthread_mutex_lock(&g->mu);
	for (;;) {
		while (!g->queued && !g->stop)
			pthread_cond_wait(&g->work, &g->mu);
		if (g->stop)
			break;
		unsigned i = g->first;
		int err = g->err;
		pthread_mutex_unlock(&g->mu);
		if (!err)
			err = stager_write(g, g->stage[i], g->len[i], g->at[i]);
		pthread_mutex_lock(&g->mu);
		g->err = err;
		g->first = (i + 1) % STAGES;
		g->queued--;
		pthread_cond_signal(&g->done);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

/* A stage, aligned for O_DIRECT; out of memory aborts, as pr_xmalloc does. */
static uint8_t *stage_alloc(void)
{
	void *p = NULL;
	PR_ASSERT(!posix_memalign(&p, DIRECT_ALIGN, STAGE_SIZE));
	return p;
}

static stager *stager_new(int fd)
{
	stager *g = pr_xcalloc(1, sizeof *g);
	g->fd = fd;
	g->stage[0] = stage_alloc();
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->work, NULL);
	pthread_cond_init(&g->done, NULL);
	return g;
}

/* The thread, once a first stage is full: the file is big enough for it. */
static void stager_start(stager *g)
{
	for (int i = 1; i < STAGES; i++)
		g->stage[i] = stage_alloc();
	g->started = !pthread_create(&g->thread, NULL, stager_run, g);
	if (g->started)
		stager_set_direct(g, true);   /* refused: written through the cache */
}

/* Hands stage i, full, to the thread, and returns the next one to fill
 * once it is free; 0, or the errno of a write that failed. Without a
 * thread (none could start) the stage is written here. */
static int stager_hand_over(stager *g, unsigned *i, uint64_t at)
{
	g->at[*i] = at;
	g->len[*i] = STAGE_SIZE;
	if (!g->stage[1])
		stager_start(g);
	if (!g->started)
		return stager_write(g, g->stage[*i], STAGE_SIZE, at);
	pthread_mutex_lock(&g->mu);
	g->queued++;
	pthread_cond_signal(&g->work);
	while (g->queued == STAGES)
		pthread_cond_wait(&g->done, &g->mu);
	*i = (g->first + g->queued) % STAGES;
	int err = g->err;
	pthread_mutex_unlock(&g->mu);
	return err;
}

/* Waits until the thread has written every stage handed to it; 0, or the
 * errno of a write that failed. */
static int stager_drain(stager *g)
{
	if (!g->started)
		return g->err;
	pthread_mutex_lock(&g->mu);
	while (g->queued)
		pthread_cond_wait(&g->done, &g->mu);
	int err = g->err;
	pthread_mutex_unlock(&g->mu);
	return err;
}

/* n bytes at at through the cache, once the thread is idle (drained): a
 * header rewritten, a stage's last bytes. */
static int stager_write_cached(stager *g, const uint8_t *p, size_t n, uint64_t at)
{
	bool direct = g->direct;
	if (direct && !stager_set_direct(g, false))
		return errno;
	int err = write_all(g->fd, p, n, (off_t)at);   /* a few bytes: the fsync writes them */
	if (direct)
		stager_set_direct(g, true);
	return err;
}

/* The last stage, i, with n bytes for at: its whole blocks as the others,
 * the rest through the cache (O_DIRECT cannot write a part of a block). */
static int stager_write_last(stager *g, unsigned i, size_t n, uint64_t at)
{
	int err = stager_drain(g);
	size_t whole = g->direct ? n / DIRECT_ALIGN * DIRECT_ALIGN : 0;
	if (!err && whole)
		err = stager_write(g, g->stage[i], whole, at);
	if (!err && n > whole) {
		if (g->direct)
			stager_set_direct(g, false);   /* the last write: no need to set it back */
		err = write_all(g->fd, g->stage[i] + whole, n - whole, (off_t)(at + whole));
	}
	return err;
}

/* Ends the thread, dropping what it has not written yet, and frees g. */
static void stager_free(stager *g)
{
	if (!g)
		return;
	if (g->started) {
		pthread_mutex_lock(&g->mu);
		g->stop = true;
		pthread_cond_signal(&g->work);
		pthread_mutex_unlock(&g->mu);
		pthread_join(g->thread, NULL);
	}
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->work);
	pthread_cond_destroy(&g->done);
	for (int i = 0; i < STAGES; i++)
		free(g->stage[i]);
	free(g);
}

/* ---- the sink (fileio.h) -------------------------------------------------- */

struct pr_file_sink {
	char *path;     /* as given, for messages */
	char *target;   /* path with its links followed: the file written */
	char *tmp;      /* the temporary file renamed over target; NULL in place */
	int fd;         /* -1: not open yet (a target written in place opens late) */
	bool in_place;  /* a device or FIFO, written directly */
	stager *stager; /* a temporary file's writer; NULL in place */
	unsigned cur;      /* the stage being filled */
	size_t cur_len;    /* its bytes so far */
	uint64_t cur_at;   /* its place in the file: every byte before it is handed over */
	pr_err *err;    /* the first failure; every later write does nothing */
};

static void sink_fail(pr_file_sink *s, pr_err *e)
{
	if (!s->err)
		s->err = e;
	else
		pr_err_free(e);
}

/* A write of the stager's that failed with errno err (0: none). */
static void sink_fail_write(pr_file_sink *s, int err)
{
	if (err)
		sink_fail(s, pr_err_new("%s: cannot write: %s", s->path, strerror(err)));
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
	s->stager = stager_new(s->fd);
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

uint8_t *pr_file_sink_lend(pr_file_sink *s, size_t *room)
{
	if (s->err || s->in_place) {
		*room = 0;
		return NULL;
	}
	*room = STAGE_SIZE - s->cur_len;   /* never 0: a full stage is handed over at once */
	return s->stager->stage[s->cur] + s->cur_len;
}

void pr_file_sink_advance(pr_file_sink *s, size_t n)
{
	if (!n || s->err)
		return;
	PR_ASSERT(!s->in_place && n <= STAGE_SIZE - s->cur_len);   /* more than was lent */
	s->cur_len += n;
	if (s->cur_len == STAGE_SIZE) {
		sink_fail_write(s, stager_hand_over(s->stager, &s->cur, s->cur_at));
		s->cur_at += STAGE_SIZE;
		s->cur_len = 0;
	}
}

void pr_file_sink_write(pr_file_sink *s, const void *bytes, size_t len)
{
	if (!len || !sink_ready(s))
		return;
	if (s->in_place) {
		sink_fail_write(s, write_all(s->fd, bytes, len, -1));
		return;
	}
	const uint8_t *p = bytes;
	for (size_t room, n; len && !s->err; p += n, len -= n) {
		uint8_t *stage = pr_file_sink_lend(s, &room);
		n = len < room ? len : room;
		memcpy(stage, p, n);
		pr_file_sink_advance(s, n);
	}
}

/* Bytes still in the stage being filled are rewritten there; those before
 * it, once the thread has written them, in the file. */
void pr_file_sink_write_at(pr_file_sink *s, uint64_t offset, const void *bytes, size_t len)
{
	if (!sink_ready(s))
		return;
	uint64_t end = s->in_place ? 0 : s->cur_at + s->cur_len;
	if (s->in_place || offset > end || len > end - offset) {   /* a caller's mistake */
		sink_fail(s, pr_err_new(s->in_place ? "%s: cannot write at an offset: it is written in place" :
					"%s: cannot write at an offset: past the bytes written", s->path));
		return;
	}
	const uint8_t *p = bytes;
	size_t in_file = offset >= s->cur_at ? 0 :
			 s->cur_at - offset < len ? (size_t)(s->cur_at - offset) : len;
	if (in_file < len)
		memcpy(s->stager->stage[s->cur] + (offset + in_file - s->cur_at), p + in_file,
		       len - in_file);
	if (in_file) {
		int err = stager_drain(s->stager);
		sink_fail_write(s, err ? err : stager_write_cached(s->stager, p, in_file, offset));
	}
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
	stager_free(s->stager);   /* before the close: the thread may be writing */
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

/* A temporary file: its last stage written, flushed, closed and renamed
 * over the target. The replaced file is let go only once the folder is
 * synced: freed before, its blocks (and, on a file system mounted with
 * discard, their discards) joined the journal commit that the folder's
 * fsync waits for, 8-55 ms at a million nodes' 198 MB instead of 0.2-4.5. */
static pr_err *commit_temp(pr_file_sink *s)
{
	pr_err *e = NULL;
	sink_fail_write(s, stager_write_last(s->stager, s->cur, s->cur_len, s->cur_at));
	stager_free(s->stager);
	s->stager = NULL;
	if (s->err) {
		e = s->err;
		s->err = NULL;
		return e;
	}
	if (fsync(s->fd) < 0)
		e = pr_err_new("%s: cannot flush to disk: %s", s->path, strerror(errno));
	if (close(s->fd) < 0 && !e)
		e = pr_err_new("%s: cannot close: %s", s->path, strerror(errno));
	s->fd = -1;
	int replaced = e ? -1 : hold_replaced(s->target);
	if (!e && rename(s->tmp, s->target) < 0)
		e = pr_err_new("%s: cannot replace it with %s: %s", s->path, s->tmp, strerror(errno));
	if (!e) {
		free(s->tmp);
		s->tmp = NULL;   /* renamed: nothing left to remove */
		sync_dir(s->target);
	}
	release_replaced(replaced);
	return e;
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
