/* provenance.c: what produced a result, so that a number in --stats=json or
 * in a row of `passrun compare` can be traced back and rerun.
 *
 * The record names passrun's version (baked at configure time: the project
 * version and `git describe`), the plugin ABI and every loaded plugin with its
 * version, the program file and the FNV-1a 64 hash of its bytes (cheap, no
 * dependency, and enough to tell two inputs apart; it is no cryptographic
 * fingerprint), the pipeline as it ran (after --set, as JSON: what
 * pr_pipeline_to_yaml prints, in the other syntax), the overrides in the order
 * applied, the seed of random inputs when a run drew any, and the caller's
 * status word with its exit status. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/strbuf.h"
#include "pm_internal.h"

#ifndef PASSRUN_VERSION
#define PASSRUN_VERSION "unknown"
#endif
#ifndef PASSRUN_GIT_DESCRIBE
#define PASSRUN_GIT_DESCRIBE ""
#endif

const char *pr_version(void)
{
	return PASSRUN_VERSION;
}

const char *pr_version_git(void)
{
	return PASSRUN_GIT_DESCRIBE;
}

/* FNV-1a over p[0, n), eight bytes a round: the same hash, without a loop
 * test per byte (the multiply chain is what it costs). */
static uint64_t fnv1a64(uint64_t h, const unsigned char *p, size_t n)
{
	const uint64_t prime = 0x100000001b3ull;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		h = (h ^ p[i]) * prime;
		h = (h ^ p[i + 1]) * prime;
		h = (h ^ p[i + 2]) * prime;
		h = (h ^ p[i + 3]) * prime;
		h = (h ^ p[i + 4]) * prime;
		h = (h ^ p[i + 5]) * prime;
		h = (h ^ p[i + 6]) * prime;
		h = (h ^ p[i + 7]) * prime;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * prime;
	return h;
}

pr_err *pr_file_fnv1a64(const char *path, char hex[17])
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return pr_err_new("%s: cannot read: %s", path, strerror(errno));
	uint64_t h = 0xcbf29ce484222325ull;
	const size_t size = (size_t)1 << 20;
	unsigned char *chunk = pr_xmalloc(size);
	size_t got;
	while ((got = fread(chunk, 1, size, f)) > 0)
		h = fnv1a64(h, chunk, got);
	free(chunk);
	bool bad = ferror(f);
	fclose(f);
	if (bad)
		return pr_err_new("%s: cannot read", path);
	snprintf(hex, 17, "%016llx", (unsigned long long)h);
	return NULL;
}

/* ---- the pipeline as JSON ------------------------------------------------ */

/* A YAML plain scalar that JSON reads as a boolean or a number stays bare. */
static bool bare_json(const char *s, bool quoted)
{
	if (quoted || !*s)
		return false;
	if (!strcmp(s, "true") || !strcmp(s, "false"))
		return true;
	const char *digits = s[0] == '-' ? s + 1 : s;
	if (digits[0] == '0' && digits[1] >= '0' && digits[1] <= '9')
		return false;   /* JSON has no leading zeros */
	char *end;
	strtod(s, &end);
	return end != s && !*end && strspn(s, "-0123456789.eE") == strlen(s) && digits[0] != '.';
}

static void put_scalar(pr_strbuf *b, const char *s, bool quoted)
{
	if (bare_json(s, quoted))
		pr_strbuf_puts(b, s);
	else
		pr_strbuf_json_string(b, s);
}

static void put_options(pr_strbuf *b, const pm_optlist *l)
{
	pr_strbuf_putc(b, '{');
	for (int i = 0; i < l->n; i++) {
		const pm_optval *v = &l->items[i];
		pr_strbuf_puts(b, i ? ", " : "");
		pr_strbuf_json_string(b, v->name);
		pr_strbuf_puts(b, ": ");
		if (!v->is_map) {
			put_scalar(b, v->text, v->quoted);
			continue;
		}
		pr_strbuf_putc(b, '{');
		for (int k = 0; k < v->n_map; k++) {
			pr_strbuf_puts(b, k ? ", " : "");
			pr_strbuf_json_string(b, v->map[k].method);
			pr_strbuf_puts(b, ": ");
			put_scalar(b, v->map[k].text, v->map[k].quoted);
		}
		pr_strbuf_putc(b, '}');
	}
	pr_strbuf_putc(b, '}');
}

