/* passrun compare as a sweep: many programs and globs, pipeline globs, an
 * option grid, per-pipeline --set, CSV and JSON Lines, -o, -j; the provenance
 * of --stats=json and of every row; --version and --print-pipeline. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/pass.h"
#include "testutil.h"

#define EX PASSRUN_SOURCE_DIR "/examples/"
#define GRID "--grid skip_h2d_for_method_inputs=true,false --grid skip_h2d_for_constants=true,false"
#define PROGRAMS EX "f5_transposed_constant_refused.pg " EX "f6_shared_input.pg " \
	EX "f8_constant_three_delegates.pg"

static bool have_runtime(void)
{
	tu_result r = tu_run("%s --run %s/f8_copy_reuse.pg", PASSRUN_EXE,
			     PASSRUN_SOURCE_DIR "/examples");
	bool yes = !strstr(r.err, "without the runtime");
	tu_result_free(&r);
	return yes;
}

/* Runs python3 with code on the file at path; returns its exit status and
 * keeps its output in *out (freed by the caller). */
static int python(const char *code, const char *path, char **out)
{
	tu_result r = tu_run("python3 -c '%s' %s", code, path);
	*out = strdup(*r.out ? r.out : r.err);
	int st = r.status;
	tu_result_free(&r);
	return st;
}

/* Runs a passrun command that must exit 0, then python3 code on what it
 * printed (the file sys.argv[1]). */
static void check_output(const char *code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void check_output(const char *code, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	tu_result r = tu_run("%s", cmd);
	cr_assert_eq(r.status, 0, "%s: %s", cmd, r.err);
	const char *path = tu_write_temp("output.txt", r.out);
	tu_result_free(&r);
	char *out;
	int st = python(code, path, &out);
	cr_assert_eq(st, 0, "%s: %s", cmd, out);
	free(out);
}

/* 3 programs x the 10 ablations x a 2x2 grid: 120 rows, each the same as the
 * single run of that cell (sweep_rows.py runs each one). */
Test(sweep, ablations_by_a_grid_row_by_row)
{
	if (!have_runtime())
		cr_skip_test("passrun was built without the runtime");
	const char *rows = tu_write_temp("rows.jsonl", "");
	tu_result r = tu_run("%s compare --pipelines 'ablate/*' " GRID " --device=sim "
			     "--format=jsonl -o %s " PROGRAMS, PASSRUN_EXE, rows);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "", "-o: nothing on stdout");
	cr_assert_str_eq(r.err, "", "diagnostics stay in the rows: %s", r.err);
	tu_result_free(&r);
	r = tu_run("python3 %s/tests/unit/sweep_rows.py %s %s 120 --device=sim",
		   PASSRUN_SOURCE_DIR, PASSRUN_EXE, rows);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cr_assert_str_eq(r.out, "ok 120\n");
	tu_result_free(&r);
	/* The order: program, then pipeline, then grid point (last axis fastest). */
	char *out;
	int st = python("import json,sys\n"
			"r=[json.loads(l) for l in open(sys.argv[1])]\n"
			"assert r[0][\"pipeline\"]==\"ablate/no-constant-copies\", r[0]\n"
			"assert [x[\"grid\"][\"skip_h2d_for_constants\"] for x in r[:4]]=="
			"[\"true\",\"false\",\"true\",\"false\"]\n"
			"assert [x[\"grid\"][\"skip_h2d_for_method_inputs\"] for x in r[:4]]=="
			"[\"true\",\"true\",\"false\",\"false\"]\n"
			"assert r[4][\"pipeline\"]!=r[0][\"pipeline\"]\n"
			"assert r[40][\"program\"].endswith(\"f6_shared_input.pg\")\n"
			"s=[x for x in r if x[\"status\"]==\"refused\"]\n"
			"assert s and all(x[\"first_error\"] and x[\"message\"] and "
			"x[\"methods\"]=={} and not x[\"placed\"] for x in s), s[:1]\n"
			"print(len(s))\n", rows, &out);
	cr_assert_eq(st, 0, "%s", out);
	free(out);
}

