/* Tests of the plugin loader (core/passmgr/plugin.c): real .so files built by the
 * test suite (tests/plugins/), loaded by passrun and through the API. Each
 * refusal gives its documented message, naming the file, and exit status 2. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "passrun/manager.h"
#include "testutil.h"

#define PLUGIN(name) PASSRUN_BINARY_DIR "/tests/plugins/prtest_" name ".so"
#define NODEF "--no-default-plugins"

static tu_result run(const char *args)
{
	return tu_run("unset PASSRUN_PLUGIN_PATH; %s %s", PASSRUN_EXE, args);
}

/* A fresh folder under the test's temporary folder, with mode `mode`, holding
 * a copy of the good plugin; returns the copy's path (malloc'd). */
static char *plugin_copy_in(const char *folder, mode_t mode)
{
	char *dir = NULL, *path = NULL;
	cr_assert(asprintf(&dir, "%s/%s", tu_temp_dir(), folder) > 0);
	mkdir(dir, 0755);
	cr_assert(asprintf(&path, "%s/prtest_good.so", dir) > 0);
	tu_result r = tu_run("cp %s %s && chmod 0755 %s", PLUGIN("good"), path, path);
	cr_assert_eq(r.status, 0, "cp failed: %s", r.err);
	tu_result_free(&r);
	cr_assert_eq(chmod(dir, mode), 0);
	free(dir);
	return path;
}

Test(plugin, good_plugin_lists_its_passes_and_options)
{
	tu_result r = run(NODEF " --plugin " PLUGIN("good") " --list-passes");
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(strstr(r.out, "test-noop  (plugin test-good 1.0)"), "%s", r.out);
	cr_assert(strstr(r.out, "count: int = 3"), "%s", r.out);
	cr_assert(strstr(r.out, "test_level: int = 0  [pipeline option]  [per method]"), "%s", r.out);
	cr_assert(strstr(r.out, "a float"), "the option's help is listed: %s", r.out);
	cr_assert(strstr(r.out, "test-node-count  (plugin test-good)"), "analyses: %s", r.out);
	tu_result_free(&r);
}

Test(plugin, wrong_abi_version_names_both_versions)
{
	tu_result r = run(NODEF " --plugin " PLUGIN("bad_abi") " --list-passes");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "prtest_bad_abi.so"), "names the file: %s", r.err);
	char built[64], ours[64];   /* the test plugin claims this ABI + 41 */
	snprintf(built, sizeof built, "built for plugin ABI version %u,", PR_PLUGIN_ABI_VERSION + 41);
	snprintf(ours, sizeof ours, "has ABI version %u ", PR_PLUGIN_ABI_VERSION);
	cr_assert(strstr(r.err, built), "%s", r.err);
	cr_assert(strstr(r.err, ours), "%s", r.err);
	tu_result_free(&r);
}

/* pr_register_device_type's refusal fails the load, naming the plugin and
 * the type, even when the callback ignores it. */
Test(plugin, conflicting_device_type_fails_the_load)
{
	tu_result r = run(NODEF " --plugin " PLUGIN("bad_device") " --list-passes");
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "plugin 'bad-device'"), "names the plugin: %s", r.err);
	cr_assert(strstr(r.err, "device type 'cuda' is already registered with other properties "
			 "(host addressable: no, alignment 1)"), "%s", r.err);
	tu_result_free(&r);
}

Test(plugin, missing_entry_point_names_file_and_symbol)
{
	tu_result r = run(NODEF " --plugin " PLUGIN("no_entry") " --list-passes");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "prtest_no_entry.so"), "%s", r.err);
	cr_assert(strstr(r.err, "no entry point 'passrun_plugin_info'"), "%s", r.err);
	tu_result_free(&r);
}

Test(plugin, two_plugins_registering_one_pass_are_both_named)
{
	tu_result r = run(NODEF " --plugin " PLUGIN("dup_a") " --plugin " PLUGIN("dup_b")
			  " --list-passes");
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "pass 'test-dup' is registered twice"), "%s", r.err);
	cr_assert(strstr(r.err, "plugin 'dup-a' (" PLUGIN("dup_a") ")"), "%s", r.err);
	cr_assert(strstr(r.err, "plugin 'dup-b' (" PLUGIN("dup_b") ")"), "%s", r.err);
	tu_result_free(&r);
}

