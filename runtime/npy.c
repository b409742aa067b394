/* npy.c: NumPy .npy files, read and written by hand (the format is small).
 *
 * A file is the magic "\x93NUMPY", a major and minor version, a header length
 * (2 bytes in 1.0, 4 in 2.0/3.0), then a Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
 * spaces and a newline so the data starts 64-byte aligned, then the elements
 * in C order. Only little-endian (or byte-order-free) C-order data of our
 * dtypes is accepted; anything else is an error naming the file and what was
 * found. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static const struct {
	const char *descr;
	pr_dtype t;
} npy_types[] = {
	{"<f4", PR_F32}, {"<f2", PR_F16}, {"<f8", PR_F64}, {"<i8", PR_I64}, {"<i4", PR_I32},
	{"<i2", PR_I16}, {"|i1", PR_I8}, {"|u1", PR_U8}, {"|b1", PR_BOOL}, {"<V2", PR_BF16},
};

/* The value text after 'key': in the header dict, or NULL. */
static const char *dict_value(const char *h, const char *key)
{
	char pat[32];
	snprintf(pat, sizeof pat, "'%s'", key);
	const char *p = strstr(h, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	while (*p == ' ' || *p == ':')
		p++;
	return p;
}

static pr_err *parse_header(const char *path, const char *h, pr_tensor *out)
{
	const char *d = dict_value(h, "descr"), *f = dict_value(h, "fortran_order"),
		   *s = dict_value(h, "shape");
	if (!d || !f || !s || *d != '\'' || *s != '(')
		return pr_err_new("%s: the .npy header lacks descr, fortran_order or shape", path);
	if (strncmp(f, "False", 5) != 0)
		return pr_err_new("%s: Fortran-order arrays are not supported", path);
	bool found = false;
	for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++) {
		size_t n = strlen(npy_types[i].descr);
		if (strncmp(d + 1, npy_types[i].descr, n) == 0 && d[1 + n] == '\'') {
			out->dtype = npy_types[i].t;
			found = true;
		}
	}
	if (!found)
		return pr_err_new("%s: unsupported dtype %.8s (expected <f4, <f8, <f2, <i8, <i4, <i2, "
				  "|i1, |u1 or |b1)", path, d);
	out->rank = 0;
	for (const char *p = s + 1; *p != ')';) {
		char *end;
		errno = 0;
		long long v = strtoll(p, &end, 10);
		if (end == p || errno || v < 0 || out->rank == PR_MAX_RANK)
			return pr_err_new("%s: bad shape in the .npy header", path);
		out->shape[out->rank++] = v;
		p = end;
		while (*p == ',' || *p == ' ')
			p++;
	}
	return NULL;
}

pr_err *pr_npy_read(const char *path, pr_tensor *out)
{
	memset(out, 0, sizeof *out);   /* callers free out->storage on any outcome */
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return pr_err_new("%s: %s", path, strerror(errno));
	unsigned char pre[12];
	pr_err *err = NULL;
	char *h = NULL;
	size_t hlen = 0, hdr = 0;
	if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
		err = pr_err_new("%s: not a .npy file (bad magic)", path);
	} else if (pre[6] == 1) {
		hlen = pre[8] | (size_t)pre[9] << 8;
		hdr = 10;
	} else if ((pre[6] == 2 || pre[6] == 3) && fread(pre + 10, 1, 2, fp) == 2) {
		hlen = pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
		hdr = 12;
	} else {
		err = pr_err_new("%s: unsupported .npy version %d", path, pre[6]);
	}
	if (!err && hlen > 1 << 20)
		err = pr_err_new("%s: .npy header of %zu bytes is too large", path, hlen);
	if (!err) {
		h = pr_xmalloc(hlen + 1);
		if (fread(h, 1, hlen, fp) != hlen)
			err = pr_err_new("%s: truncated .npy header", path);
		h[hlen] = 0;
	}
	if (!err)
		err = parse_header(path, h, out);
	free(h);
	int64_t numel = 1;
	for (int i = 0; !err && i < out->rank; i++) {
		if (out->shape[i] && numel > INT64_MAX / 16 / out->shape[i])
			err = pr_err_new("%s: the array is too large", path);
		numel *= out->shape[i];
	}
	if (!err) {
		size_t bytes = (size_t)numel * pr_dtype_size(out->dtype);
		uint8_t *buf = pr_xmalloc(bytes ? bytes : 1);
		if (fread(buf, 1, bytes, fp) != bytes) {
			free(buf);
			err = pr_err_new("%s: truncated data: expected %zu bytes after the %zu-byte header",
					 path, bytes, hdr + hlen);
		} else {
			*out = pr_tensor_make(out->dtype, out->rank, out->shape, buf);
		}
	}
	fclose(fp);
	return err;
}

pr_err *pr_npy_write(const char *path, const pr_tensor *t)
{
	const char *descr = NULL;
	for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++)
		if (npy_types[i].t == t->dtype)
			descr = npy_types[i].descr;
	char shape[PR_MAX_RANK * 24 + 4] = "(";
	for (int i = 0; i < t->rank; i++)
		snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%lld,%s",
			 (long long)t->shape[i], i + 1 < t->rank ? " " : "");
	if (t->rank > 1)
		shape[strlen(shape) - 1] = 0;   /* (2, 3) but (2,) */
	strcat(shape, ")");
	char h[1024];
	int n = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
			 shape);
	int total = (10 + n + 1 + 63) / 64 * 64;
	memset(h + n, ' ', (size_t)(total - 10 - n - 1));
	h[total - 10 - 1] = '\n';
	FILE *fp = fopen(path, "wb");
	if (!fp)
		return pr_err_new("%s: %s", path, strerror(errno));
	unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
	pre[8] = (unsigned char)((total - 10) & 0xff);
	pre[9] = (unsigned char)((total - 10) >> 8);
	pr_tensor c = pr_tensor_make(t->dtype, t->rank, t->shape, NULL);
	size_t bytes = (size_t)pr_tensor_numel(t) * pr_dtype_size(t->dtype);
	c.data = c.storage = pr_xmalloc(bytes ? bytes : 1);
	pr_err *err = pr_tensor_copy(&c, t);
	bool ok = !err && fwrite(pre, 1, 10, fp) == 10 && fwrite(h, 1, (size_t)total - 10, fp) ==
		  (size_t)total - 10 && fwrite(c.data, 1, bytes, fp) == bytes;
	free(c.data);
	if (fclose(fp) != 0)
		ok = false;
	if (!ok && !err)
		err = pr_err_new("%s: write failed: %s", path, strerror(errno));
	return err;
}