/* -j 2 gives the same rows, in the same order, as -j 1. */
Test(sweep, parallel_rows_equal_sequential_rows)
{
	char *outs[2];
	for (int j = 0; j < 2; j++) {
		tu_result r = tu_run("%s compare --pipelines 'baseline,cuda,ablate/no-c*' " GRID
				     " --format=jsonl -j %d " PROGRAMS, PASSRUN_EXE, j + 1);
		cr_assert_eq(r.status, 0, "-j %d: %s", j + 1, r.err);
		outs[j] = strdup(r.out);
		tu_result_free(&r);
	}
	cr_assert_eq(tu_count(outs[0], "\n"), 3 * 5 * 4, "%s", outs[0]);
	cr_assert_str_eq(outs[0], outs[1], "-j 2 differs from -j 1");
	free(outs[0]);
	free(outs[1]);
}

/* CSV: a column per grid axis, a line per cell (and method); a cell whose
 * passes stopped has empty counts, never those of a partly placed program. */
Test(sweep, csv_rows_mark_partial_results)
{
	check_output("import csv,sys\n"
			"r=list(csv.DictReader(open(sys.argv[1])))\n"
			"assert len(r)==4, r\n"
			"x=[a for a in r if a[\"pipeline\"]==\"ablate/no-shared-inputs\" and "
			"a[\"skip_h2d_for_method_inputs\"]==\"true\"][0]\n"
			"assert x[\"status\"]==\"refused\" and x[\"exit\"]==\"1\", x\n"
			"assert x[\"first_error\"]==\"E-INPUT-SHARED\", x\n"
			"assert x[\"codes\"]==\"E-INPUT-SHARED=1\" and x[\"message\"], x\n"
			"assert x[\"h2d_copies\"]==\"\" and x[\"method\"]==\"\", x\n"
			"ok=[a for a in r if a[\"status\"]==\"ok\"]\n"
			"assert len(ok)==3 and all(a[\"h2d_copies\"].isdigit() for a in ok), ok\n"
			"assert x[\"pipeline_canonical\"]==\"no-shared-inputs+"
			"skip_h2d_for_method_inputs=true\", x\n"
			"import json; p=json.loads(x[\"provenance\"]); assert p[\"status\"]==\"refused\"\n",
			"%s compare --pipelines cuda,ablate/no-shared-inputs "
			"--grid skip_h2d_for_method_inputs=true,false --format=csv "
			EX "f6_shared_input.pg", PASSRUN_EXE);
}

/* The JSON rows count each code: W-CONSTANT-COPY three times under
 * no-copy-reuse on f8_constant_three_delegates (one copy per reader). */
Test(sweep, json_codes_are_counted)
{
	check_output("import json,sys\n"
		     "d=json.load(open(sys.argv[1]))\n"
		     "c=d[\"pipelines\"][0][\"codes\"]\n"
		     "assert c[\"W-CONSTANT-COPY\"]==3, c\n",
		     "%s compare --pipelines ablate/no-copy-reuse --format=json "
		     EX "f8_constant_three_delegates.pg", PASSRUN_EXE);
}

/* PASS.NAME=VALUE applies where the pass runs; naming a pass no pipeline
 * runs is a bad command line. */
Test(sweep, pass_options_apply_where_the_pass_runs)
{
	const char *yaml = tu_write_temp("withdce.yaml", "name: withdce\npasses:\n"
					 "  - propagate-device\n  - dce\n");
	check_output("import json,sys\n"
		     "r=[json.loads(l) for l in open(sys.argv[1])]\n"
		     "assert [x[\"status\"] for x in r]==[\"ok\",\"ok\"], r\n"
		     "assert r[0][\"provenance\"][\"overrides\"]==[]\n"
		     "assert r[1][\"provenance\"][\"overrides\"]==[\"dce.report=true\"]\n"
		     "p=r[1][\"provenance\"][\"pipeline\"][\"passes\"][1]\n"
		     "assert p==dict(name=\"dce\",options=dict(report=True)), p\n",
		     "%s compare --pipelines cuda,%s --set dce.report=true --format=jsonl "
		     EX "f8_copy_reuse.pg", PASSRUN_EXE, yaml);
	tu_result 	r = tu_run("%s compare --pipelines baseline,cuda --set dce.report=true "
		   EX "f8_copy_reuse.pg", PASSRUN_EXE);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "no pipeline of --pipelines runs pass 'dce'"), "%s", r.err);
	tu_result_free(&r);
}