Test(plugin, world_writable_folder_is_refused)
{
	char *path = plugin_copy_in("ww", 0777);
	char *args = NULL;
	cr_assert(asprintf(&args, NODEF " --plugin %s --list-passes", path) > 0);
	tu_result r = run(args);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, path), "names the file: %s", r.err);
	cr_assert(strstr(r.err, "writable by other users"), "%s", r.err);
	cr_assert(strstr(r.err, "/ww"), "names the folder: %s", r.err);
	tu_result_free(&r);
	free(args);
	free(path);
}

Test(plugin, group_writable_file_is_refused)
{
	char *path = plugin_copy_in("gw", 0755);
	cr_assert_eq(chmod(path, 0775), 0);
	char *args = NULL;
	cr_assert(asprintf(&args, NODEF " --plugin %s --list-passes", path) > 0);
	tu_result r = run(args);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, path), "%s", r.err);
	cr_assert(strstr(r.err, "the file is writable by its group"), "%s", r.err);
	tu_result_free(&r);
	free(args);
	free(path);
}

Test(plugin, same_file_twice_loads_once)
{
	tu_result r = run(NODEF " --plugin " PLUGIN("good") " --plugin " PLUGIN("good")
			  " --list-passes");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(tu_count(r.out, "test-noop  (plugin"), 1);
	tu_result_free(&r);
}

Test(plugin, plugin_dir_and_env_path_are_searched)
{
	char *path = plugin_copy_in("dir", 0755);
	char *dir = strdup(path);
	*strrchr(dir, '/') = 0;
	tu_result r = tu_run("%s " NODEF " --plugin-dir %s --list-passes", PASSRUN_EXE, dir);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "test-noop"), "%s", r.out);
	tu_result_free(&r);
	/* Empty entries of the path are skipped, not read as the current folder. */
	r = tu_run("PASSRUN_PLUGIN_PATH=::%s: %s " NODEF " --list-passes", dir, PASSRUN_EXE);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "test-noop"), "%s", r.out);
	tu_result_free(&r);
	free(dir);
	free(path);
}

Test(plugin, current_directory_is_never_searched)
{
	char *path = plugin_copy_in("cwd", 0755);
	char *dir = strdup(path);
	*strrchr(dir, '/') = 0;
	tu_result r = tu_run("cd %s && PASSRUN_PLUGIN_PATH=: %s " NODEF " --list-passes", dir,
			     PASSRUN_EXE);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.out, "test-noop"), "loaded from the current folder: %s", r.out);
	tu_result_free(&r);
	free(dir);
	free(path);
}

Test(plugin, shipped_plugins_load_automatically)
{
	tu_result r = run("--list-passes");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "dce  (plugin dce"), "%s", r.out);
	cr_assert(strstr(r.out, "/lib/passrun/plugins/dce.so"), "%s", r.out);
	tu_result_free(&r);
}

Test(plugin, pipeline_plugins_are_relative_to_the_yaml_file)
{
	char *path = plugin_copy_in("pl", 0755);
	char *dir = strdup(path);
	*strrchr(dir, '/') = 0;
	char *yaml = NULL, *args = NULL;
	cr_assert(asprintf(&yaml, "%s/p.yaml", dir) > 0);
	FILE *f = fopen(yaml, "w");
	cr_assert(f);
	fputs("plugins: [prtest_good.so]\npasses: [test-noop]\n", f);
	fclose(f);
	cr_assert(asprintf(&args, NODEF " --pipeline %s --list-passes", yaml) > 0);
	tu_result r = tu_run("cd / && %s %s", PASSRUN_EXE, args);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "test-noop"), "%s", r.out);
	tu_result_free(&r);
	/* A missing plugin is an error at its line and column. */
	f = fopen(yaml, "w");
	fputs("passes: [test-noop]\nplugins:\n  - nothere.so\n", f);
	fclose(f);
	r = tu_run("%s %s", PASSRUN_EXE, args);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "p.yaml:3:5:"), "%s", r.err);
	cr_assert(strstr(r.err, "nothere.so"), "%s", r.err);
	tu_result_free(&r);
	free(yaml);
	free(args);
	free(dir);
	free(path);
}

