/* crash.c: a crash inside a pass names the pass, and can leave a reproducer.
 *
 * A signal handler may call only async-signal-safe functions, so everything
 * it writes is prepared before the pass runs (pm_crash_enter, per pass and
 * per method): the note "passrun: crash: signal N (NAME) in pass 'P' of
 * plugin 'L' (FILE), method 'M'" split around the signal number, which the
 * handler formats itself. The handler writes with write(2), creates the
 * reproducer files with open(2), and then raises the signal again with its
 * default action: the process still dies of the signal (a shell shows
 * 128+N, a core dump is written where enabled, a parent sees WIFSIGNALED),
 * which `passrun compare` uses to say which pipeline crashed where.
 *
 * The reproducer is the program as it was when the pipeline started (as MLIR
 * keeps the pipeline's input: a pass may crash on what earlier passes made,
 * so the whole pipeline is replayed), printed as text with a header comment
 * giving the command, and the pipeline as canonical YAML whose `plugins:`
 * lists (as absolute paths) the files of the plugins its passes came from. */
#define _GNU_SOURCE   /* realpath's PATH_MAX in limits.h */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "passrun/format.h"
#include "pm_run.h"

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_FATAL ((int)(sizeof fatal_signals / sizeof fatal_signals[0]))

/* What the handler reads: written only outside it, while no pass runs or
 * between passes, never while it runs. */
static struct {
	bool in_pass;
	int report_fd;
	char head[64];          /* "passrun: crash: signal " */
	char tail[6144];        /* ") in pass 'P' ..., method 'M'\n" */
	char pass[256];         /* "P\n", for report_fd */
	/* the reproducer */
	char *repro_path, *repro_yaml_path;
	char *repro_text, *repro_yaml, *repro_note;
} crash = {false, -1, "passrun: crash: signal ", "", "", NULL, NULL, NULL, NULL, NULL};

void pm_crash_enter(const pr_registry *r, const pr_pass_info *pass, const char *method)
{
	int i = pm_registry_pass_index(r, pass);
	const char *plugin = i >= 0 ? pr_registry_pass_plugin(r, i) : "";
	const char *file = i >= 0 ? pr_registry_pass_plugin_file(r, i) : "";
	char where[PATH_MAX + 512];
	if (*file)
		snprintf(where, sizeof where, " of plugin '%s' (%s)", plugin, file);
	else
		snprintf(where, sizeof where, " (registered in-process)");
	char meth[300] = "";  /* a longer method name is cut */
	if (method)
		snprintf(meth, sizeof meth, ", method '%s'", method);
	crash.in_pass = false;
	snprintf(crash.tail, sizeof crash.tail, " in pass '%s'%s%s\n", pass->name, where, meth);
	snprintf(crash.pass, sizeof crash.pass, "%s\n", pass->name);
	crash.in_pass = true;
}

void pm_crash_leave(void)
{
	crash.in_pass = false;
}

/* ---- the reproducer -------------------------------------------------------- */

static void forget(char **s)
{
	free(*s);
	*s = NULL;
}

void pm_crash_forget_reproducer(void)
{
	forget(&crash.repro_path);
	forget(&crash.repro_yaml_path);
	forget(&crash.repro_text);
	forget(&crash.repro_yaml);
	forget(&crash.repro_note);
}

/* The plugin files of the pipeline's passes, each once, absolute. */
static int pass_plugins(const pm_run *run, char **files)
{
	int n = 0;
	for (int i = 0; i < run->pipeline->n_passes; i++) {
		int k = pm_registry_pass_index(run->registry, run->pipeline->passes[i].info);
		const char *file = k >= 0 ? pr_registry_pass_plugin_file(run->registry, k) : "";
		char real[PATH_MAX];
		if (!*file || !realpath(file, real))
			continue;
		bool seen = false;
		for (int j = 0; j < n && !seen; j++)
			seen = !strcmp(files[j], real);
		if (!seen)
			files[n++] = pr_xstrdup(real);
	}
	return n;
}

void pm_crash_prepare_reproducer(const pm_run *run)
{
	pm_crash_forget_reproducer();
	const char *path = run->opts->crash_reproducer;
	if (!path)
		return;
	crash.repro_path = pr_xstrdup(path);
	crash.repro_yaml_path = pr_xasprintf("%s.yaml", path);
	char **files = pr_xcalloc((size_t)run->pipeline->n_passes + 1, sizeof *files);
	int n = pass_plugins(run, files);
	crash.repro_yaml = pm_pipeline_yaml_with_plugins(run->pipeline, (const char *const *)files, n);
	for (int i = 0; i < n; i++)
		free(files[i]);
	free(files);
	size_t len;
	char *text = pr_text_print(run->program, &len);
	crash.repro_text = pr_xasprintf("# passrun crash reproducer: the program as the pipeline "
					"got it.\n# Reproduce with: passrun --pipeline %s %s\n%s",
					crash.repro_yaml_path, path, text);
	free(text);
	crash.repro_note = pr_xasprintf("passrun: wrote a crash reproducer: %s and %s; "
					"reproduce with: passrun --pipeline %s %s\n", path,
					crash.repro_yaml_path, crash.repro_yaml_path, path);
}

/* ---- the handler ----------------------------------------------------------- */

static void put(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static bool write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	put(fd, text);
	return close(fd) == 0;
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGFPE: return "SIGFPE";
	case SIGILL: return "SIGILL";
	case SIGABRT: return "SIGABRT";
	}
	return "?";
}

static void on_fatal_signal(int sig)
{
	int saved = errno;
	if (crash.in_pass) {
		char num[16];
		int k = (int)sizeof num - 1;
		num[k] = 0;
		for (int v = sig; v > 0 || k == (int)sizeof num - 1; v /= 10)
			num[--k] = (char)('0' + v % 10);
		put(2, crash.head);
		put(2, num + k);
		put(2, " (");
		put(2, signal_name(sig));
		put(2, ")");
		put(2, crash.tail);
		if (crash.report_fd >= 0)
			put(crash.report_fd, crash.pass);
		if (crash.repro_path && write_file(crash.repro_path, crash.repro_text) &&
		    write_file(crash.repro_yaml_path, crash.repro_yaml))
			put(2, crash.repro_note);
	}
	errno = saved;
	signal(sig, SIG_DFL);
	raise(sig);
}

void pr_crash_handler_install(int report_fd)
{
	crash.report_fd = report_fd;
	static char alt_stack[1 << 16];
	stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack, .ss_flags = 0};
	sigaltstack(&ss, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fatal_signal;
	sa.sa_flags = SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < N_FATAL; i++)
		sigaction(fatal_signals[i], &sa, NULL);
}