Test(sweep, globs_of_programs_and_pipelines)
{
	tu_result r = tu_run("%s compare --pipelines 'ablate/no-copy*' --format=jsonl '%s'",
			     PASSRUN_EXE, EX "f8_*.pg");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(tu_count(r.out, "\n"), 4, "4 f8 examples x 1 pipeline:\n%s", r.out);
	cr_assert_eq(tu_count(r.out, "\"pipeline\": \"ablate/no-copy-reuse\""), 4, "%s", r.out);
	tu_result_free(&r);
	r = tu_run("%s compare --pipelines 'ablate/nothing*' " EX "f8_copy_reuse.pg", PASSRUN_EXE);
	cr_assert_eq(r.status, 2);
	cr_assert(strstr(r.err, "matches no pipeline"), "%s", r.err);
	tu_result_free(&r);
}

/* --time-passes and --stats=json are taken: the rows carry them. */
Test(sweep, time_passes_and_stats_in_rows)
{
	check_output("import json,sys\n"
		     "x=json.loads(open(sys.argv[1]).readline())\n"
		     "assert \"memory-plan\" in [t[\"name\"] for t in x[\"times\"]], x[\"times\"]\n"
		     "assert x[\"stats\"][\"methods\"][\"forward\"][\"h2d_copies\"]=="
		     "x[\"methods\"][\"forward\"][\"h2d_copies\"]\n"
		     "assert x[\"stats\"][\"provenance\"][\"status\"]==\"ok\"\n",
		     "%s compare --pipelines cuda --time-passes --stats=json --format=jsonl "
		     EX "f8_copy_reuse.pg", PASSRUN_EXE);
	tu_result 	r = tu_run("%s compare --pipelines baseline,cuda --time-passes " EX "f8_copy_reuse.pg",
		   PASSRUN_EXE);
	cr_assert_eq(r.status, 0, "%s", r.err);
	const char *cuda = strstr(r.err, "== cuda ==\n");
	cr_assert(cuda && strstr(cuda, "time per pass") && strstr(cuda, "memory-plan"),
		  "the table's cells time their passes on stderr: %s", r.err);
	tu_result_free(&r);
	r = tu_run("%s compare --stats=json " EX "f8_copy_reuse.pg", PASSRUN_EXE);
	cr_assert_eq(r.status, 2, "a table has no place for them: %s", r.err);
	tu_result_free(&r);
}

/* ---- provenance ------------------------------------------------------------ */

Test(provenance, version_and_plugin_abi)
{
	tu_result r = tu_run("%s --version", PASSRUN_EXE);
	cr_assert_eq(r.status, 0);
	cr_assert(!strncmp(r.out, "passrun " PASSRUN_TEST_VERSION, 8 + strlen(PASSRUN_TEST_VERSION)),
		  "%s", r.out);
	char abi[32];
	snprintf(abi, sizeof abi, "\nplugin ABI %u\n", PR_PLUGIN_ABI_VERSION);
	cr_assert(strstr(r.out, abi), "%s", r.out);
	tu_result_free(&r);
}

/* Every key of the record, the hash recomputed here (FNV-1a 64). */
Test(provenance, stats_json_records_what_ran)
{
	if (!have_runtime())
		cr_skip_test("passrun was built without the runtime");
	/* The ABI is the header's, written into the code. */
	char code[2048];
	snprintf(code, sizeof code, "import json,sys\n"
			"p=json.load(open(sys.argv[1]))[\"provenance\"]\n"
			"h=0xcbf29ce484222325\n"
			"for c in open(p[\"program\"],\"rb\").read(): "
			"h=((h^c)*0x100000001b3)%%(1<<64)\n"
			"assert p[\"program_fnv1a64\"]==\"%%016x\"%%h, p\n"
			"assert p[\"pipeline\"][\"name\"]==\"cuda+skip_h2d_for_constants=true\"\n"
			"assert p[\"pipeline\"][\"options\"][\"skip_h2d_for_constants\"] is True\n"
			"assert \"param-layout\" in [x[\"name\"] for x in p[\"pipeline\"][\"passes\"]]\n"
			"assert p[\"overrides\"]==[\"skip_h2d_for_constants=true\"]\n"
			"assert p[\"seed\"]==7 and p[\"status\"]==\"ok\" and p[\"exit\"]==0, p\n"
			"assert p[\"passrun\"][\"version\"] and p[\"passrun\"][\"plugin_abi\"]==%u\n"
			"v={x[\"name\"]:x[\"version\"] for x in p[\"plugins\"]}\n"
			"assert v[\"propagate-device\"], v\n", PR_PLUGIN_ABI_VERSION);
	check_output(code, "%s --pipeline cuda --set skip_h2d_for_constants=true --seed 7 --device=sim "
		     "--stats=json " EX "f10_device_constants.pg", PASSRUN_EXE);
}

