/* plugin.c: the registry of passes and analyses, and the plugin loader.
 *
 * A plugin is a .so with one exported entry point, passrun_plugin_info
 * (modelled on LLVM's llvmGetPassPluginInfo), returning a pr_plugin_info that
 * starts with the ABI version and its own size. Loading goes:
 *
 *   1. open the file once, and refuse it when the opened file, or any
 *      folder on the path the kernel reports for it (/proc/self/fd/N: no
 *      link left to swap), can be written by group or others (a sticky
 *      folder such as /tmp is fine: only an entry's owner may replace it),
 *      or is owned by another user: dlopen runs the plugin's constructors,
 *      so the check comes first;
 *   2. dlopen that same open file through /proc/self/fd/N, never the name
 *      again (another process may swap a link between the check and the
 *      load, and a bare NAME.so would be searched on the library path), find
 *      the entry point, check abi_version and struct_size;
 *   3. call its register callback with the registry marked as "loading this
 *      plugin", so that each pass remembers where it came from and a
 *      duplicate name can name both plugins. On any error the passes and
 *      analyses it registered are dropped and it is unloaded.
 *
 * Pass and analysis structs are copied into full-size structs (zeroed past
 * the plugin's struct_size), so a plugin built against an older, shorter
 * pass.h reads as if the new fields were absent. The strings and option
 * arrays they point to stay in the plugin, which stays loaded until
 * pr_registry_free. */
#define _GNU_SOURCE   /* dlinfo, RTLD_NOLOAD, F_DUPFD_CLOEXEC */
#include "passrun/manager.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "locate.h"
#include "pm_internal.h"
#include "pm_run.h"

typedef struct plugin_rec {
	char *path;       /* as given */
	char *name;
	char *version;
	void *handle;
	int fd;           /* the checked file, open while loaded: its
			     /proc/self/fd name stays unique to it */
	dev_t dev;
	ino_t ino;
} plugin_rec;

typedef struct pass_rec {
	pr_pass_info info;
	int plugin;       /* index into plugins, -1 when registered in-process */
} pass_rec;

typedef struct analysis_rec {
	pr_analysis_info info;
	int plugin;
} analysis_rec;

struct pr_registry {
	int n_plugins, cap_plugins;
	plugin_rec *plugins;
	int n_passes, cap_passes;
	pass_rec *passes;
	int n_analyses, cap_analyses;
	analysis_rec *analyses;
	int loading;      /* the plugin whose register callback runs, or -1 */
	pr_err *reg_err;  /* the first registration error of that callback */
};

pr_registry *pr_registry_new(void)
{
	pr_registry *r = pr_xcalloc(1, sizeof *r);
	r->loading = -1;
	return r;
}

void pr_registry_free(pr_registry *r)
{
	if (!r)
		return;
	free(r->passes);
	free(r->analyses);
	for (int i = 0; i < r->n_plugins; i++) {
		plugin_rec *pl = &r->plugins[i];
		if (pl->handle)
			dlclose(pl->handle);
		close(pl->fd);
		free(pl->path);
		free(pl->name);
		free(pl->version);
	}
	free(r->plugins);
	pr_err_free(r->reg_err);
	free(r);
}

/* ---- names --------------------------------------------------------------- */

static const char *plugin_label(const pr_registry *r, int plugin, char *buf, size_t n)
{
	if (plugin < 0)
		snprintf(buf, n, "built-in");
	else
		snprintf(buf, n, "plugin '%s' (%s)", r->plugins[plugin].name,
			 r->plugins[plugin].path);
	return buf;
}

/* Both plugins named: the one that registered name first and the one
 * loading now. */
static pr_err *registered_twice(const pr_registry *r, const char *kind, const char *name,
				int first)
{
	char a[PATH_MAX + 64], b[PATH_MAX + 64];
	return pr_err_new("%s '%s' is registered twice: by %s and by %s", kind, name,
			  plugin_label(r, first, a, sizeof a), plugin_label(r, r->loading, b, sizeof b));
}

/* Pass names appear in --passes 'a,b{x=1}' and --set PASS.OPT=V, so the
 * characters of that syntax are not allowed in them. */
static bool good_name(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (strchr(",{}=. \t\n:#[]\"'", *s))
			return false;
	return true;
}