static void put_pipeline(pr_strbuf *b, const pr_pipeline *pl)
{
	pr_strbuf_puts(b, "{\"name\": ");
	pr_strbuf_json_string(b, pl->name ? pl->name : "");
	pr_strbuf_puts(b, ", \"file\": ");
	pr_strbuf_json_string(b, pl->file ? pl->file : "");
	pr_strbuf_puts(b, ", \"options\": ");
	put_options(b, &pl->opts);
	pr_strbuf_puts(b, ", \"passes\": [");
	for (int i = 0; i < pl->n_passes; i++) {
		pr_strbuf_puts(b, i ? ", {\"name\": " : "{\"name\": ");
		pr_strbuf_json_string(b, pl->passes[i].name);
		pr_strbuf_puts(b, ", \"options\": ");
		put_options(b, &pl->passes[i].opts);
		pr_strbuf_putc(b, '}');
	}
	pr_strbuf_puts(b, "]}");
}

char *pr_pipeline_to_json(const pr_pipeline *pl)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	put_pipeline(&b, pl);
	return pr_strbuf_take(&b);
}

/* ---- the record ---------------------------------------------------------- */

static void put_plugins(pr_strbuf *b, const pr_registry *r)
{
	pr_strbuf_puts(b, "\"plugins\": [");
	int n = r ? pr_registry_n_plugins(r) : 0;
	for (int i = 0; i < n; i++) {
		pr_strbuf_puts(b, i ? ", {\"name\": " : "{\"name\": ");
		pr_strbuf_json_string(b, pr_registry_plugin_name(r, i));
		pr_strbuf_puts(b, ", \"version\": ");
		pr_strbuf_json_string(b, pr_registry_plugin_version(r, i));
		pr_strbuf_puts(b, ", \"file\": ");
		pr_strbuf_json_string(b, pr_registry_plugin_file(r, i));
		pr_strbuf_putc(b, '}');
	}
	pr_strbuf_putc(b, ']');
}

char *pr_provenance_json(const pr_provenance *pv)
{
	pr_strbuf b;
	pr_strbuf_init(&b);
	pr_strbuf_puts(&b, "{\"passrun\": {\"version\": ");
	pr_strbuf_json_string(&b, pr_version());
	pr_strbuf_puts(&b, ", \"git\": ");
	pr_strbuf_json_string(&b, pr_version_git());
	pr_strbuf_printf(&b, ", \"plugin_abi\": %u}, ", PR_PLUGIN_ABI_VERSION);
	put_plugins(&b, pv->registry);
	pr_strbuf_puts(&b, ", \"program\": ");
	pr_strbuf_json_string_or_null(&b, pv->program);
	pr_strbuf_puts(&b, ", \"program_fnv1a64\": ");
	pr_strbuf_json_string_or_null(&b, pv->program_hash);
	pr_strbuf_puts(&b, ", \"pipeline\": ");
	if (pv->pipeline)
		put_pipeline(&b, pv->pipeline);
	else
		pr_strbuf_puts(&b, "null");
	pr_strbuf_puts(&b, ", \"overrides\": [");
	for (int i = 0; i < pv->n_overrides; i++) {
		pr_strbuf_puts(&b, i ? ", " : "");
		pr_strbuf_json_string(&b, pv->overrides[i]);
	}
	pr_strbuf_puts(&b, "], \"seed\": ");
	if (pv->has_seed)
		pr_strbuf_printf(&b, "%llu", pv->seed);
	else
		pr_strbuf_puts(&b, "null");
	pr_strbuf_puts(&b, ", \"status\": ");
	pr_strbuf_json_string_or_null(&b, pv->status);
	pr_strbuf_printf(&b, ", \"exit\": %d}", pv->exit_status);
	return pr_strbuf_take(&b);
}
