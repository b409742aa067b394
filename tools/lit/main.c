/* passrun-lit: runs golden tests, program files that carry their own runs
 * of passrun and what each must show (docs/golden-tests.md).
 *
 *   passrun-lit [--passrun PATH] [--plugin FILE.so]... [-v] FILE...
 *
 * Exit status: 0 every expectation held; 1 one did not (each failure is
 * reported as FILE:LINE of its directive, with what it expected and what the
 * run showed); 2 a bad command line, a file that is not a valid test, or no
 * passrun to run. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lit.h"

static const char usage[] =
	"usage: passrun-lit [--passrun PATH] [--plugin FILE.so]... [-v] FILE...\n"
	"  --passrun PATH     the passrun to test (default: $PASSRUN, else the one beside passrun-lit)\n"
	"  --plugin FILE.so   pass --plugin FILE.so to every run\n"
	"  -v, --verbose      print each command as it runs\n";

/* The passrun in the folder this executable is in. */
static char *passrun_beside_me(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 16);
	if (n <= 0)
		return NULL;
	path[n] = 0;
	char *slash = strrchr(path, '/');
	strcpy(slash ? slash + 1 : path, "passrun");
	return path;
}

static int bad_usage(const char *fmt, const char *arg)
{
	fputs("passrun-lit: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\n", stderr);
	fputs(usage, stderr);
	return LIT_USAGE;
}

/* Fills o and the list of files; LIT_OK, LIT_USAGE, or -1 when it printed
 * the help and there is nothing to run. */
static int parse_args(int argc, char **argv, lit_options *o, const char ***files, int *n_files)
{
	*files = calloc((size_t)argc, sizeof **files);
	o->plugins = calloc((size_t)argc, sizeof *o->plugins);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if ((!strcmp(a, "--passrun") || !strcmp(a, "--plugin")) && i + 1 == argc)
			return bad_usage("%s needs a value", a);
		if (!strcmp(a, "--passrun"))
			o->passrun = argv[++i];
		else if (!strcmp(a, "--plugin"))
			o->plugins[o->n_plugins++] = argv[++i];
		else if (!strcmp(a, "-v") || !strcmp(a, "--verbose"))
			o->verbose = true;
		else if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return fputs(usage, stdout), -1;
		else if (a[0] == '-')
			return bad_usage("unknown option '%s'", a);
		else
			(*files)[(*n_files)++] = a;
	}
	if (!*n_files)
		return bad_usage("%s", "no test file given");
	if (!o->passrun)
		o->passrun = getenv("PASSRUN");
	if (!o->passrun)
		o->passrun = passrun_beside_me();
	if (!o->passrun || access(o->passrun, X_OK))
		return bad_usage("cannot run passrun at '%s' (give --passrun PATH)",
				 o->passrun ? o->passrun : "?");
	return LIT_OK;
}

/* Runs one test file; its status. */
static int run_file(const char *path, const lit_options *o)
{
	lit_case c;
	if (!lit_case_parse(&c, path, o)) {
		lit_case_free(&c);
		return LIT_USAGE;
	}
	for (int i = 0; i < c.n_runs; i++) {
		lit_run_exec(&c, &c.runs[i], o);
		lit_check_expectations(&c, i);
		lit_check_output(&c, i);
	}
	int st = c.failures ? LIT_FAILED : LIT_OK;
	fprintf(st ? stderr : stdout, "%s: %s (%d run%s, %d check%s%s)\n", path,
		st ? "FAIL" : "PASS", c.n_runs, c.n_runs == 1 ? "" : "s", c.n_dirs,
		c.n_dirs == 1 ? "" : "s", st ? ", see above" : "");
	lit_case_free(&c);
	return st;
}

int main(int argc, char **argv)
{
	lit_options o = {0};
	const char **files = NULL;
	int n_files = 0, st = parse_args(argc, argv, &o, &files, &n_files);
	bool go = st == LIT_OK;
	for (int i = 0; go && i < n_files; i++) {
		int one = run_file(files[i], &o);
		st = one > st ? one : st;
	}
	free(files);
	free(o.plugins);
	return st < 0 ? LIT_OK : st;
}