static pr_err *check_option_decls(const pr_pass_info *p)
{
	if (p->n_options && !p->options)
		return pr_err_new("pass '%s' declares %zu options but no option array", p->name,
				  p->n_options);
	for (size_t i = 0; i < p->n_options; i++) {
		const pr_option_decl *o = &p->options[i];
		if (!good_name(o->name))
			return pr_err_new("pass '%s': option %zu has no valid name ('%s')", p->name, i,
					  o->name ? o->name : "(null)");
		if ((unsigned)o->type > PR_OPT_STRING)
			return pr_err_new("pass '%s': option '%s' has an unknown type (%d; one of "
					  "PR_OPT_BOOL, PR_OPT_INT, PR_OPT_FLOAT, PR_OPT_STRING)",
					  p->name, o->name, (int)o->type);
		if ((unsigned)o->scope > PR_SCOPE_PIPELINE)
			return pr_err_new("pass '%s': option '%s' has an unknown scope (%d)", p->name,
					  o->name, (int)o->scope);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(p->options[j].name, o->name))
				return pr_err_new("pass '%s' declares option '%s' twice",
						  p->name, o->name);
		const char *problem = pm_value_check(o->type, o->default_value ? o->default_value : "",
						     NULL);
		if (problem)
			return pr_err_new("pass '%s': the default of option '%s' is not %s: %s",
					  p->name, o->name, pm_type_article(o->type), problem);
	}
	return NULL;
}

/* Pipeline options are one namespace shared by every pass that declares
 * them, so two declarations must agree on what a value looks like. */
static pr_err *check_pipeline_options(const pr_registry *r, const pr_pass_info *p)
{
	for (size_t i = 0; i < p->n_options; i++) {
		const pr_option_decl *o = &p->options[i];
		if (o->scope != PR_SCOPE_PIPELINE)
			continue;
		const pr_option_decl *prev = pr_registry_find_pipeline_option(r, o->name);
		if (prev && (prev->type != o->type || prev->per_method != o->per_method))
			return pr_err_new("pass '%s' declares pipeline option '%s' as %s%s, "
					  "but another pass declares it as %s%s", p->name, o->name,
					  pr_option_type_name(o->type), o->per_method ? " (per method)" : "",
					  pr_option_type_name(prev->type),
					  prev->per_method ? " (per method)" : "");
	}
	return NULL;
}

static pr_err *register_pass(pr_registry *r, const pr_pass_info *pass)
{
	if (!pass || pass->struct_size < offsetof(pr_pass_info, run) + sizeof(pr_pass_run_fn))
		return pr_err_new("a pass struct is too small (struct_size %zu)",
				  pass ? pass->struct_size : 0);
	pr_pass_info info;
	memset(&info, 0, sizeof info);
	memcpy(&info, pass, pass->struct_size < sizeof info ? pass->struct_size : sizeof info);
	info.struct_size = sizeof info;
	if (!good_name(info.name))
		return pr_err_new("a pass has no valid name ('%s'; names may not contain "
				  "spaces or any of , { } = . : # [ ] quotes)",
				  info.name ? info.name : "(null)");
	if (!info.run && !info.run_graph)
		return pr_err_new("pass '%s' has no run function (set run or run_graph)", info.name);
	for (int i = 0; i < r->n_passes; i++)
		if (!strcmp(r->passes[i].info.name, info.name))
			return registered_twice(r, "pass", info.name, r->passes[i].plugin);
	pr_err *e = check_option_decls(&info);
	if (!e)
		e = check_pipeline_options(r, &info);
	if (e)
		return e;
	PR_GROW(r->passes, r->n_passes, r->cap_passes);
	r->passes[r->n_passes++] = (pass_rec){info, r->loading};
	return NULL;
}

static pr_err *register_analysis(pr_registry *r, const pr_analysis_info *a)
{
	if (!a || a->struct_size < offsetof(pr_analysis_info, destroy) + sizeof a->destroy)
		return pr_err_new("an analysis struct is too small (struct_size %zu)",
				  a ? a->struct_size : 0);
	pr_analysis_info info;
	memset(&info, 0, sizeof info);
	memcpy(&info, a, a->struct_size < sizeof info ? a->struct_size : sizeof info);
	info.struct_size = sizeof info;
	if (!good_name(info.name) || !info.compute)
		return pr_err_new("an analysis has no valid name or no compute function");
	for (int i = 0; i < r->n_analyses; i++)
		if (!strcmp(r->analyses[i].info.name, info.name))
			return registered_twice(r, "analysis", info.name, r->analyses[i].plugin);
	PR_GROW(r->analyses, r->n_analyses, r->cap_analyses);
	r->analyses[r->n_analyses++] = (analysis_rec){info, r->loading};
	return NULL;
}

