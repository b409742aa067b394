/* layout_probe: the size and field offsets of every C struct the Python
 * package mirrors with ctypes (python/passrun/_lib.py), as the C compiler
 * lays them out. test_layout.py compares them with ctypes' layout, so that a
 * header change the mirror does not follow fails a test instead of a user's
 * session. One line each: "STRUCT FIELD OFFSET", then "STRUCT sizeof SIZE". */
#include <stddef.h>
#include <stdio.h>

#include "passrun/manager.h"
#include "passrun/runtime.h"

/* pr_node's and pr_arg's named unions, named here so that they are laid
 * out like a struct. */
typedef __typeof__(((pr_node *)0)->of_kind) pr_node_of_kind;
typedef __typeof__(((pr_arg *)0)->u) pr_arg_value;

#define F(T, f) printf("%s %s %zu\n", #T, #f, offsetof(T, f));
#define S(T, ...) do { __VA_ARGS__ printf("%s sizeof %zu\n", #T, sizeof(T)); } while (0)

int main(void)
{
	S(pr_device, F(pr_device, type) F(pr_device, index));
	S(pr_spec, F(pr_spec, dtype) F(pr_spec, rank) F(pr_spec, has_mem) F(pr_spec, shape)
	  F(pr_spec, device_id) F(pr_spec, mem_arena_id) F(pr_spec, mem_offset));
	S(pr_type, F(pr_type, kind) F(pr_type, n_elems) F(pr_type, tensor) F(pr_type, elems));
	S(pr_alias, F(pr_alias, set) F(pr_alias, write));
	S(pr_schema_arg, F(pr_schema_arg, type) F(pr_schema_arg, name) F(pr_schema_arg, default_value)
	  F(pr_schema_arg, alias) F(pr_schema_arg, kwarg_only) F(pr_schema_arg, is_tensor));
	S(pr_schema, F(pr_schema, name) F(pr_schema, overload) F(pr_schema, full_name)
	  F(pr_schema, n_args) F(pr_schema, args) F(pr_schema, n_returns) F(pr_schema, returns)
	  F(pr_schema, returns_tuple) F(pr_schema, shape_only) F(pr_schema, h2d) F(pr_schema, d2h)
	  F(pr_schema, n_traits) F(pr_schema, traits) F(pr_schema, text));
	S(pr_arg, F(pr_arg, kind) F(pr_arg, use_index) F(pr_arg, n_items) F(pr_arg, u)
	  F(pr_arg, owner));
	S(pr_arg_value, F(pr_arg_value, value) F(pr_arg_value, i) F(pr_arg_value, f)
	  F(pr_arg_value, b) F(pr_arg_value, s) F(pr_arg_value, items));
	S(pr_use, F(pr_use, arg));
	S(pr_data, F(pr_data, kind) F(pr_data, fill) F(pr_data, seed) F(pr_data, n_values)
	  F(pr_data, values) F(pr_data, blob) F(pr_data, mapped) F(pr_data, mapped_size));
	S(pr_input, F(pr_input, kind) F(pr_input, name) F(pr_input, data));
	S(pr_writeback, F(pr_writeback, kind) F(pr_writeback, target));
	S(pr_kv, F(pr_kv, key) F(pr_kv, value));
	S(pr_delegate, F(pr_delegate, name) F(pr_delegate, n_specs) F(pr_delegate, specs)
	  F(pr_delegate, body) F(pr_delegate, device_known) F(pr_delegate, device));
	S(pr_node, F(pr_node, kind) F(pr_node, mem) F(pr_node, uses_room) F(pr_node, name) F(pr_node, graph)
	  F(pr_node, prev) F(pr_node, next) F(pr_node, order) F(pr_node, n_args) F(pr_node, line)
	  F(pr_node, n_uses) F(pr_node, args) F(pr_node, uses)
	  F(pr_node, type) F(pr_node, of_kind) F(pr_node, scratch));
	S(pr_node_of_kind, F(pr_node_of_kind, index) F(pr_node_of_kind, input) F(pr_node_of_kind, schema)
	  F(pr_node_of_kind, delegate) F(pr_node_of_kind, writebacks));
	S(pr_graph, F(pr_graph, name) F(pr_graph, first) F(pr_graph, last) F(pr_graph, n_nodes)
	  F(pr_graph, store) F(pr_graph, delegate) F(pr_graph, program) F(pr_graph, order_stale));
	S(pr_program, F(pr_program, n_schemas) F(pr_program, cap_schemas) F(pr_program, schemas)
	  F(pr_program, blobs) F(pr_program, n_delegates) F(pr_program, cap_delegates)
	  F(pr_program, delegates) F(pr_program, n_methods) F(pr_program, cap_methods)
	  F(pr_program, methods) F(pr_program, mapping) F(pr_program, mapping_size)
	  F(pr_program, index));
	S(pr_diag, F(pr_diag, severity) F(pr_diag, code) F(pr_diag, pass) F(pr_diag, method)
	  F(pr_diag, node) F(pr_diag, bytes) F(pr_diag, message) F(pr_diag, flags));
	S(pr_diags, F(pr_diags, n) F(pr_diags, cap) F(pr_diags, items) F(pr_diags, file)
	  F(pr_diags, werror) F(pr_diags, print_limit) F(pr_diags, tally)
	  F(pr_diags, strings));
	S(pr_pass_record, F(pr_pass_record, name) F(pr_pass_record, ms) F(pr_pass_record, changed)
	  F(pr_pass_record, is_pass));
	S(pr_pass_report, F(pr_pass_report, n) F(pr_pass_report, cap) F(pr_pass_report, items));
	S(pr_instrument_opts, F(pr_instrument_opts, print_after_all) F(pr_instrument_opts, print_after)
	  F(pr_instrument_opts, n_print_after) F(pr_instrument_opts, verify_each)
	  F(pr_instrument_opts, print_out) F(pr_instrument_opts, diag_out)
	  F(pr_instrument_opts, print_before) F(pr_instrument_opts, n_print_before)
	  F(pr_instrument_opts, print_changed) F(pr_instrument_opts, verify_after)
	  F(pr_instrument_opts, crash_reproducer) F(pr_instrument_opts, hook));
	S(pr_plugin_search, F(pr_plugin_search, files) F(pr_plugin_search, n_files)
	  F(pr_plugin_search, dirs) F(pr_plugin_search, n_dirs) F(pr_plugin_search, env_path)
	  F(pr_plugin_search, no_default));
	S(prt_run_input, F(prt_run_input, name) F(prt_run_input, path));
	S(prt_run_options, F(prt_run_options, method) F(prt_run_options, iterations)
	  F(prt_run_options, device) F(prt_run_options, check) F(prt_run_options, seed)
	  F(prt_run_options, n_inputs) F(prt_run_options, inputs) F(prt_run_options, output_dir)
	  F(prt_run_options, atol) F(prt_run_options, rtol));
	S(prt_run_report, F(prt_run_report, device) F(prt_run_report, method) F(prt_run_report, iterations)
	  F(prt_run_report, checked) F(prt_run_report, match) F(prt_run_report, max_abs_err)
	  F(prt_run_report, max_rel_err) F(prt_run_report, h2d_bytes_per_call)
	  F(prt_run_report, d2h_bytes_per_call) F(prt_run_report, load_h2d_bytes)
	  F(prt_run_report, ms_per_call) F(prt_run_report, exit_status) F(prt_run_report, mismatch));
	return 0;
}
