/* Tests of the diagnostics list (core/ir/diag.c): a list that does not keep
 * messages stores only those pr_diags_print can print (the first
 * print_limit notes and warnings of each code, every error) and only counts
 * the rest, while counts, bytes and the largest stay exact and the printed
 * text is that of a list that keeps every one (the default). "Not
 * formatted" is shown by a %s argument that points at a page nobody may
 * read: formatting it would crash the test. */
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

/* A list for t.pg that keeps no messages, printing print_limit of each code
 * (0: all): the CLI's list when neither --stats=json nor --dot asks. */
static void init_counting(pr_diags *d, int print_limit)
{
	pr_diags_init(d, "t.pg");
	d->print_limit = print_limit;
	pr_diags_keep_messages(d, false);
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

Test(diag, past_the_limit_without_kept_messages_is_counted_not_stored)
{
	pr_diags d;
	init_counting(&d, 2);
	cr_assert(pr_diags_wants_message(&d, PR_SEV_WARNING, "W-A"));
	add_warnings(&d, 5, 2);
	cr_assert_not(pr_diags_wants_message(&d, PR_SEV_WARNING, "W-A"));
	cr_assert(pr_diags_wants_message(&d, PR_SEV_WARNING, "W-B"), "another code has its own limit");
	cr_assert(pr_diags_wants_message(&d, PR_SEV_ERROR, "W-A"), "errors are always printed");
	pr_diags_add(&d, PR_SEV_ERROR, "E-X", "p", "forward", "e", -1, "error %d", 1);
	cr_assert_eq(d.n, 3, "the three past the limit are no items");
	cr_assert_eq(pr_diags_count(&d, PR_SEV_WARNING), 5, "but they are counted");
	cr_assert_eq(pr_diags_count(&d, PR_SEV_ERROR), 1);
	cr_assert_eq(pr_diags_count(&d, PR_SEV_NOTE), 0);
	cr_assert_str_eq(d.items[0].message, "warning 0: text");
	cr_assert_str_eq(d.items[1].message, "warning 1: text");
	cr_assert_str_eq(d.items[2].message, "error 1");
	char *lines = printed(&d, false);
	cr_assert_str_eq(lines,
			 "t.pg: warning[W-A] pass 'p' method 'forward': warning 0: text\n"
			 "t.pg: warning[W-A] pass 'p' method 'forward': warning 1: text\n"
			 "t.pg: error[E-X] pass 'p' method 'forward': error 1\n");
	free(lines);
	char *summary = printed(&d, true);
	cr_assert_str_eq(summary, "t.pg: note: 5 warning[W-A] in all, 2 printed (--all-diagnostics "
			 "prints every one); 150 bytes in all, the largest 50 (%t4, method "
			 "'forward')\n");
	free(summary);
	pr_diags_free(&d);
}

/* The printed lines and summary of the same diagnostics, kept or not. */
static char *printed_both(bool keep)
{
	pr_diags d;
	pr_diags_init(&d, "t.pg");
	d.print_limit = 2;
	pr_diags_keep_messages(&d, keep);
	pr_diags_add(&d, PR_SEV_NOTE, "N-B", "q", NULL, NULL, -1, "a note");
	add_warnings(&d, 4, 4);
	for (int i = 0; i < 4; i++)   /* 70 twice: the first is the largest */
		pr_diags_add(&d, PR_SEV_NOTE, "N-B", "q", i ? "decode" : NULL, i == 2 ? NULL : "b",
			     i >= 2 ? 70 : 5, "note %d", i);
	pr_diags_add(&d, PR_SEV_WARNING, "W-C", "q", "forward", "c", -1, "no bytes");
	pr_diags_add(&d, PR_SEV_WARNING, "W-C", "q", "forward", "c", 0, "no bytes");
	pr_diags_add(&d, PR_SEV_WARNING, "W-C", "q", "forward", "c", -1, "no bytes");
	cr_assert_eq(pr_diags_count(&d, PR_SEV_NOTE), 5);
	cr_assert_eq(pr_diags_count(&d, PR_SEV_WARNING), 7);
	cr_assert_eq(d.n, keep ? 12 : 6);
	char *lines = printed(&d, false), *summary = printed(&d, true);
	char *both = malloc(strlen(lines) + strlen(summary) + 4);
	sprintf(both, "%s--\n%s", lines, summary);
	free(lines);
	free(summary);
	pr_diags_free(&d);
	return both;
}

Test(diag, counted_ones_print_as_kept_ones_do)
{
	char *kept = printed_both(true), *counted = printed_both(false);
	cr_assert_str_eq(counted, kept);
	cr_assert(strstr(kept, "note: 5 note[N-B] in all, 2 printed (--all-diagnostics prints every "
			 "one); 150 bytes in all, the largest 70 (%?, method 'decode')\n"), "%s", kept);
	cr_assert(strstr(kept, "note: 3 warning[W-C] in all, 2 printed (--all-diagnostics prints "
			 "every one)\n"), "no bytes, no largest: %s", kept);
	free(kept);
	free(counted);
}

Test(diag, errors_are_always_stored)
{
	pr_diags d;
	init_counting(&d, 1);
	for (int i = 0; i < 3; i++) {
		pr_diags_add(&d, PR_SEV_ERROR, "E-A", "p", NULL, "e", 4, "error %d", i);
		pr_diags_add(&d, PR_SEV_WARNING, "W-A", "p", NULL, "w", 4, "warning %d", i);
	}
	cr_assert_eq(d.n, 4, "three errors and the first warning");
	for (int i = 0, e = 0; i < d.n; i++)
		if (d.items[i].severity == PR_SEV_ERROR) {
			char want[24];
			snprintf(want, sizeof want, "error %d", e++);
			cr_assert_str_eq(d.items[i].message, want);
		}
	cr_assert_eq(pr_diags_errors(&d), 3);
	d.werror = true;
	cr_assert_eq(pr_diags_errors(&d), 6, "under werror the counted warnings are errors too");
	pr_diags_free(&d);
}

Test(diag, flag_last_skips_a_counted_one)
{
	pr_diags d;
	init_counting(&d, 1);
	pr_diags_add(&d, PR_SEV_WARNING, "W-A", "p", NULL, "a", 1, "first");
	pr_diags_flag_last(&d, 0x1u);
	pr_diags_add(&d, PR_SEV_WARNING, "W-A", "p", NULL, "b", 1, "second");
	pr_diags_flag_last(&d, 0x2u);   /* only counted: nothing to flag */
	cr_assert_eq(d.n, 1);
	cr_assert_eq(d.items[0].flags, 0x1u);
	pr_diags_add(&d, PR_SEV_ERROR, "E-A", "p", NULL, "c", 1, "error");
	pr_diags_flag_last(&d, 0x4u);
	cr_assert_eq(d.items[1].flags, 0x4u, "a stored one after it is flagged");
	pr_diags_free(&d);
}

/* Messages are formatted into the list's chunks: many of them cross a chunk's
 * end, and one longer than a chunk gets its own. */
Test(diag, messages_past_a_chunk_are_whole)
{
	enum { LONG = 100000, MANY = 3000 };
	char *big = malloc(LONG + 1);
	memset(big, 'x', LONG);
	big[LONG] = 0;
	pr_diags d;
	pr_diags_init(&d, "t.pg");
	for (int i = 0; i < MANY; i++)
		pr_diags_add(&d, PR_SEV_NOTE, "N-A", "p", NULL, NULL, -1, "%s %d %s",
			     i == MANY / 2 ? big : "note", i, "with some words after it");
	for (int i = 0; i < MANY; i++) {
		char want[64];
		if (i == MANY / 2) {
			cr_assert_eq(strlen(d.items[i].message), LONG + 30);
			cr_assert(!strncmp(d.items[i].message, big, LONG));
			continue;
		}
		snprintf(want, sizeof want, "note %d with some words after it", i);
		cr_assert_str_eq(d.items[i].message, want);
	}
	pr_diags_free(&d);
	free(big);
}

Test(diag, kept_messages_are_all_there)
{
	pr_diags d;
	pr_diags_init(&d, "t.pg");
	d.print_limit = 2;
	cr_assert(pr_diags_wants_message(&d, PR_SEV_WARNING, "W-A"));
	add_warnings(&d, 5, 5);
	cr_assert(pr_diags_wants_message(&d, PR_SEV_WARNING, "W-A"), "the default keeps every one");
	cr_assert_eq(d.n, 5);
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
	init_counting(&d, 0);
	add_warnings(&d, 4, 4);
	for (int i = 0; i < 4; i++)
		cr_assert_not_null(d.items[i].message, "print_limit 0 prints all: %d", i);
	pr_diags_free(&d);
}

/* A broken reporter's severity is no index into anything: it is stored and
 * printed as an error is. */
Test(diag, a_severity_of_no_name_is_always_stored)
{
	pr_diags d;
	init_counting(&d, 1);
	for (int i = 0; i < 3; i++)
		pr_diags_add(&d, (pr_severity)7, "X-A", "p", NULL, NULL, -1, "odd %d", i);
	cr_assert_eq(d.n, 3);
	cr_assert_eq(pr_diags_count(&d, (pr_severity)7), 3);
	cr_assert_eq(pr_diags_count(&d, PR_SEV_WARNING), 0);
	char *lines = printed(&d, false), *summary = printed(&d, true);
	cr_assert(strstr(lines, "t.pg: ?[X-A] pass 'p' method '': odd 2\n"), "%s", lines);
	cr_assert_str_eq(summary, "");
	free(lines);
	free(summary);
	pr_diags_free(&d);
}