/* A plugin's callback may ignore what these return, so the first error is
 * also kept on the registry and wins over a callback that returns success. */
static pr_err *remember(pr_registry *r, pr_err *e)
{
	if (e && r->loading >= 0 && !r->reg_err)
		r->reg_err = pr_err_new("%s", pr_err_message(e));
	return e;
}

pr_err *pr_register_pass(pr_registry *r, const pr_pass_info *pass)
{
	return remember(r, register_pass(r, pass));
}

pr_err *pr_register_analysis(pr_registry *r, const pr_analysis_info *analysis)
{
	return remember(r, register_analysis(r, analysis));
}

/* Device types are the IR's (device.h): the verifier and the runtime read
 * them without a registry. A type outlives a plugin that fails to load. */
pr_err *pr_register_device_type(pr_registry *r, const pr_device_type *type)
{
	char who[PATH_MAX + 64];
	pr_err *e = pr_device_type_add(type);
	return remember(r, e ? pr_err_wrap(e, "%s", plugin_label(r, r->loading, who, sizeof who)) : NULL);
}

/* ---- permissions --------------------------------------------------------- */

static pr_err *check_owner_mode(const char *file, const char *what, const struct stat *st,
				bool is_dir)
{
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return pr_err_new("%s: refusing to load a plugin: %s is owned by another user "
				  "(uid %u)", file, what, (unsigned)st->st_uid);
	bool sticky = is_dir && (st->st_mode & S_ISVTX);
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !sticky)
		return pr_err_new("%s: refusing to load a plugin: %s is writable by %s "
				  "(mode %04o; chmod go-w it)", file, what,
				  (st->st_mode & S_IWOTH) ? "other users" : "its group",
				  (unsigned)(st->st_mode & 07777));
	return NULL;
}

/* Every folder above real, the opened file's path, up to the root. */
static pr_err *check_folders(const char *file, const char *real)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", real);
	for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
		if (slash == dir)
			slash[1] = 0;   /* the root itself */
		else
			*slash = 0;
		struct stat ds;
		if (stat(dir, &ds) != 0)
			return pr_err_new("%s: cannot load plugin: %s: %s", file, dir,
					  strerror(errno));
		char what[PATH_MAX + 16];
		snprintf(what, sizeof what, "the folder %s", dir);
		pr_err *e = check_owner_mode(file, what, &ds, true);
		if (e)
			return e;
		if (slash == dir)
			break;
	}
	return NULL;
}

/* Where the open file fd lives now, as the kernel names it (no links). */
static pr_err *opened_path(const char *file, int fd, char real[PATH_MAX])
{
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(proc, real, PATH_MAX - 1);
	if (n < 0)
		return pr_err_new("%s: cannot load plugin: cannot read %s (is /proc mounted?): %s",
				  file, proc, strerror(errno));
	real[n] = 0;
	if (real[0] != '/')   /* "(deleted)" paths still start with '/' */
		return pr_err_new("%s: cannot load plugin: it is not in a folder (%s)", file, real);
	return NULL;
}

/* Opens file once and checks the opened file and its folders; *fd_out is
 * what dlopen will load. O_NONBLOCK: a FIFO must not hang the check. */
static pr_err *open_checked(const char *file, int *fd_out, struct stat *st_out)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return pr_err_new("%s: cannot load plugin: %s", file, strerror(errno));
	struct stat st;
	char real[PATH_MAX];
	pr_err *e = NULL;
	if (fstat(fd, &st) != 0)
		e = pr_err_new("%s: cannot load plugin: %s", file, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		e = pr_err_new("%s: cannot load plugin: not a regular file", file);
	if (!e)
		e = check_owner_mode(file, "the file", &st, false);
	if (!e)
		e = opened_path(file, fd, real);
	if (!e)
		e = check_folders(file, real);
	if (e) {
		close(fd);
		return e;
	}
	*fd_out = fd;
	*st_out = st;
	return NULL;
}

/* ---- loading ------------------------------------------------------------- */

static int find_loaded(const pr_registry *r, const struct stat *st)
{
	for (int i = 0; i < r->n_plugins; i++)
		if (r->plugins[i].dev == st->st_dev && r->plugins[i].ino == st->st_ino)
			return i;
	return -1;
}

