/* Tests of the diagnostics list (core/ir/diag.c): a list that does not keep
 * messages formats only those pr_diags_print can print (the first
 * print_limit notes and warnings of each code, every error), while counts,
 * bytes and the largest stay exact; a list that keeps messages (the
 * default) has every one. "Not formatted" is shown by a %s argument that
 * points at a page nobody may read: formatting it would crash the test. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "passrun/diag.h"

/* A string no one may read: formatting it with %s faults. */
static const char *unreadable(void)
{
	static void *page;
	if (!page) {
		page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		cr_assert(page != MAP_FAILED);
	}
	return page;
}

/* Adds n warnings W-A about %t0, %t1, ... of 10, 20, ... bytes; those from
 * index `from_unreadable` on carry the unreadable string. */
static void add_warnings(pr_diags *d, int n, int from_unreadable)
{
	for (int i = 0; i < n; i++) {
		char node[16];
		snprintf(node, sizeof node, "t%d", i);
		pr_diags_add(d, PR_SEV_WARNING, "W-A", "p", "forward", node, 10 * (i + 1),
			     "warning %d: %s", i, i >= from_unreadable ? unreadable() : "text");
	}
}

static char *printed(const pr_diags *d, bool summary)
{
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);
	cr_assert(f);
	if (summary)
		pr_diags_print_summary(d, f);
	else
		pr_diags_print(d, 0, f);
	fclose(f);
	return text;
}

Test(diag, past_the_limit_without_kept_messages_is_counted_not_formatted)
{
	pr_diags d;
	pr_diags_init(&d, "t.pg");
	d.print_limit = 2;
	pr_diags_keep_messages(&d, false);
	cr_assert(pr_diags_wants_message(&d, PR_SEV_WARNING, "W-A"));
	add_warnings(&d, 5, 2);
	cr_assert_not(pr_diags_wants_message(&d, PR_SEV_WARNING, "W-A"));
	cr_assert(pr_diags_wants_message(&d, PR_SEV_WARNING, "W-B"), "another code has its own limit");
	cr_assert(pr_diags_wants_message(&d, PR_SEV_ERROR, "W-A"), "errors are always printed");
	pr_diags_add(&d, PR_SEV_ERROR, "E-X", "p", "forward", "e", -1, "error %d", 1);
	cr_assert_eq(d.n, 6);
	cr_assert_eq(pr_diags_count(&d, PR_SEV_WARNING), 5);
	cr_assert_str_eq(d.items[0].message, "warning 0: text");
	cr_assert_str_eq(d.items[1].message, "warning 1: text");
	for (int i = 2; i < 5; i++) {
		cr_assert_null(d.items[i].message, "warning %d was formatted", i);
		cr_assert_eq(d.items[i].bytes, 10 * (i + 1));
		cr_assert_str_eq(d.items[i].code, "W-A");
	}
	cr_assert_str_eq(d.items[5].message, "error 1");
	char *lines = printed(&d, false);
	cr_assert_str_eq(lines,
			 "t.pg: warning[W-A] pass 'p' method 'forward': warning 0: text\n"
			 "t.pg: warning[W-A] pass 'p' method 'forward': warning 1: text\n"
			 "t.pg: error[E-X] pass 'p' method 'forward': error 1\n");
	free(lines);
	char *summary = printed(&d, true);
	cr_assert(strstr(summary, "5 warning[W-A] in all, 2 printed") &&
		  strstr(summary, "150 bytes in all, the largest 50 (%t4, method 'forward')"),
		  "%s", summary);
	free(summary);
	pr_diags_free(&d);
}

Test(diag, kept_messages_are_all_there)
{
	pr_diags d;
	pr_diags_init(&d, "t.pg");
	d.print_limit = 2;
	cr_assert(pr_diags_wants_message(&d, PR_SEV_WARNING, "W-A"));
	add_warnings(&d, 5, 5);
	cr_assert(pr_diags_wants_message(&d, PR_SEV_WARNING, "W-A"), "the default keeps every one");
	for (int i = 0; i < 5; i++) {
		char want[32];
		snprintf(want, sizeof want, "warning %d: text", i);
		cr_assert_str_eq(d.items[i].message, want);
	}
	char *lines = printed(&d, false);
	cr_assert_str_eq(lines,
			 "t.pg: warning[W-A] pass 'p' method 'forward': warning 0: text\n"
			 "t.pg: warning[W-A] pass 'p' method 'forward': warning 1: text\n");
	free(lines);
	pr_diags_free(&d);
}

Test(diag, without_a_limit_every_message_is_formatted)
{
	pr_diags d;
	pr_diags_init(&d, "t.pg");
	pr_diags_keep_messages(&d, false);
	add_warnings(&d, 4, 4);
	for (int i = 0; i < 4; i++)
		cr_assert_not_null(d.items[i].message, "print_limit 0 prints all: %d", i);
	pr_diags_free(&d);
}