/* A refused program: status and exit say so. */
Test(provenance, status_of_a_refused_program)
{
	tu_result r = tu_run("%s --pipeline ablate/no-shared-inputs "
			     "--set skip_h2d_for_method_inputs=true --stats=json "
			     EX "f6_shared_input.pg", PASSRUN_EXE);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert(strstr(r.out, "\"status\": \"refused\", \"exit\": 1}"), "%s", r.out);
	tu_result_free(&r);
}

/* --print-pipeline needs no program and prints YAML that reloads to the
 * same pipeline: printing the reloaded one gives the same text. */
static void check_reloads(const char *args)
{
	const char *first = tu_write_temp("printed.yaml", "");
	tu_result r = tu_run("%s %s --print-pipeline=%s", PASSRUN_EXE, args, first);
	cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
	cr_assert_str_eq(r.out, "", "%s: FILE, not stdout", args);
	tu_result_free(&r);
	char *text = tu_read_file(first, NULL);
	r = tu_run("%s --pipeline %s --print-pipeline", PASSRUN_EXE, first);
	cr_assert_eq(r.status, 0, "%s: %s", args, r.err);
	cr_assert_str_eq(r.out, text, "%s: reloaded, it prints the same", args);
	tu_result_free(&r);
	free(text);
}

Test(provenance, print_pipeline_reloads)
{
	check_reloads("--pipeline cuda --set skip_h2d_for_constants=true "
		      "--set propagate-device.share_inputs=false "
		      "--set 'skip_d2h_for_method_outputs={forward: true}'");
	check_reloads("--passes 'propagate-device{share_inputs=true,copy_constants=false},"
		      "memory-plan{alloc_graph_input=false}'");
	check_reloads("--pipeline ablate/no-copy-reuse");
	tu_result r = tu_run("%s --passes 'propagate-device{share_inputs=true}' "
			     "--set skip_h2d_for_method_inputs=true --print-pipeline", PASSRUN_EXE);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strstr(r.out, "name: inline+skip_h2d_for_method_inputs=true\n"), "%s", r.out);
	cr_assert(strstr(r.out, "  - propagate-device: {share_inputs: true}\n"), "%s", r.out);
	cr_assert_str_eq(r.err, "", "%s", r.err);
	tu_result_free(&r);
}

/* Under -j a cell runs in a process of its own: a pass that crashes makes
 * its row say so, and the other rows are whole. */
Test(sweep, a_crashing_cell_is_a_crashed_row)
{
	const char *yaml = tu_write_temp("crash.yaml", "name: crash\nplugins:\n  - "
					 PASSRUN_BINARY_DIR "/tests/plugins/prtest_crasher.so\n"
					 "passes:\n  - test-crash\n");
	check_output("import json,sys\n"
		     "r=[json.loads(l) for l in open(sys.argv[1])]\n"
		     "assert [x[\"status\"] for x in r]==[\"ok\",\"crashed\",\"ok\"], r\n"
		     "c=r[1]\n"
		     "assert c[\"exit\"]==128+11 and \"signal 11\" in c[\"message\"], c\n"
		     "assert not c[\"placed\"] and c[\"methods\"]=={}, c\n"
		     "assert r[2][\"methods\"][\"forward\"][\"h2d_copies\"]>0, r[2]\n",
		     "%s compare -j 2 --pipelines baseline,%s,cuda --format=jsonl "
		     EX "f8_copy_reuse.pg", PASSRUN_EXE, yaml);
}