/* Is an object of exactly this name loaded? Then it is a plugin whose fd was
 * closed while the object stayed (dlclose may keep one), and dlopen would
 * hand it back for the name instead of loading the file now behind it. */
static bool name_taken(const char *name)
{
	void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
	struct link_map *lm = NULL;
	bool taken = h && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && !strcmp(lm->l_name, name);
	if (h)
		dlclose(h);
	return taken;
}

/* dlopen of the checked open file: /proc/self/fd/N opens that inode, not a
 * path. A name already taken (see name_taken) moves the file to another fd. */
static void *dlopen_fd(int *fd)
{
	for (int tries = 0; tries < 16; tries++) {
		char name[64];
		snprintf(name, sizeof name, "/proc/self/fd/%d", *fd);
		if (!name_taken(name))
			return dlopen(name, RTLD_NOW | RTLD_LOCAL);
		int other = fcntl(*fd, F_DUPFD_CLOEXEC, *fd + 1);
		if (other < 0)
			break;
		close(*fd);
		*fd = other;
	}
	return NULL;
}

static pr_err *open_entry(const char *path, int *fd, void **handle, const pr_plugin_info **info)
{
	dlerror();
	void *h = dlopen_fd(fd);
	if (!h) {
		const char *why = dlerror();
		return pr_err_new("%s: cannot load plugin: %s", path,
				  why ? why : "no free file descriptor to load it through");
	}
	dlerror();
	void *sym = dlsym(h, PR_PLUGIN_ENTRY_SYMBOL);
	if (!sym) {
		dlclose(h);
		return pr_err_new("%s: not a passrun plugin: it has no entry point '%s' "
				  "(export it with PR_PLUGIN_EXPORT)", path, PR_PLUGIN_ENTRY_SYMBOL);
	}
	pr_plugin_entry_fn entry;
	memcpy(&entry, &sym, sizeof entry);  /* object pointer to function pointer */
	const pr_plugin_info *pi = entry();
	const char *bad = NULL;
	char why[256];
	if (!pi) {
		bad = "its entry point returned NULL";
	} else if (pi->abi_version != PR_PLUGIN_ABI_VERSION) {
		snprintf(why, sizeof why, "it was built for plugin ABI version %u, but this "
			 "passrun has ABI version %u (rebuild it against this passrun)",
			 pi->abi_version, PR_PLUGIN_ABI_VERSION);
		bad = why;
	} else if (pi->struct_size < offsetof(pr_plugin_info, register_fn) + sizeof pi->register_fn) {
		snprintf(why, sizeof why, "its pr_plugin_info is %u bytes, less than the "
			 "%zu bytes of ABI version %u", pi->struct_size,
			 offsetof(pr_plugin_info, register_fn) + sizeof pi->register_fn,
			 PR_PLUGIN_ABI_VERSION);
		bad = why;
	} else if (!pi->name || !*pi->name || !pi->register_fn) {
		bad = "its pr_plugin_info has no name or no register callback";
	}
	if (bad) {
		dlclose(h);
		return pr_err_new("%s: refusing to load plugin: %s", path, bad);
	}
	*handle = h;
	*info = pi;
	return NULL;
}

static int add_plugin(pr_registry *r, const char *path, const pr_plugin_info *pi, void *h,
		      int fd, const struct stat *st)
{
	PR_GROW(r->plugins, r->n_plugins, r->cap_plugins);
	plugin_rec *pl = &r->plugins[r->n_plugins];
	pl->path = pr_xstrdup(path);
	pl->name = pr_xstrdup(pi->name);
	pl->version = pr_xstrdup(pi->version ? pi->version : "");
	pl->handle = h;
	pl->fd = fd;
	pl->dev = st->st_dev;
	pl->ino = st->st_ino;
	return r->n_plugins++;
}

static void drop_last_plugin(pr_registry *r, int n_passes, int n_analyses)
{
	r->n_passes = n_passes;
	r->n_analyses = n_analyses;
	plugin_rec *pl = &r->plugins[--r->n_plugins];
	dlclose(pl->handle);
	close(pl->fd);
	free(pl->path);
	free(pl->name);
	free(pl->version);
}

/* dlopen (and LLVM's -load-pass-plugin) searches the library path for a name
 * without a '/', while open() finds it in the current folder: such a name is
 * refused rather than read either way, with the spelling that says which. */