/* A copy of the plugin `which` at dir/name, mode 0755 (path malloc'd). */
static char *plugin_copy_as(const char *which, const char *dir, const char *name)
{
	char *path = NULL;
	cr_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	tu_result r = tu_run("mkdir -p %s && cp %s %s && chmod 0755 %s", dir, which, path, path);
	cr_assert_eq(r.status, 0, "cp failed: %s", r.err);
	tu_result_free(&r);
	return path;
}

/* --plugin NAME.so without a slash is refused: dlopen (and LLVM's
 * -load-pass-plugin) would search the library path for it, open() the
 * current folder. Neither file is loaded; a file in the current folder gets
 * the spelling that loads it, and that spelling works. */
Test(plugin, bare_name_is_refused_with_the_hint_to_write_dot_slash)
{
	char *dir = NULL, *libdir = NULL;
	cr_assert(asprintf(&dir, "%s/here", tu_temp_dir()) > 0);
	cr_assert(asprintf(&libdir, "%s/libpath", tu_temp_dir()) > 0);
	char *good = plugin_copy_as(PLUGIN("good"), dir, "prtest_good.so");
	char *other = plugin_copy_as(PLUGIN("dup_a"), libdir, "prtest_good.so");
	tu_result r = tu_run("cd %s && LD_LIBRARY_PATH=%s %s " NODEF " --plugin prtest_good.so "
			     "--list-passes", dir, libdir, PASSRUN_EXE);
	cr_assert_eq(r.status, 2, "a bare name is a plugin error: %s", r.err);
	cr_assert(strstr(r.err, "prtest_good.so: cannot load plugin"), "names the file: %s", r.err);
	cr_assert(strstr(r.err, "write ./prtest_good.so"), "gives the hint: %s", r.err);
	cr_assert_null(strstr(r.out, "test-noop"), "./prtest_good.so was loaded: %s", r.out);
	cr_assert_null(strstr(r.out, "test-dup"), "LD_LIBRARY_PATH's file was loaded: %s", r.out);
	tu_result_free(&r);

	r = tu_run("cd %s && LD_LIBRARY_PATH=%s %s " NODEF " --load-pass-plugin ./prtest_good.so "
		   "--list-passes", dir, libdir, PASSRUN_EXE);
	cr_assert_eq(r.status, 0, "the hinted spelling loads: %s", r.err);
	cr_assert(strstr(r.out, "test-noop"), "./prtest_good.so was not loaded: %s", r.out);
	cr_assert_null(strstr(r.out, "test-dup"), "LD_LIBRARY_PATH's file was loaded: %s", r.out);
	tu_result_free(&r);
	free(other);
	free(good);
	free(libdir);
	free(dir);
}

/* A bare name with no such file in the current folder says it was not
 * searched for, and does not suggest a ./ file that is not there. */
Test(plugin, bare_name_not_here_says_plugins_are_not_searched_for)
{
	tu_result r = tu_run("cd %s && %s " NODEF " --plugin prtest_nowhere.so --list-passes",
			     tu_temp_dir(), PASSRUN_EXE);
	cr_assert_eq(r.status, 2, "%s", r.err);
	cr_assert(strstr(r.err, "prtest_nowhere.so: cannot load plugin"), "%s", r.err);
	cr_assert(strstr(r.err, "never searched for on the library path"), "%s", r.err);
	cr_assert_null(strstr(r.err, "./prtest_nowhere.so"), "no hint at a missing file: %s", r.err);
	tu_result_free(&r);
}

/* --load-pass-plugin is --plugin under LLVM's name: same file, same passes. */
Test(plugin, load_pass_plugin_is_another_name_for_plugin)
{
	tu_result r = run(NODEF " --load-pass-plugin " PLUGIN("good") " --list-passes");
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(strstr(r.out, "test-noop  (plugin test-good 1.0)"), "%s", r.out);
	tu_result_free(&r);
	r = run(NODEF " --load-pass-plugin=" PLUGIN("bad_abi") " --list-passes");
	cr_assert_eq(r.status, 2, "its errors are --plugin's: %s", r.err);
	cr_assert(strstr(r.err, "refusing to load plugin: it was built for plugin ABI version"),
		  "%s", r.err);
	tu_result_free(&r);
}

