/* fileio.h: writing a file the way a compiler writes its output.
 *
 * Every file passrun writes (-o, --dot, convert, --output-dir) goes through a
 * pr_file_sink, which writes all of the bytes or changes nothing;
 * pr_file_write_atomic is a sink for bytes already in memory:
 *
 *   - A regular file, or a name that does not exist yet, is replaced
 *     atomically: the bytes go to a temporary file in the same folder (so
 *     the rename cannot cross file systems), which is flushed with fsync and
 *     renamed over the name; then the folder is synced, so that the rename
 *     itself survives a crash. A temporary file of 1 MB or more is written
 *     by a thread of the sink's, joined before commit or abort returns,
 *     from aligned 1 MB stages, with O_DIRECT where the file system takes
 *     it (the bytes skip the page cache); where it refuses, through the
 *     cache, the disk told every 8 MB to start writing what it has so far
 *     (Linux's sync_file_range, where the system has it), so that the
 *     fsync has little left to wait for. A reader sees the old file or the new one,
 *     never half of one, and on any error the old one is left as it was. An
 *     existing file keeps its permission bits (rwx for user, group and
 *     others; never set-id bits), and its owner and group where this process
 *     may set them; a new one gets what a plain create gives (0666 less the
 *     umask). A file with several hard links is replaced under this name only.
 *     A replaced file of 8 MB or more is let go by a short-lived detached
 *     thread, whose close is where the kernel frees it, so that the commit
 *     does not wait for that (or, if the process ends first, its exit).
 *   - A symbolic link is followed to its final target, which is replaced as
 *     above (created when the link dangles); the link stays a link.
 *   - Anything else that exists (/dev/null, a FIFO, a terminal) is opened and
 *     written directly, as `cc -o /dev/null` does: it is not replaced. A
 *     FIFO blocks until a reader opens it. A folder is an error.
 *
 * The temporary file is named .NAME.passrun-tmp.PID.XXXXXX, PID being the
 * writer's process id. One that a killed writer (kill -9, a power cut) left
 * behind is removed by the next write to NAME when it belongs to the same
 * user and no process PID exists any more; `find DIR -name '.*.passrun-tmp.*'`
 * lists any that remain.
 *
 * Errors name the path as given and say what failed (strerror). Two writers
 * of one name each write their own temporary file: the last rename wins. */
#ifndef PASSRUN_FILEIO_H
#define PASSRUN_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "passrun/error.h"

#ifdef __cplusplus
extern "C" {
#endif

pr_err *pr_file_write_atomic(const char *path, const void *bytes, size_t len);

/* A file written piece by piece, with the promises above: a writer hands it
 * its output in chunks as they fill, so that the file is never held whole in
 * memory, then commits it (the rename) or aborts (the target stays as it
 * was, and no temporary file remains).
 *
 * pr_file_sink_open checks the name (links, folders) and, for a file to
 * replace, creates the temporary file; a device or FIFO is opened at the
 * first write. Writes keep the first error and do nothing after it;
 * pr_file_sink_commit returns it. pr_file_sink_write_at rewrites bytes
 * already written (a header whose sizes are known last; bytes past those
 * are an error), which only a replaced file allows (pr_file_sink_can_seek):
 * a device or FIFO is written in place, front to back. Commit and abort
 * free the sink.
 *
 * A writer that makes its bytes where the sink keeps them, rather than
 * copying them in, borrows the room: pr_file_sink_lend returns the free part
 * of the stage being filled (*room bytes, at least 1), and
 * pr_file_sink_advance(s, n) makes the first n bytes written there the
 * file's next ones, as pr_file_sink_write would (n at most *room; a full
 * stage goes to be written, and the next is lent). The room is the writer's
 * until that advance or any other call on the sink. It returns NULL, *room
 * 0, when there is no stage to lend: the target is written in place, or the
 * sink has failed (pr_file_sink_write then, which does nothing after a
 * failure). */
typedef struct pr_file_sink pr_file_sink;

pr_err *pr_file_sink_open(const char *path, pr_file_sink **out);
bool pr_file_sink_can_seek(const pr_file_sink *s);
void pr_file_sink_write(pr_file_sink *s, const void *bytes, size_t len);
void pr_file_sink_write_at(pr_file_sink *s, uint64_t offset, const void *bytes, size_t len);
uint8_t *pr_file_sink_lend(pr_file_sink *s, size_t *room);
void pr_file_sink_advance(pr_file_sink *s, size_t n);
pr_err *pr_file_sink_commit(pr_file_sink *s);
void pr_file_sink_abort(pr_file_sink *s);   /* NULL: nothing */

/* The folder part of path, malloc'd: "." when it has none ("a.yaml"), "/"
 * for a name in the root ("/a.yaml"). */
char *pr_path_dir(const char *path);

#ifdef __cplusplus
}
#endif
#endif