static pr_err *check_has_folder(const char *path)
{
	if (strchr(path, '/'))
		return NULL;
	struct stat st;
	if (stat(path, &st) == 0)
		return pr_err_new("%s: cannot load plugin: a plugin is named by a path with a '/', "
				  "never searched for; write ./%s for the file in the current "
				  "folder", path, path);
	return pr_err_new("%s: cannot load plugin: a plugin is named by a path with a '/', "
			  "never searched for on the library path; give its folder (DIR/%s)",
			  path, path);
}

pr_err *pr_registry_load_plugin(pr_registry *r, const char *path)
{
	struct stat st;
	int fd = -1;
	pr_err *e = check_has_folder(path);
	if (!e)
		e = open_checked(path, &fd, &st);
	if (e)
		return e;
	if (find_loaded(r, &st) >= 0) {
		close(fd);
		return NULL;
	}
	void *h = NULL;
	const pr_plugin_info *pi = NULL;
	if ((e = open_entry(path, &fd, &h, &pi))) {
		close(fd);
		return e;
	}
	int n_passes = r->n_passes, n_analyses = r->n_analyses;
	r->loading = add_plugin(r, path, pi, h, fd, &st);
	e = pi->register_fn(r);
	if (r->reg_err) {
		pr_err_free(e);
		e = r->reg_err;
		r->reg_err = NULL;
	}
	r->loading = -1;
	if (e) {
		/* pi lives in the plugin: use it before unloading. */
		e = pr_err_wrap(e, "%s: plugin '%s' failed to register", path, pi->name);
		drop_last_plugin(r, n_passes, n_analyses);
	}
	return e;
}

static int so_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return d->d_name[0] != '.' && n > 3 && !strcmp(d->d_name + n - 3, ".so");
}

pr_err *pr_registry_load_dir(pr_registry *r, const char *dir)
{
	struct dirent **list;
	int n = scandir(dir, &list, so_filter, alphasort);
	if (n < 0)
		return pr_err_new("%s: cannot read plugin folder: %s", dir, strerror(errno));
	pr_err *e = NULL;
	for (int i = 0; i < n; i++) {
		if (!e) {
			char *path = pr_xasprintf("%s/%s", dir, list[i]->d_name);
			struct stat st;
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
				e = pr_registry_load_plugin(r, path);
			free(path);
		}
		free(list[i]);
	}
	free(list);
	return e;
}

const char *pr_registry_default_plugin_dir(void)
{
	return pr_locate_plugin_dir();
}

static pr_err *load_env_path(pr_registry *r, const char *env)
{
	char *copy = pr_xstrdup(env), *save = NULL;
	pr_err *e = NULL;
	for (char *dir = strtok_r(copy, ":", &save); dir && !e; dir = strtok_r(NULL, ":", &save))
		e = pr_err_wrap(pr_registry_load_dir(r, dir), "PASSRUN_PLUGIN_PATH");
	free(copy);
	return e;
}

pr_err *pr_registry_load_search(pr_registry *r, const pr_plugin_search *s)
{
	pr_err *e = NULL;
	for (int i = 0; i < s->n_files && !e; i++)
		e = pr_registry_load_plugin(r, s->files[i]);
	for (int i = 0; i < s->n_dirs && !e; i++)
		e = pr_registry_load_dir(r, s->dirs[i]);
	if (!e && s->env_path)
		e = load_env_path(r, s->env_path);
	const char *dir = s->no_default ? NULL : pr_registry_default_plugin_dir();
	if (!e && dir)
		e = pr_registry_load_dir(r, dir);
	return e;
}

/* ---- queries ------------------------------------------------------------- */

int pm_registry_pass_index(const pr_registry *r, const pr_pass_info *info)
{
	for (int i = 0; i < r->n_passes; i++)
		if (&r->passes[i].info == info)
			return i;
	return -1;
}

int pr_registry_n_passes(const pr_registry *r)
{
	return r->n_passes;
}

const pr_pass_info *pr_registry_pass(const pr_registry *r, int i)
{
	return &r->passes[i].info;
}

const pr_pass_info *pr_registry_find_pass(const pr_registry *r, const char *name)
{
	for (int i = 0; i < r->n_passes; i++)
		if (!strcmp(r->passes[i].info.name, name))
			return &r->passes[i].info;
	return NULL;
}

const pr_analysis_info *pr_registry_find_analysis(const pr_registry *r, const char *name)
{
	for (int i = 0; i < r->n_analyses; i++)
		if (!strcmp(r->analyses[i].info.name, name))
			return &r->analyses[i].info;
	return NULL;
}