/* Swaps link between a and b until killed. */
static pid_t start_swapper(const char *link, const char *a, const char *b)
{
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid)
		return pid;
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.new", link);
	for (unsigned i = 0;; i++) {
		unlink(tmp);
		if (symlink(i % 2 ? b : a, tmp) == 0)
			rename(tmp, link);
	}
}

/* A link in a 0777 folder to a safe plugin passes the check (the resolved
 * path is safe), but another user may swap the link at any moment: what is
 * loaded must be the file that was checked, never one from the 0777 folder.
 * The race window is small, so passrun runs 300 times while the link swaps
 * between the safe plugin and an unsafe one (the bug loaded it 2-4 times). */
Test(plugin, swapped_link_never_loads_a_plugin_from_an_unsafe_folder)
{
	char *safe_dir = NULL, *ww = NULL, *link = NULL;
	cr_assert(asprintf(&safe_dir, "%s/safe", tu_temp_dir()) > 0);
	cr_assert(asprintf(&ww, "%s/ww", tu_temp_dir()) > 0);
	char *safe = plugin_copy_as(PLUGIN("good"), safe_dir, "prtest_good.so");
	char *unsafe = plugin_copy_as(PLUGIN("dup_a"), ww, "unsafe.so");
	cr_assert_eq(chmod(ww, 0777), 0);
	cr_assert(asprintf(&link, "%s/link.so", ww) > 0);
	cr_assert_eq(symlink(safe, link), 0);
	pid_t swapper = start_swapper(link, safe, unsafe);
	tu_result r = tu_run("ok=0 refused=0 unsafe=0; for i in $(seq 300); do "
			     "out=$(%s " NODEF " --plugin %s --list-passes 2>&1); "
			     "case $out in *test-dup*) unsafe=$((unsafe+1));; "
			     "*test-noop*) ok=$((ok+1));; *'writable by other users'*) "
			     "refused=$((refused+1));; *) echo \"$out\";; esac; done; "
			     "echo \"ok=$ok refused=$refused unsafe=$unsafe\"", PASSRUN_EXE, link);
	kill(swapper, SIGKILL);
	waitpid(swapper, NULL, 0);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, " unsafe=0\n"), "loaded the plugin from the 0777 folder: %s", r.out);
	cr_assert(strstr(r.out, "ok=") && !strstr(r.out, "ok=0 "), "never loaded the safe one: %s",
		  r.out);
	tu_result_free(&r);
	free(link);
	free(unsafe);
	free(safe);
	free(ww);
	free(safe_dir);
}

/* ---- through the API ------------------------------------------------------ */

Test(plugin, failed_registration_leaves_nothing_behind)
{
	pr_registry *r = pr_registry_new();
	cr_assert_null(pr_registry_load_plugin(r, PLUGIN("dup_a")));
	pr_err *e = pr_registry_load_plugin(r, PLUGIN("dup_b"));
	cr_assert_not_null(e);
	pr_err_free(e);
	cr_assert_eq(pr_registry_n_passes(r), 1);
	cr_assert_str_eq(pr_registry_pass_plugin(r, 0), "dup-a");
	/* The registry still works after a refusal. */
	cr_assert_null(pr_registry_load_plugin(r, PLUGIN("good")));
	cr_assert_not_null(pr_registry_find_pass(r, "test-noop"));
	cr_assert_not_null(pr_registry_find_analysis(r, "test-node-count"));
	pr_registry_free(r);
}

Test(plugin, missing_file_and_folder_are_errors)
{
	pr_registry *r = pr_registry_new();
	pr_err *e = pr_registry_load_plugin(r, "/nonexistent/x.so");
	cr_assert(e && strstr(pr_err_message(e), "/nonexistent/x.so"));
	pr_err_free(e);
	e = pr_registry_load_dir(r, "/nonexistent-dir");
	cr_assert(e && strstr(pr_err_message(e), "/nonexistent-dir"));
	pr_err_free(e);
	pr_registry_free(r);
}