const char *pr_registry_pass_plugin(const pr_registry *r, int i)
{
	int pl = r->passes[i].plugin;
	return pl < 0 ? "built-in" : r->plugins[pl].name;
}

int pr_registry_n_plugins(const pr_registry *r)
{
	return r->n_plugins;
}

const char *pr_registry_plugin_name(const pr_registry *r, int i)
{
	return r->plugins[i].name;
}

const char *pr_registry_plugin_version(const pr_registry *r, int i)
{
	return r->plugins[i].version;
}

const char *pr_registry_plugin_file(const pr_registry *r, int i)
{
	return r->plugins[i].path;
}

const char *pr_registry_pass_plugin_file(const pr_registry *r, int i)
{
	int pl = r->passes[i].plugin;
	return pl < 0 ? "" : r->plugins[pl].path;
}

const pr_option_decl *pr_registry_find_pipeline_option(const pr_registry *r, const char *name)
{
	for (int i = 0; i < r->n_passes; i++) {
		const pr_pass_info *p = &r->passes[i].info;
		for (size_t j = 0; j < p->n_options; j++)
			if (p->options[j].scope == PR_SCOPE_PIPELINE &&
			    !strcmp(p->options[j].name, name))
				return &p->options[j];
	}
	return NULL;
}

int pm_registry_pipeline_option_names(const pr_registry *r, const char ***out)
{
	int n = 0, cap = 0;
	const char **names = NULL;
	for (int i = 0; i < r->n_passes; i++) {
		const pr_pass_info *p = &r->passes[i].info;
		for (size_t j = 0; j < p->n_options; j++) {
			const pr_option_decl *o = &p->options[j];
			if (o->scope != PR_SCOPE_PIPELINE || pr_registry_find_pipeline_option(r, o->name) != o)
				continue;
			PR_GROW(names, n, cap);
			names[n++] = o->name;
		}
	}
	*out = names;
	return n;
}

int pm_registry_pass_names(const pr_registry *r, const char ***out)
{
	const char **names = pr_xcalloc((size_t)r->n_passes + 1, sizeof *names);
	for (int i = 0; i < r->n_passes; i++)
		names[i] = r->passes[i].info.name;
	*out = names;
	return r->n_passes;
}

/* ---- --list-passes ------------------------------------------------------- */

static void list_options(const pr_pass_info *p, FILE *out)
{
	for (size_t j = 0; j < p->n_options; j++) {
		const pr_option_decl *o = &p->options[j];
		fprintf(out, "    %s: %s = %s%s%s\n", o->name, pr_option_type_name(o->type),
			o->default_value && *o->default_value ? o->default_value : "\"\"",
			o->scope == PR_SCOPE_PIPELINE ? "  [pipeline option]" : "",
			o->per_method ? "  [per method]" : "");
		if (o->help && *o->help)
			fprintf(out, "        %s\n", o->help);
	}
}

void pr_registry_list(const pr_registry *r, FILE *out)
{
	fprintf(out, "Passes:\n");
	for (int i = 0; i < r->n_passes; i++) {
		const pr_pass_info *p = &r->passes[i].info;
		int pl = r->passes[i].plugin;
		fprintf(out, "  %s  (plugin %s%s%s)\n", p->name, pr_registry_pass_plugin(r, i),
			pl >= 0 && *r->plugins[pl].version ? " " : "",
			pl >= 0 ? r->plugins[pl].version : "");
		if (p->summary && *p->summary)
			fprintf(out, "      %s\n", p->summary);
		list_options(p, out);
	}
	if (!r->n_passes)
		fprintf(out, "  (none)\n");
	fprintf(out, "Analyses:\n");
	for (int i = 0; i < r->n_analyses; i++) {
		const pr_analysis_info *a = &r->analyses[i].info;
		int pl = r->analyses[i].plugin;
		fprintf(out, "  %s  (plugin %s)\n", a->name, pl < 0 ? "built-in" : r->plugins[pl].name);
		if (a->summary && *a->summary)
			fprintf(out, "      %s\n", a->summary);
	}
	if (!r->n_analyses)
		fprintf(out, "  (none)\n");
	fprintf(out, "Plugins:\n");
	for (int i = 0; i < r->n_plugins; i++)
		fprintf(out, "  %s %s  %s\n", r->plugins[i].name, r->plugins[i].version,
			r->plugins[i].path);
	if (!r->n_plugins)
		fprintf(out, "  (none)\n");
}
