/* program.c: the program model: dtypes, specs, graphs, nodes, use
 * lists and the editing operations passes need.
 *
 * Graph order is kept as a number per node (node->order) with wide gaps, so
 * "does A run before B" is one comparison. An insertion takes the middle of
 * its neighbours' gap; when a gap is used up the graph is marked stale and
 * renumbered on the next query, which keeps edits O(1) amortized.
 *
 * Use lists: every argument slot that names a value is registered with that
 * value (pr_use: the slot, whose owner is the reader). Everything that changes a slot goes
 * through pr_node_set_args / pr_arg_set_value so the lists never disagree
 * with the arguments. */
#include "passrun/program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <uthash.h>

#define ORDER_GAP ((uint64_t)1 << 32)

/* For the few small helpers on every node's path (naming, use lists) whose
 * calls cost more in register saves than their bodies: the compiler's
 * choice moves with its callers' size. */
#define HOT_INLINE static inline __attribute__((always_inline))

typedef struct named {
	const char *name;
	void *item;
	UT_hash_handle hh;
} named;


/* ---- dtypes ------------------------------------------------------------ */

static const struct {
	const char *name;
	size_t size;
	bool is_float;
} dtype_info[PR_DTYPE_COUNT] = {
	[PR_F32] = {"f32", 4, true},  [PR_F16] = {"f16", 2, true},
	[PR_BF16] = {"bf16", 2, true}, [PR_F64] = {"f64", 8, true},
	[PR_I64] = {"i64", 8, false}, [PR_I32] = {"i32", 4, false},
	[PR_I16] = {"i16", 2, false}, [PR_I8] = {"i8", 1, false},
	[PR_U8] = {"u8", 1, false},   [PR_BOOL] = {"bool", 1, false},
};

const char *pr_dtype_name(pr_dtype t)
{
	return (unsigned)t < PR_DTYPE_COUNT ? dtype_info[t].name : "?";
}

bool pr_dtype_parse(const char *s, size_t n, pr_dtype *out)
{
	for (int t = 0; t < PR_DTYPE_COUNT; t++) {
		if (strlen(dtype_info[t].name) == n && !memcmp(dtype_info[t].name, s, n)) {
			*out = (pr_dtype)t;
			return true;
		}
	}
	return false;
}

size_t pr_dtype_size(pr_dtype t)
{
	return (unsigned)t < PR_DTYPE_COUNT ? dtype_info[t].size : 0;
}

bool pr_dtype_is_float(pr_dtype t)
{
	return (unsigned)t < PR_DTYPE_COUNT && dtype_info[t].is_float;
}

/* ---- specs ------------------------------------------------------------- */

void pr_spec_init(pr_spec *s, pr_dtype t, int rank, const int64_t *shape)
{
	memset(s, 0, sizeof *s);
	s->dtype = t;
	pr_spec_set_layout(s, rank, shape, NULL);
}

void pr_spec_set_contiguous(pr_spec *s)
{
	pr_spec_set_layout(s, s->rank, s->shape, NULL);
}

void pr_spec_set_strides(pr_spec *s, const int64_t *strides)
{
	pr_spec_set_layout(s, s->rank, s->shape, strides);
}

void pr_spec_set_layout(pr_spec *s, int rank, const int64_t *shape, const int64_t *strides)
{
	PR_ASSERT(rank >= 0 && rank <= PR_MAX_RANK);
	int64_t contiguous[PR_MAX_RANK];
	if (!strides) {
		int64_t stride = 1;
		for (int i = rank - 1; i >= 0; i--) {
			contiguous[i] = stride;
			stride *= shape[i] > 1 ? shape[i] : 1;
		}
		strides = contiguous;
	}
	const int64_t *dims = pr_layout_intern(rank, shape, strides);
	s->rank = rank;
	s->shape = dims;
}

int64_t pr_layout_numel(int rank, const int64_t *shape)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= shape[i];
	return n;
}

/* Contiguity ignores the stride of a dimension of size 1, as PyTorch does. */
bool pr_layout_is_contiguous(int rank, const int64_t *shape, const int64_t *strides)
{
	if (pr_layout_numel(rank, shape) == 0)
		return true;   /* no element to be out of place (as PyTorch says) */
	int64_t expected = 1;
	for (int i = rank - 1; i >= 0; i--) {
		if (shape[i] != 1 && strides[i] != expected)
			return false;
		expected *= shape[i];
	}
	return true;
}

bool pr_spec_is_contiguous(const pr_spec *s)
{
	return pr_layout_is_contiguous(s->rank, s->shape, pr_spec_strides(s));
}

bool pr_spec_stored_as_is(const pr_spec *s)
{
	return pr_spec_is_contiguous(s) || pr_spec_is_channels_last(s);
}

bool pr_spec_is_channels_last(const pr_spec *s)
{
	if (s->rank != 4)
		return false;
	/* NCHW shape with NHWC storage: C fastest, then W, then H, then N. */
	static const int order[4] = {1, 3, 2, 0};
	int64_t expected = 1;
	for (int k = 0; k < 4; k++) {
		int i = order[k];
		if (s->shape[i] == 0)
			return true;
		if (s->shape[i] != 1 && pr_spec_strides(s)[i] != expected)
			return false;
		expected *= s->shape[i];
	}
	return true;
}

int64_t pr_spec_numel(const pr_spec *s)
{
	return pr_layout_numel(s->rank, s->shape);
}

int64_t pr_spec_nbytes(const pr_spec *s)
{
	return pr_spec_numel(s) * (int64_t)pr_dtype_size(s->dtype);
}

int64_t pr_spec_storage_bytes(const pr_spec *s)
{
	if (pr_spec_numel(s) == 0)
		return 0;
	int64_t max_offset = 0;
	const int64_t *strides = pr_spec_strides(s);
	for (int i = 0; i < s->rank; i++)
		max_offset += (s->shape[i] - 1) * (strides[i] > 0 ? strides[i] : 0);
	return (max_offset + 1) * (int64_t)pr_dtype_size(s->dtype);
}

bool pr_spec_same_layout(const pr_spec *a, const pr_spec *b)
{
	if (a->dtype != b->dtype || a->rank != b->rank)
		return false;
	if (a->shape == b->shape)
		return true;   /* interned: one copy per layout, strides included */
	/* The shape then the strides, 2 * rank numbers in each. */
	for (int i = 0; i < 2 * a->rank; i++)
		if (a->shape[i] != b->shape[i])
			return false;
	return true;
}

bool pr_spec_equal(const pr_spec *a, const pr_spec *b)
{
	if (!pr_spec_same_layout(a, b) || a->device_id != b->device_id)
		return false;
	if (a->has_mem != b->has_mem)
		return false;
	return !a->has_mem || (a->mem_arena_id == b->mem_arena_id && a->mem_offset == b->mem_offset);
}

/* ---- storage: arenas, poisoning, the string table ------------------------ */

/* Under ASan, storage handed back to a free list is poisoned, so that a
 * pass reading an erased node still fails as it would after free(). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PR_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PR_ASAN 1
#endif
#ifdef PR_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Blocks of BIG_BLOCK bytes or more (node slabs, arena chunks and hash
 * tables of big programs) are mappings of their own, in whole BIG_BLOCKs, so
 * that freeing one gives it back to the system, not to the heap the CLI
 * keeps. They are not marked for transparent huge pages: with
 * defrag=madvise (the kernel's default) a huge-page fault may compact
 * memory on the spot, and at a million nodes that cost more system time
 * than the fewer faults saved (10^6 .bin, cuda pipeline, 6 runs each in
 * the same quarter hour: median wall 3.10 -> 2.12 s, user + system 2.94 ->
 * 2.04 s). Marking only the loader's one big block (168 MB at 10^6) was no
 * steadier: its load took 233 ms in one set of runs and 778 ms in another
 * a few minutes later, against 283-313 ms unmarked. A block its caller
 * writes whole (the loader's node block, a hash table) is faulted in when
 * it is mapped (MAP_POPULATE): one call instead of a fault per page, which
 * on this kind of virtual machine costs 3-4 us each (10^6 .bin, 5 runs
 * each, idle: load 250-257 -> 216-224 ms, peak RSS +1.7 MB). Blocks that
 * grow into use (arena chunks, the node chunks passes fill) are faulted in a
 * batch at a time as they fill (pages_ready), not whole: their unused tails
 * would be resident for nothing. Under ASan they come from
 * calloc, so that the sanitizer keeps seeing them. */
#define BIG_BLOCK ((size_t)2 << 20)

/* The bytes a block of size bytes really spans: a big one fills its last
 * BIG_BLOCK, so a caller may use the rest. */
static size_t big_size(size_t size)
{
	return size < BIG_BLOCK ? size : (size + BIG_BLOCK - 1) & ~(BIG_BLOCK - 1);
}

#ifdef PR_ASAN
#define BIG_BLOCKS_MAPPED 0
#else
#define BIG_BLOCKS_MAPPED 1
#endif

/* Is a block of size bytes a mapping of its own (big_alloc)? */
static inline bool big_mapped(size_t size)
{
	return BIG_BLOCKS_MAPPED && size >= BIG_BLOCK;
}

/* len bytes (a multiple of BIG_BLOCK), zeroed; filled: faulted in now. */
static void *big_map(size_t len, bool filled)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (filled ? MAP_POPULATE : 0), -1, 0);
	if (m == MAP_FAILED)
		pr_assert_fail("out of memory", __FILE__, __LINE__);
	return m;
}

/* size zeroed bytes; freed with big_free(p, size). filled: the caller
 * will write all of it. */
static void *big_alloc(size_t size, bool filled)
{
	if (big_mapped(size))
		return big_map(big_size(size), filled);
	return pr_xcalloc(1, size);
}

static void big_free(void *p, size_t size)
{
	if (big_mapped(size)) {
		if (p)
			munmap(p, big_size(size));
		return;
	}
	free(p);
}

/* Faults in bytes [from, need) of a mapped block that grows into use, and
 * a batch more (up to cap), in one call: a fault per page costs 3-4 us on
 * this kind of virtual machine (big_map). A batch, not the block, so that
 * its unused tail stays out of memory. Returns how far the block is faulted
 * in now (a hint: pr_pages_fill, error.h). */
#define READY_BATCH ((size_t)256 << 10)
static size_t pages_ready(void *block, size_t from, size_t need, size_t cap)
{
	size_t to = need > from ? need : from;
	to = cap - to < READY_BATCH ? cap : to + READY_BATCH;
	pr_pages_fill((char *)block + from, to - from);
	return to;
}

typedef struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	size_t ready;         /* bytes faulted in: all but in a mapped chunk that
			       * grows into use (see pages_ready) */
	max_align_t data[];
} arena_chunk;

/* Bump allocation from chunks whose blocks double up to ARENA_MAX_CHUNK
 * bytes; nothing is freed before the whole arena, and no byte is handed out
 * twice (what is given back goes to free lists of its own), so what
 * arena_alloc returns is zero, as big_alloc left it. */
typedef struct arena {
	arena_chunk *head;
	size_t next_block;
} arena;

#define ARENA_MIN_CHUNK ((size_t)16 << 10)
#define ARENA_MAX_CHUNK ((size_t)4 << 20)

/* A new chunk for what the head had no room for. */
static void *arena_alloc_chunk(arena *a, size_t size)
{
	arena_chunk *c = a->head;
	size_t block = a->next_block ? a->next_block : ARENA_MIN_CHUNK;
	if (block < ARENA_MAX_CHUNK)
		a->next_block = block * 2;
	size_t cap = block - sizeof *c;   /* blocks of a power of two fill their pages */
	bool alone = size > cap / 2 && c;   /* keep the head's room for small ones */
	if (cap < size)
		cap = big_size(sizeof *c + size) - sizeof *c;
	arena_chunk *n = big_alloc(sizeof *n + cap, false);
	n->used = size;
	n->cap = cap;
	n->ready = alone || !big_mapped(sizeof *n + cap) ? cap : pages_ready(n->data, 0, size, cap);
	if (alone) {
		n->next = c->next;
		c->next = n;
	} else {
		n->next = c;
		a->head = n;
	}
	return n->data;
}

/* What the head's faulted-in bytes had no room for: its next bytes faulted
 * in when the rest of it has room, else a new chunk. */
static __attribute__((noinline)) void *arena_alloc_more(arena *a, size_t size, size_t align)
{
	arena_chunk *c = a->head;
	size_t at = c ? (c->used + align - 1) & ~(align - 1) : 0;
	if (!c || at > c->cap || size > c->cap - at)
		return arena_alloc_chunk(a, size);
	c->ready = pages_ready(c->data, c->ready, at + size, c->cap);
	c->used = at + size;
	return (char *)c->data + at;
}

/* Inline: the bump is a few instructions, and every node name, use block,
 * argument array and input record comes from here. */
static inline void *arena_alloc(arena *a, size_t size, size_t align)
{
	arena_chunk *c = a->head;
	if (c) {
		size_t at = (c->used + align - 1) & ~(align - 1);
		if (at <= c->ready && size <= c->ready - at) {
			c->used = at + size;
			return (char *)c->data + at;
		}
	}
	return arena_alloc_more(a, size, align);
}

static void arena_free(arena *a)
{
	for (arena_chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		UNPOISON(c->data, c->cap);
		big_free(c, sizeof *c + c->cap);
	}
	a->head = NULL;
}

/* The r = n - i (under 8) bytes at s + i as the word one memcpy of them
 * into a zeroed word gives. On a little-endian host it is put together in a
 * register (past a whole word, from the string's last 8 bytes, one load and
 * a shift): a word written in memory piece by piece and read back is a store
 * that cannot forward, a stall on every short name. */
static inline uint64_t str_tail_word(const char *s, size_t n, size_t i)
{
	size_t r = n - i;
	uint64_t w = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (r && i) {
		memcpy(&w, s + n - 8, 8);
		return w >> (64 - 8 * r);
	}
	const char *t = s + i;
	if (r & 4) {
		uint32_t x;
		memcpy(&x, t, 4);
		w = x;
	}
	if (r & 2) {
		uint16_t x;
		memcpy(&x, t + (r & 4), 2);
		w |= (uint64_t)x << (8 * (r & 4));
	}
	if (r & 1)
		w |= (uint64_t)(unsigned char)t[r & 6] << (8 * (r & 6));
#else
	unsigned char *wb = (unsigned char *)&w;
	if (r & 4)
		memcpy(wb, s + i, 4);
	if (r & 2)
		memcpy(wb + (r & 4), s + i + (r & 4), 2);
	if (r & 1)
		memcpy(wb + (r & 6), s + i + (r & 6), 1);
#endif
	return w;
}

/* 32 bits of a multiply-xorshift hash over 8-byte words. */
uint32_t pr_str_hash(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	h = (h ^ str_tail_word(s, n, i)) * 0x94d049bb133111ebull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

/* Every interned string is preceded by its hash and its binding: the
 * linked node that has it as its name in one graph of the program (NULL:
 * none). A name bound in a second graph of the program as well (a delegate
 * body's %x and a method's) goes in that graph's own overflow table, so
 * finding a node by name is one string-table probe and, nearly always, no
 * second table. Packed, 12 bytes, and strings 4-aligned, not 8: at a million
 * nodes and their copies' two million names that is 12 MB. Its length is
 * where its NUL is: an interned string holds no other (program.h). */
typedef struct __attribute__((packed, aligned(4))) str_head {
	uint32_t hash;
	pr_node *bound;
} str_head;

_Static_assert(sizeof(str_head) == 4 + sizeof(void *), "str_head packs");

static str_head *str_head_of(const char *s)
{
	return (str_head *)(void *)(s - sizeof(str_head));
}

/* A slot of an open-addressing table with linear probing: a graph's
 * overflow table's (key: the node) and the mutable buffers' two (key: the
 * node, and the name); the string table packs its slots tighter (sslot). */
typedef struct hslot {
	void *key;            /* NULL: empty */
	uint32_t hash;
} hslot;

/* Doubles a table (or makes one of `first` slots), placing every entry by
 * its stored hash. */
static void hslots_grow(hslot **slots, uint32_t *mask, uint32_t first)
{
	hslot *old = *slots;
	uint32_t cap = old ? 2 * (*mask + 1) : first;
	hslot *fresh = big_alloc(cap * sizeof *fresh, true);
	for (uint32_t i = 0; old && i <= *mask; i++) {
		if (!old[i].key)
			continue;
		uint32_t j = old[i].hash & (cap - 1);
		while (fresh[j].key)
			j = (j + 1) & (cap - 1);
		fresh[j] = old[i];
	}
	if (old)
		big_free(old, (*mask + 1) * sizeof *old);
	*slots = fresh;
	*mask = cap - 1;
}

static void hslots_free(hslot *slots, uint32_t mask)
{
	if (slots)
		big_free(slots, (mask + 1) * sizeof *slots);
}

/* Grows a table until n entries fit under its 3/4 load bound. */
static void hslots_fit(hslot **slots, uint32_t *mask, uint32_t first, size_t n)
{
	while (!*slots || n > (size_t)(*mask + 1) / 4 * 3)
		hslots_grow(slots, mask, first);
}

#define STRINGS_FIRST 256
#define NAMES_FIRST 64

/* A string-table slot, 8 bytes, half an hslot: the string's address in the
 * low SSLOT_ADDR_BITS bits (user-space addresses of the 64-bit hosts we run
 * on fit in 47) and the low 16 bits of its hash above them, so that a probe
 * passes over another string without reading it (the slot a string starts
 * from is set by its hash's top bits, see strtab_home, so the two are
 * independent). At a million names the
 * table is 16 MB instead of 32: fewer pages to clear, fewer lines to miss.
 * 0: empty. */
typedef uint64_t sslot;

#define SSLOT_ADDR_BITS 48
#define SSLOT_ADDR_MASK (((uint64_t)1 << SSLOT_ADDR_BITS) - 1)

static inline const char *sslot_str(sslot e)
{
	return (const char *)(uintptr_t)(e & SSLOT_ADDR_MASK);
}

static inline uint64_t sslot_tag(uint32_t h)
{
	return (uint64_t)(h & 0xffff) << SSLOT_ADDR_BITS;
}

/* The capacity is any number of slots, not a power of two, so that a table
 * sized for the names a loader reserves, or grown for twice the names it
 * has, is that big: at a million nodes plus the copies placement names, a
 * power of two would be 4 M slots (32 MB) where 2.7 M hold them. */
typedef struct strtab {
	sslot *slots;
	uint32_t cap, n;      /* slots (0 when none), strings */
	uint32_t room;        /* strtab_room(cap), kept: every intern asks */
	arena mem;
} strtab;

/* Where a string of hash h starts probing: h scaled to [0, cap), a multiply
 * and a shift where a modulo would divide. */
static inline uint32_t strtab_home(uint32_t cap, uint32_t h)
{
	return (uint32_t)(((uint64_t)h * cap) >> 32);
}

static inline uint32_t strtab_next(uint32_t cap, uint32_t i)
{
	return i + 1 == cap ? 0 : i + 1;
}

/* The slot of s (n bytes, hash h) in t, or the empty slot where it would
 * go; t has slots. An interned s is known by its address. Inlined, as
 * strtab_put is: every node a loader or a pass names comes through both,
 * and as calls their register saves were a third of them. */
HOT_INLINE sslot *strtab_probe(const strtab *t, const char *s, size_t n, uint32_t h)
{
	uint64_t tag = sslot_tag(h);
	for (uint32_t i = strtab_home(t->cap, h);; i = strtab_next(t->cap, i)) {
		sslot *e = &t->slots[i];
		if (!*e)
			return e;
		if ((*e & ~SSLOT_ADDR_MASK) != tag)
			continue;
		const char *old = sslot_str(*e);
		/* strncmp stops at old's NUL, which s (no NUL in its n
		 * bytes) does not match: nothing past old is read */
		if (str_head_of(old)->hash == h && (old == s || !strncmp(old, s, n)) && !old[n])
			return e;
	}
}

/* Puts a copy of s into the empty slot e that strtab_probe found. */
HOT_INLINE const char *strtab_put(strtab *t, sslot *e, const char *s, size_t n, uint32_t h)
{
	PR_ASSERT(n < UINT32_MAX && !*e);
	str_head *head = arena_alloc(&t->mem, sizeof *head + n + 1, _Alignof(str_head));
	head->hash = h;
	head->bound = NULL;
	char *copy = (char *)(head + 1);
	memcpy(copy, s, n);
	copy[n] = 0;
	PR_ASSERT(((uintptr_t)copy & ~(uintptr_t)SSLOT_ADDR_MASK) == 0);
	*e = (uintptr_t)copy | sslot_tag(h);
	t->n++;
	return copy;
}

/* The string in slot e (strtab_probe's for s), put there first when empty. */
HOT_INLINE const char *strtab_take(strtab *t, sslot *e, const char *s, size_t n, uint32_t h)
{
	return *e ? sslot_str(*e) : strtab_put(t, e, s, n, h);
}

/* The 3/4 load bound: the strings a table of cap slots takes. */
static inline size_t strtab_room(size_t cap)
{
	return cap / 4 * 3;
}

/* Moves t into a table of cap slots, placing every string by the hash in
 * its header, which is read a few strings ahead. */
static void strtab_grow(strtab *t, uint32_t cap)
{
	sslot *old = t->slots;
	uint32_t old_cap = t->cap;
	sslot *fresh = big_alloc(cap * sizeof *fresh, true);
	for (uint32_t i = 0; t->n && i < old_cap; i++) {
		if (i + 8 < old_cap && old[i + 8])
			__builtin_prefetch(str_head_of(sslot_str(old[i + 8])));
		if (!old[i])
			continue;
		uint32_t j = strtab_home(cap, str_head_of(sslot_str(old[i]))->hash);
		while (fresh[j])
			j = strtab_next(cap, j);
		fresh[j] = old[i];
	}
	if (old)
		big_free(old, old_cap * sizeof *old);
	t->slots = fresh;
	t->cap = cap;
	t->room = (uint32_t)strtab_room(cap);
}

/* Room for more strings under the load bound, so that a probe's empty slot
 * can take one: at once, sized for what is reserved, so that a loader's
 * reservation of a million names moves the strings once and gets the
 * slots they need, not the next power of two. One at a time, the table
 * grows for twice the strings it has (twice its slots: amortized O(1)). */
static __attribute__((noinline)) void strtab_fit_grow(strtab *t, size_t more)
{
	size_t want = t->n + more > 2 * (size_t)t->n ? t->n + more : 2 * (size_t)t->n;
	size_t cap = want / 3 * 4 + 4;   /* strtab_room(cap) >= want */
	if (cap < STRINGS_FIRST)
		cap = STRINGS_FIRST;
	PR_ASSERT(cap <= (size_t)UINT32_MAX && strtab_room(cap) >= t->n + more);
	strtab_grow(t, (uint32_t)cap);
}

/* Inline: every intern asks. */
static inline void strtab_fit(strtab *t, size_t more)
{
	if (!t->slots || t->n + more > t->room)
		strtab_fit_grow(t, more);
}

/* s's copy in t, h being pr_str_hash(s, n). */
static const char *strtab_intern_hashed(strtab *t, const char *s, size_t n, uint32_t h)
{
	strtab_fit(t, 1);
	return strtab_take(t, strtab_probe(t, s, n, h), s, n, h);
}

static const char *strtab_intern(strtab *t, const char *s, size_t n)
{
	return strtab_intern_hashed(t, s, n, pr_str_hash(s, n));
}

static void strtab_free(strtab *t)
{
	if (t->slots)
		big_free(t->slots, t->cap * sizeof *t->slots);
	arena_free(&t->mem);
}

/* ---- graph storage ---------------------------------------------------------- */

/* node->mem bits. */
enum {
	NODE_HEAP = 1,        /* made by pr_node_new: its own malloc, name after it */
	NODE_LINKED = 2,      /* in its graph's list and name index */
	NODE_FREE = 4,        /* a slab slot on the free list */
	NODE_ARGS_GRAPH = 8,  /* args (items, strings) are the graph's storage */
	NODE_USES_HEAP = 16,  /* uses is malloc'd, not a pool block */
	NODE_NAME_LOCAL = 32, /* name is not interned yet (a detached pr_node_new) */
	NODE_NAME_HEAP = 64,  /* ... and malloc'd (renamed while detached) */
	NODE_INPUT_HEAP = 128,/* input is malloc'd (pr_node_make_input on a detached node) */
	/* A node's other parts that are graph or program storage, not owned
	 * (program.h: pr_node_set_input_name and the others); clear: owned. */
	NODE_INPUT_NAME_GRAPH = 256,
	NODE_VALUES_GRAPH = 512,
	NODE_ELEMS_GRAPH = 1024,
	NODE_WRITEBACKS_GRAPH = 2048,   /* the array and its targets */
};

/* The bits above fit pr_node.mem, which sits with kind, uses_room and
 * line in the word before name, so that a node stays 128 bytes (program.h)
 * and name stays where free slots keep it. */
_Static_assert(sizeof(((pr_node *)0)->mem) * 8 >= 12, "pr_node.mem holds every NODE_ bit");
_Static_assert(offsetof(pr_node, name) == sizeof(void *), "pr_node.mem pads nothing");
_Static_assert(sizeof(void *) != 8 || sizeof(pr_arg) == 24, "an argument is 24 bytes");

/* A chunk's slots start on a cache line (node_chunk_add asks for a block
 * that does), so that a 128-byte node never straddles a third line. */
#define NODE_LINE 64

typedef struct node_chunk {
	struct node_chunk *next;
	size_t used, cap;
	size_t ready;         /* slots faulted in: all but in a mapped chunk
			       * that grows into use (node_chunk_ready) */
	_Alignas(NODE_LINE) pr_node nodes[];
} node_chunk;

_Static_assert(offsetof(node_chunk, nodes) % NODE_LINE == 0, "slots start on a line");
_Static_assert(sizeof(pr_node) % NODE_LINE == 0 || sizeof(void *) != 8,
	       "every slot starts on a line");

/* Use blocks of 2^k entries, k < USE_CLASSES, come from the graph's arena
 * and go back to a free list per k; bigger ones are malloc'd. */
#define USE_CLASSES 12

/* A free block's first bytes link it to the next: a block of one entry
 * holds that pointer. */
_Static_assert(sizeof(pr_use) >= sizeof(pr_use *), "a use block holds its free-list link");
_Static_assert(sizeof(void *) != 8 || sizeof(pr_use) == 8, "a use entry is 8 bytes");

struct pr_graph_store {
	node_chunk *chunks;   /* the newest first */
	size_t next_chunk;    /* slots in the next chunk */
	pr_node *free_nodes;  /* erased slots, linked through their name field */
	int64_t n_heap;       /* pr_node_new nodes linked into the graph */
	hslot *overflow;      /* nodes whose names are bound in another graph
			       * (see str_head): key the node, hash its
			       * name's; no tombstones */
	uint32_t overflow_mask, overflow_n;
	pr_use *free_uses[USE_CLASSES];
	pr_input *free_inputs;/* erased inputs' records, linked through their name */
	arena mem;            /* use blocks, input records, and args from pr_graph_new_args */
};

#define NODE_CHUNK_MIN 64
#define NODE_CHUNK_MAX 65536

typedef struct program_index {
	named *schemas, *delegates, *methods, *blobs;
	pr_blob *last_blob;   /* so that adding a blob does not walk the list */
	strtab strings;       /* node names */
} program_index;

static strtab *strings_of(const pr_program *p)
{
	return &((program_index *)p->index)->strings;
}

/* Free slots keep kind, mem and the link (in name) readable; the rest is
 * poisoned. */
#define FREE_SLOT_KEPT (offsetof(pr_node, name) + sizeof(void *))

/* big_alloc's block, starting on a cache line: a mapping starts on a page;
 * the heap is asked for a line (and the block zeroed, as calloc would). */
static void *big_alloc_lines(size_t size, bool filled)
{
	if (big_mapped(size))
		return big_alloc(size, filled);
	void *p;
	if (posix_memalign(&p, NODE_LINE, size))
		pr_assert_fail("out of memory", __FILE__, __LINE__);
	return memset(p, 0, size);
}

/* A chunk of cap slots or more: a big one takes what fills its last page. */
static void node_chunk_add(pr_graph_store *st, size_t cap, bool filled)
{
	size_t size = big_size(sizeof(node_chunk) + cap * sizeof(pr_node));
	cap = (size - sizeof(node_chunk)) / sizeof(pr_node);
	node_chunk *c = big_alloc_lines(sizeof *c + cap * sizeof(pr_node), filled);
	c->used = 0;
	c->cap = cap;
	c->ready = filled || !big_mapped(size) ? cap : 0;
	c->next = st->chunks;
	st->chunks = c;
}

/* c's next slots faulted in (pages_ready): a pass that adds a node per
 * value (device copies) fills chunks of 10 MB. */
static __attribute__((noinline)) void node_chunk_ready(node_chunk *c)
{
	size_t ready = pages_ready(c->nodes, c->ready * sizeof(pr_node), (c->ready + 1) * sizeof(pr_node),
				   c->cap * sizeof(pr_node));
	c->ready = ready / sizeof(pr_node);
}

/* A zeroed slot: a chunk's unused slots are as big_alloc left them, zero
 * (at a million nodes a second memset of each is a few percent of a load);
 * a reused one is cleared. */
static pr_node *slot_take(pr_graph_store *st)
{
	pr_node *n = st->free_nodes;
	if (n) {
		UNPOISON(n, sizeof *n);
		st->free_nodes = (pr_node *)(void *)n->name;
		memset(n, 0, sizeof *n);
		return n;
	}
	if (!st->chunks || st->chunks->used == st->chunks->cap) {
		size_t cap = st->next_chunk ? st->next_chunk : NODE_CHUNK_MIN;
		st->next_chunk = cap < NODE_CHUNK_MAX ? 2 * cap : cap;
		node_chunk_add(st, cap, false);
	}
	node_chunk *c = st->chunks;
	if (c->used == c->ready)
		node_chunk_ready(c);
	return &c->nodes[c->used++];
}

static void slot_put(pr_graph_store *st, pr_node *n)
{
	n->mem = NODE_FREE;
	n->name = (const char *)(void *)st->free_nodes;
	st->free_nodes = n;
	POISON((char *)n + FREE_SLOT_KEPT, sizeof *n - FREE_SLOT_KEPT);
}

/* What pr_node_input gives for a node that is not an input: const, so
 * that a write to it faults instead of reaching every node. */
const pr_input pr_input_none = {0};

static pr_input *input_take(pr_graph_store *st)
{
	pr_input *in = st->free_inputs;
	if (in)
		st->free_inputs = (pr_input *)(void *)in->name;
	else
		in = arena_alloc(&st->mem, sizeof *in, _Alignof(pr_input));
	memset(in, 0, sizeof *in);
	return in;
}

/* Gives back input n's record when it is not n's malloc's: a slab node's
 * goes on the free list, a malloc'd one is freed. */
static void input_release(pr_graph_store *st, pr_node *n)
{
	pr_input *in = n->of_kind.input;
	if (n->mem & NODE_INPUT_HEAP) {
		free(in);
	} else if (!(n->mem & NODE_HEAP)) {
		in->name = (char *)(void *)st->free_inputs;
		st->free_inputs = in;
	}
	n->of_kind.input = NULL;
}

/* The least k with 2^k >= cap: the bit length of cap - 1. */
static int use_class(int cap)
{
	return cap <= 1 ? 0 : 32 - __builtin_clz((unsigned)cap - 1);
}

static pr_use *use_block_get(pr_graph_store *st, int k)
{
	pr_use *b = st->free_uses[k];
	if (b) {
		UNPOISON(b, sizeof *b << k);
		const void *link = b;   /* a free block's first bytes hold the next one */
		memcpy(&st->free_uses[k], link, sizeof st->free_uses[k]);
		/* The blocks given back lie all over the arena (a load gives back
		 * the first block of every value with a second reader), and the
		 * next take reads the next one's link: asked for now, it is there
		 * by then, not a miss each take (a pass that adds a copy per
		 * value takes one each). */
		__builtin_prefetch(st->free_uses[k]);
		return b;
	}
	return arena_alloc(&st->mem, sizeof *b << k, _Alignof(pr_use));
}

static void use_block_put(pr_graph_store *st, pr_use *b, int cap)
{
	int k = use_class(cap);
	void *link = b;
	memcpy(link, &st->free_uses[k], sizeof st->free_uses[k]);
	st->free_uses[k] = b;
	POISON((char *)b + sizeof(pr_use *), (sizeof *b << k) - sizeof(pr_use *));
}

static pr_graph_store *store_of(const pr_node *n)
{
	return n->graph ? n->graph->store : NULL;
}

/* Room for one more use past the first: doubling, in pool blocks while
 * they are big enough, else on the heap (and for nodes that have no graph
 * yet). Out of line: add_use takes a graph node's first block itself
 * (uses_take_first). */
static __attribute__((noinline)) void uses_grow(pr_node *v)
{
	pr_graph_store *st = store_of(v);
	int room = pr_node_uses_room(v);
	int cap = room ? 2 * room : 2;   /* a heap list starts at two */
	if (v->mem & NODE_USES_HEAP) {
		v->uses = pr_xrealloc(v->uses, (size_t)cap * sizeof *v->uses);
	} else {
		pr_use *b = st && cap <= (1 << (USE_CLASSES - 1))
			? use_block_get(st, use_class(cap))
			: pr_xmalloc((size_t)cap * sizeof *b);
		if (!st || cap > (1 << (USE_CLASSES - 1)))
			v->mem |= NODE_USES_HEAP;
		if (v->n_uses)
			memcpy(b, v->uses, (size_t)v->n_uses * sizeof *b);
		if (v->uses)
			use_block_put(st, v->uses, room);
		v->uses = b;
	}
	v->uses_room = (uint8_t)(1 + __builtin_ctz((unsigned)cap));
}

static void uses_free(pr_node *n)
{
	if (n->mem & NODE_USES_HEAP)
		free(n->uses);
	else if (n->uses)
		use_block_put(store_of(n), n->uses, pr_node_uses_room(n));
	n->uses = NULL;
	n->uses_room = 0;
}

/* ---- arguments and use lists -------------------------------------------- */

/* The first reader of a graph node, the common case, inline: a block of
 * one, as most values (and each copy a pass makes) have one reader (at a
 * million nodes 85% do): a block of two would leave 8 bytes unused in
 * each. A second reader moves the list to a block of two (uses_grow) and
 * gives this one back, for the next first reader. False when v already has
 * a list, or no graph to take a block from. */
static inline bool uses_take_first(pr_node *v)
{
	pr_graph_store *st = store_of(v);
	if (v->uses_room || !st || (v->mem & NODE_USES_HEAP))
		return false;
	v->uses = use_block_get(st, 0);
	v->uses_room = 1;
	return true;
}

/* Inlined into its callers: as a call of its own, saving registers for
 * uses_grow took a fifth of it. */
HOT_INLINE void add_use(pr_node *value, pr_arg *arg)
{
	if (value->n_uses == pr_node_uses_room(value) && !uses_take_first(value))
		uses_grow(value);
	arg->use_index = value->n_uses;
	value->uses[value->n_uses++] = (pr_use){.arg = arg};
}

/* O(1): the slot knows its place, and the last use fills the hole. A value
 * read thousands of times loses readers one by one in placement and DCE, so
 * a search or an order-keeping shift here would make those passes quadratic.
 * Inlined: moving a reader (pr_arg_set_value) is little more than this. */
HOT_INLINE void remove_use(pr_node *value, pr_arg *arg)
{
	int i = arg->use_index;
	PR_ASSERT(i >= 0 && i < value->n_uses && value->uses[i].arg == arg);
	value->uses[i] = value->uses[--value->n_uses];
	value->uses[i].arg->use_index = i;
	arg->use_index = -1;
}

static void args_attach(pr_node *owner, pr_arg *args, int n)
{
	for (int i = 0; i < n; i++) {
		args[i].owner = owner;
		if (args[i].kind == PR_ARG_VALUE && args[i].u.value)
			add_use(args[i].u.value, &args[i]);
		else if (args[i].kind == PR_ARG_LIST)
			args_attach(owner, args[i].u.items, args[i].n_items);
	}
}

/* Takes the uses of args off the values they name; frees what they own
 * unless they are graph storage. */
static void args_release(pr_arg *args, int n, bool owned)
{
	for (int i = 0; i < n; i++) {
		pr_arg *a = &args[i];
		if (a->kind == PR_ARG_VALUE && a->u.value)
			remove_use(a->u.value, a);
		else if (a->kind == PR_ARG_STRING && owned)
			free(a->u.s);
		else if (a->kind == PR_ARG_LIST) {
			args_release(a->u.items, a->n_items, owned);
			if (owned)
				free(a->u.items);
		}
	}
}

/* The same without touching use lists: only for tearing down a whole
 * graph, where every node goes. */
static void args_drop(pr_arg *args, int n)
{
	for (int i = 0; i < n; i++) {
		if (args[i].kind == PR_ARG_STRING)
			free(args[i].u.s);
		else if (args[i].kind == PR_ARG_LIST) {
			args_drop(args[i].u.items, args[i].n_items);
			free(args[i].u.items);
		}
	}
}

/* n's arguments from now on, their uses registered. */
HOT_INLINE void args_take(pr_node *n, pr_arg *args, int n_args, bool graph)
{
	n->mem = (uint16_t)(graph ? n->mem | NODE_ARGS_GRAPH : n->mem & ~NODE_ARGS_GRAPH);
	n->args = args;
	n->n_args = n_args;
	args_attach(n, args, n_args);
}

/* Lets go of the arguments n has, then takes args. */
static __attribute__((noinline)) void args_replace(pr_node *n, pr_arg *args, int n_args,
						   bool graph)
{
	bool owned = !(n->mem & NODE_ARGS_GRAPH);
	args_release(n->args, n->n_args, owned);
	if (owned)
		free(n->args);
	args_take(n, args, n_args, graph);
}

/* A new node (the usual case) has no arguments to let go: then this is a
 * few stores and a tail call, with no registers to save. */
static void set_args(pr_node *n, pr_arg *args, int n_args, bool graph)
{
	if (n->args)
		args_replace(n, args, n_args, graph);
	else
		args_take(n, args, n_args, graph);
}

void pr_node_set_args(pr_node *n, pr_arg *args, int n_args)
{
	set_args(n, args, n_args, false);
}

void pr_node_set_graph_args(pr_node *n, pr_arg *args, int n_args)
{
	PR_ASSERT(n->graph);
	set_args(n, args, n_args, true);
}

/* n's one argument, from its graph's storage, naming v; its use is the
 * caller's to add. */
static pr_arg *value_arg_new(pr_node *n, pr_node *v)
{
	pr_arg *a = arena_alloc(&n->graph->store->mem, sizeof *a, _Alignof(pr_arg));
	a->kind = PR_ARG_VALUE;
	a->u.value = v;
	a->owner = n;
	n->mem |= NODE_ARGS_GRAPH;
	n->args = a;
	n->n_args = 1;
	return a;
}

void pr_node_set_value_arg(pr_node *n, pr_node *v)
{
	PR_ASSERT(n->graph && !n->args && v);
	add_use(v, value_arg_new(n, v));
}

/* v keeps as many readers as before (a leaves, n's argument comes), so the
 * entry a gives up takes n's argument with no room to check; what pays is
 * two calls' worth of checks fewer, per copy a placement pass makes. */
void pr_node_interpose(pr_node *n, pr_arg *a)
{
	pr_node *v = a->u.value;
	PR_ASSERT(n->graph && !n->args && a->kind == PR_ARG_VALUE && v && v != n);
	remove_use(v, a);
	a->u.value = n;
	add_use(n, a);
	pr_arg *own = value_arg_new(n, v);
	own->use_index = v->n_uses;   /* the place remove_use freed */
	v->uses[v->n_uses++] = (pr_use){.arg = own};
}

void *pr_graph_alloc(pr_graph *g, size_t size)
{
	return arena_alloc(&g->store->mem, size ? size : 1, 8);   /* zero: see arena */
}

pr_arg *pr_graph_new_args(pr_graph *g, int n_args)
{
	size_t size = (size_t)(n_args > 0 ? n_args : 1) * sizeof(pr_arg);
	return arena_alloc(&g->store->mem, size, _Alignof(pr_arg));   /* zero: see arena */
}

void pr_arg_set_value(pr_arg *a, pr_node *v)
{
	PR_ASSERT(a->kind == PR_ARG_VALUE);
	if (a->u.value == v)
		return;
	if (a->u.value)
		remove_use(a->u.value, a);
	a->u.value = v;
	if (v)
		add_use(v, a);
}

/* ---- nodes --------------------------------------------------------------- */

/* A detached input's record follows the node in its malloc, its name after
 * both. */
pr_node *pr_node_new(pr_node_kind kind, const char *name)
{
	size_t len = name ? strlen(name) + 1 : 0;
	size_t in = kind == PR_NODE_INPUT ? sizeof(pr_input) : 0;
	pr_node *n = pr_xcalloc(1, sizeof *n + in + len);
	n->kind = kind;
	n->mem = NODE_HEAP;
	if (in)
		n->of_kind.input = (pr_input *)(void *)(n + 1);
	if (name) {
		char *own = (char *)(n + 1) + in;
		memcpy(own, name, len);
		n->name = own;
		n->mem |= NODE_NAME_LOCAL;
	}
	n->type.kind = PR_TYPE_NONE;
	return n;
}

const char *pr_program_intern(pr_program *p, const char *s, size_t n)
{
	return strtab_intern(strings_of(p), s, n);
}

const char *pr_program_intern_hashed(pr_program *p, const char *s, size_t n, uint32_t h)
{
	return strtab_intern_hashed(strings_of(p), s, n, h);
}

void pr_program_prefetch_name(const pr_program *p, uint32_t h)
{
	const strtab *t = strings_of(p);
	if (t->slots)
		__builtin_prefetch(&t->slots[strtab_home(t->cap, h)]);
}

/* A slot just taken (zero: of_kind is NULL) becomes a node of g. */
HOT_INLINE pr_node *node_start(pr_node *n, pr_graph *g, pr_node_kind kind)
{
	n->kind = kind;
	n->graph = g;
	n->type.kind = PR_TYPE_NONE;
	return n;
}

static __attribute__((noinline)) pr_node *new_node_general(pr_graph *g, pr_node_kind kind,
							  const char *name)
{
	pr_node *n = slot_take(g->store);
	node_start(n, g, kind);
	if (kind == PR_NODE_INPUT)
		n->of_kind.input = input_take(g->store);
	if (name)
		n->name = pr_program_intern(g->program, name, strlen(name));
	return n;
}

/* The common case as a leaf, with no registers to save: an unnamed node
 * that is not an input (loaders and passes name theirs afterwards) in the
 * newest chunk's next slot (no erased one to reuse). */
HOT_INLINE pr_node *new_node(pr_graph *g, pr_node_kind kind, const char *name)
{
	pr_graph_store *st = g->store;
	node_chunk *c = st->chunks;
	if (name || kind == PR_NODE_INPUT || st->free_nodes || !c || c->used == c->ready)
		return new_node_general(g, kind, name);
	return node_start(&c->nodes[c->used++], g, kind);
}

pr_node *pr_graph_new_node(pr_graph *g, pr_node_kind kind, const char *name)
{
	return new_node(g, kind, name);
}

void pr_node_make_input(pr_node *n)
{
	/* of_kind is the record from now on: the other kind's member must not
	 * be one (write-backs it owned would leak). */
	PR_ASSERT(n->kind != PR_NODE_INPUT && !n->of_kind.input);
	n->kind = PR_NODE_INPUT;
	if (n->mem & NODE_HEAP) {
		n->of_kind.input = pr_xcalloc(1, sizeof *n->of_kind.input);
		n->mem |= NODE_INPUT_HEAP;
	} else {
		n->of_kind.input = input_take(n->graph->store);
	}
}

pr_node *pr_graph_reserve_nodes(pr_graph *g, size_t count)
{
	pr_graph_store *st = g->store;
	/* and room for their names, so that the table is not rehashed while
	 * they come, and for as many again: the table then stays under 3/8
	 * full through the load, where probes are short, and takes the names
	 * a pass adds (a copy per value, placing a graph on devices) without
	 * moving them all, for the slots a growth would have come to anyway. */
	strtab_fit(strings_of(g->program), 2 * count);
	if (st->free_nodes)   /* slot_take reuses those first */
		return NULL;
	if (!st->chunks || st->chunks->cap - st->chunks->used < count)
		node_chunk_add(st, count > NODE_CHUNK_MIN ? count : NODE_CHUNK_MIN, true);
	/* A graph loaded this big grows by a part of it (a pass adding copies):
	 * chunks after this one start a quarter of its size, not at the
	 * minimum, so that its new nodes do not come through a dozen small
	 * chunks, cleared by calloc, before they reach mapped blocks. */
	while (st->next_chunk < NODE_CHUNK_MAX && st->next_chunk < count / 4)
		st->next_chunk = st->next_chunk ? 2 * st->next_chunk : NODE_CHUNK_MIN;
	return &st->chunks->nodes[st->chunks->used];
}

/* ---- a node's other parts: owned or graph storage -------------------------- */

/* Records how n's part of graph bit `bit` is stored from now on; returns
 * whether n owned the one it had. */
static bool part_store(pr_node *n, uint16_t bit, pr_storage storage)
{
	bool owned = !(n->mem & bit);
	PR_ASSERT(storage == PR_STORAGE_OWNED || n->graph);
	n->mem = (uint16_t)(storage == PR_STORAGE_GRAPH ? n->mem | bit : n->mem & ~bit);
	return owned;
}

void pr_node_set_input_name(pr_node *n, char *name, pr_storage storage)
{
	PR_ASSERT(n->kind == PR_NODE_INPUT);
	char *old = n->of_kind.input->name;
	if (part_store(n, NODE_INPUT_NAME_GRAPH, storage) && old != name)
		free(old);
	n->of_kind.input->name = name;
}

void pr_node_set_data_values(pr_node *n, double *values, int64_t n_values, pr_storage storage)
{
	PR_ASSERT(n->kind == PR_NODE_INPUT);
	pr_data *d = &n->of_kind.input->data;
	if (part_store(n, NODE_VALUES_GRAPH, storage) && d->values != values)
		free(d->values);
	d->values = values;
	d->n_values = n_values;
}

void pr_node_set_tuple(pr_node *n, pr_spec *elems, int n_elems, pr_storage storage)
{
	/* elems overlays tensor: a node that is not a tuple has none to free */
	bool had = n->type.kind == PR_TYPE_TUPLE;
	if (part_store(n, NODE_ELEMS_GRAPH, storage) && had && n->type.elems != elems)
		free(n->type.elems);
	n->type.kind = PR_TYPE_TUPLE;
	n->type.elems = elems;
	n->type.n_elems = n_elems;
}

/* Return n's write-backs, when it owns them: n_args targets. */
static void writebacks_free(pr_node *n)
{
	pr_writeback *w = n->of_kind.writebacks;
	if (!w || (n->mem & NODE_WRITEBACKS_GRAPH))
		return;
	for (int i = 0; i < n->n_args; i++)
		free(w[i].target);
	free(w);
}

void pr_node_set_writebacks(pr_node *n, pr_writeback *writebacks, pr_storage storage)
{
	PR_ASSERT(n->kind == PR_NODE_RETURN);
	if (n->of_kind.writebacks != writebacks)
		writebacks_free(n);
	part_store(n, NODE_WRITEBACKS_GRAPH, storage);
	n->of_kind.writebacks = writebacks;
}

/* Input n's record's parts, and the record. */
static void input_parts_free(pr_node *n)
{
	pr_input *in = n->of_kind.input;
	if (!(n->mem & NODE_INPUT_NAME_GRAPH))
		free(in->name);
	if (!(n->mem & NODE_VALUES_GRAPH))
		free(in->data.values);
	input_release(store_of(n), n);
}

/* What a node owns besides its args and uses. */
static void node_parts_free(pr_node *n)
{
	if (n->kind == PR_NODE_RETURN)
		writebacks_free(n);
	if (n->mem & NODE_NAME_HEAP)
		free((char *)n->name);
	if (n->kind == PR_NODE_INPUT)
		input_parts_free(n);
	if (n->type.kind != PR_TYPE_TUPLE)
		return;   /* elems overlays tensor: only a tuple has them */
	if (!(n->mem & NODE_ELEMS_GRAPH))
		free(n->type.elems);
	n->type.elems = NULL;
	n->type.n_elems = 0;
}

/* Frees an unlinked node, taking its reads off the values it reads. */
static void node_free(pr_node *n)
{
	pr_graph_store *st = store_of(n);
	node_parts_free(n);
	set_args(n, NULL, 0, false);
	uses_free(n);
	if (n->mem & NODE_HEAP)
		free(n);
	else
		slot_put(st, n);
}

/* Frees a node of a graph being torn down: no use list is kept right. */
static void node_drop(pr_node *n)
{
	node_parts_free(n);
	if (!(n->mem & NODE_ARGS_GRAPH)) {
		args_drop(n->args, n->n_args);
		free(n->args);
	}
	if (n->mem & NODE_USES_HEAP)
		free(n->uses);
}

pr_spec *pr_node_spec(pr_node *n)
{
	return n && n->type.kind == PR_TYPE_TENSOR ? &n->type.tensor : NULL;
}

int pr_node_alias_arg(const pr_node *n, int r)
{
	if (!n || n->kind != PR_NODE_OP || !n->of_kind.schema)
		return -1;
	if (n->type.kind == PR_TYPE_TUPLE)
		r = pr_schema_elem_return(n->of_kind.schema, r);
	return pr_schema_return_alias(n->of_kind.schema, r);
}

pr_node *pr_node_alias_value(const pr_node *n, int r)
{
	return pr_node_value_arg(n, pr_node_alias_arg(n, r));
}

/* ---- mutable buffers ------------------------------------------------------ */

/* A program mutates a buffer in place and returns the placeholder itself,
 * so nearly every write-back's value is the buffer it names: those are kept
 * by their address, and a query about one costs a multiply, not a hash of
 * its name. The write-back targets' names (borrowed from the return node)
 * answer the rest: a buffer that another value is written back to, or one
 * named like a kept one (two inputs of one name, which the verifier
 * refuses). They are hashed into their table when a query first needs them,
 * which a method whose buffers all come back as themselves never does. */
typedef struct buffer_names {
	hslot *slots;         /* NULL: not built yet */
	uint32_t mask, n;
} buffer_names;

struct pr_mutable_buffers {
	hslot *nodes;         /* key: a write-back's own buffer placeholder */
	uint32_t nodes_mask, n_nodes;
	uint32_t n_targets;   /* write-backs to a buffer */
	const pr_node *ret;   /* their return node */
	buffer_names *names;  /* filled on the first query that needs them */
};

static uint32_t node_hash(const pr_node *n)
{
	return (uint32_t)(((uint64_t)(uintptr_t)n * 0x9E3779B97F4A7C15ull) >> 32);
}

/* The slot of node n (hash h), or the empty slot where it would go. */
static hslot *buffer_node_slot(const pr_mutable_buffers *b, const pr_node *n, uint32_t h)
{
	for (uint32_t i = h & b->nodes_mask;; i = (i + 1) & b->nodes_mask) {
		hslot *s = &b->nodes[i];
		if (!s->key || s->key == n)
			return s;
	}
}

/* The slot of name (hash h), or the empty slot where it would go. */
static hslot *buffer_name_slot(const buffer_names *t, const char *name, uint32_t h)
{
	for (uint32_t i = h & t->mask;; i = (i + 1) & t->mask) {
		hslot *s = &t->slots[i];
		if (!s->key || (s->hash == h && !strcmp(s->key, name)))
			return s;
	}
}

/* The buffer placeholder that write-back w's value v is, when it is the one
 * w names; else NULL. */
static const pr_node *written_back_itself(const pr_arg *v, const pr_writeback *w)
{
	const pr_node *in = v->kind == PR_ARG_VALUE ? v->u.value : NULL;
	if (!in || in->kind != PR_NODE_INPUT || in->of_kind.input->kind != PR_INPUT_BUFFER)
		return NULL;
	const char *name = in->of_kind.input->name;
	return name && !strcmp(name, w->target) ? in : NULL;
}

/* What written_back_itself and the table read for write-back i of ret,
 * one stage at a time, each once the one before has come in: 0 the value
 * node's kind and record pointer and the node's table slot, 1 its input
 * record, 2 its name and the target. A big method's buffers are cold (at
 * 10^6 nodes 71,000 of them, each a miss in turn without this). */
static void prefetch_writeback(const pr_mutable_buffers *b, const pr_node *ret, const pr_writeback *wbs, int i,
			       int stage)
{
	const pr_arg *a = &ret->args[i];
	const pr_node *in = a->kind == PR_ARG_VALUE ? a->u.value : NULL;
	if (!in || wbs[i].kind != PR_WRITEBACK_BUFFER)
		return;
	if (stage == 0) {
		__builtin_prefetch(&in->kind);
		__builtin_prefetch(&in->of_kind);
		__builtin_prefetch(&b->nodes[node_hash(in) & b->nodes_mask], 1);
	} else if (in->kind == PR_NODE_INPUT) {
		const pr_input *rec = in->of_kind.input;
		if (stage == 1) {
			__builtin_prefetch(rec);
		} else {
			__builtin_prefetch(rec->name);
			__builtin_prefetch(wbs[i].target);
		}
	}
}

/* How far ahead of the write-back kept prefetch_writeback asks for each
 * stage. */
#define WB_AHEAD_NODE 12
#define WB_AHEAD_RECORD 8
#define WB_AHEAD_NAMES 4

pr_mutable_buffers *pr_graph_mutable_buffers(const pr_graph *g)
{
	pr_mutable_buffers *b = pr_xcalloc(1, sizeof *b);
	const pr_node *ret = pr_graph_return(g);
	const pr_writeback *wbs = ret ? pr_node_writebacks(ret) : NULL;
	if (!wbs)
		return b;
	b->ret = ret;
	b->names = pr_xcalloc(1, sizeof *b->names);
	for (int i = 0; i < ret->n_args; i++)
		b->n_targets += wbs[i].kind == PR_WRITEBACK_BUFFER && wbs[i].target;
	/* sized once for the buffers written back, not for every return value:
	 * no rehash while they come, and a small table for a method with many
	 * outputs and few buffers */
	hslots_fit(&b->nodes, &b->nodes_mask, NAMES_FIRST, b->n_targets);
	for (int i = 0; i < ret->n_args; i++) {
		if (i + WB_AHEAD_NODE < ret->n_args)
			prefetch_writeback(b, ret, wbs, i + WB_AHEAD_NODE, 0);
		if (i + WB_AHEAD_RECORD < ret->n_args)
			prefetch_writeback(b, ret, wbs, i + WB_AHEAD_RECORD, 1);
		if (i + WB_AHEAD_NAMES < ret->n_args)
			prefetch_writeback(b, ret, wbs, i + WB_AHEAD_NAMES, 2);
		if (wbs[i].kind != PR_WRITEBACK_BUFFER || !wbs[i].target)
			continue;
		const pr_node *in = written_back_itself(&ret->args[i], &wbs[i]);
		uint32_t h = in ? node_hash(in) : 0;
		hslot *s = in ? buffer_node_slot(b, in, h) : NULL;
		if (s && !s->key) {
			*s = (hslot){.key = (void *)in, .hash = h};
			b->n_nodes++;
		}
	}
	return b;
}

/* The targets' names, hashed into t. */
static void buffer_names_fill(buffer_names *t, const pr_node *ret, uint32_t n_targets)
{
	const pr_writeback *wbs = pr_node_writebacks(ret);
	hslots_fit(&t->slots, &t->mask, NAMES_FIRST, n_targets);
	for (int i = 0; i < ret->n_args; i++) {
		const pr_writeback *w = &wbs[i];
		if (w->kind != PR_WRITEBACK_BUFFER || !w->target)
			continue;
		uint32_t h = pr_str_hash(w->target, strlen(w->target));
		hslot *s = buffer_name_slot(t, w->target, h);
		if (!s->key) {
			*s = (hslot){.key = w->target, .hash = h};
			t->n++;
		}
	}
}

bool pr_mutable_buffers_has(const pr_mutable_buffers *b, const pr_node *in)
{
	if (!b->n_targets || in->kind != PR_NODE_INPUT || in->of_kind.input->kind != PR_INPUT_BUFFER ||
	    !in->of_kind.input->name)
		return false;
	if (buffer_node_slot(b, in, node_hash(in))->key)
		return true;
	buffer_names *t = b->names;
	if (!t->slots)
		buffer_names_fill(t, b->ret, b->n_targets);
	const char *name = in->of_kind.input->name;
	return buffer_name_slot(t, name, pr_str_hash(name, strlen(name)))->key != NULL;
}

void pr_mutable_buffers_prefetch(const pr_mutable_buffers *b, const pr_node *in)
{
	if (b->n_targets)
		__builtin_prefetch(&b->nodes[node_hash(in) & b->nodes_mask]);
}

void pr_mutable_buffers_free(pr_mutable_buffers *b)
{
	if (!b)
		return;
	hslots_free(b->nodes, b->nodes_mask);
	if (b->names)
		hslots_free(b->names->slots, b->names->mask);
	free(b->names);
	free(b);
}

/* ---- graphs -------------------------------------------------------------- */

static pr_graph *graph_new(pr_program *p, const char *name)
{
	pr_graph *g = pr_xcalloc(1, sizeof *g);
	g->name = pr_xstrdup(name);
	g->program = p;
	g->store = pr_xcalloc(1, sizeof *g->store);
	return g;
}

/* One walk over the slabs (and the list, for heap nodes) frees what nodes
 * own outside them; then the chunks go whole. */
static void graph_free(pr_graph *g)
{
	if (!g)
		return;
	pr_graph_store *st = g->store;
	for (pr_node *n = st->n_heap ? g->first : NULL, *next; n; n = next) {
		next = n->next;
		if (n->mem & NODE_HEAP) {
			node_drop(n);
			free(n);
		}
	}
	for (node_chunk *c = st->chunks, *next; c; c = next) {
		next = c->next;
		for (size_t i = 0; i < c->used; i++)
			if (!(c->nodes[i].mem & NODE_FREE))
				node_drop(&c->nodes[i]);
		UNPOISON(c->nodes, c->cap * sizeof(pr_node));
		big_free(c, sizeof *c + c->cap * sizeof(pr_node));
	}
	arena_free(&st->mem);
	hslots_free(st->overflow, st->overflow_mask);
	free(st);
	free(g->name);
	free(g);
}

/* The slot of g's overflow entry for interned (hash h), or the empty slot
 * where it would go: names are compared by address. */
static hslot *overflow_probe(const pr_graph_store *st, const char *interned, uint32_t h)
{
	for (uint32_t i = h & st->overflow_mask;; i = (i + 1) & st->overflow_mask) {
		hslot *s = &st->overflow[i];
		const pr_node *n = s->key;
		if (!n || n->name == interned)
			return s;
	}
}

/* Backward-shift deletion: each later entry of the run moves into the hole
 * when the hole lies on its probe path, so lookups never meet a gap. */
static void overflow_delete(pr_graph_store *st, hslot *hole)
{
	uint32_t mask = st->overflow_mask, i = (uint32_t)(hole - st->overflow);
	for (uint32_t j = (i + 1) & mask; st->overflow[j].key; j = (j + 1) & mask) {
		uint32_t home = st->overflow[j].hash & mask;
		if (((j - home) & mask) >= ((j - i) & mask)) {
			st->overflow[i] = st->overflow[j];
			i = j;
		}
	}
	st->overflow[i].key = NULL;
	st->overflow_n--;
}

/* The node of g named interned (a string of g's program), or NULL. */
static inline pr_node *bound_in(const pr_graph *g, const char *interned)
{
	const str_head *head = str_head_of(interned);
	if (head->bound && head->bound->graph == g)
		return head->bound;
	const pr_graph_store *st = g->store;
	return st->overflow_n ? overflow_probe(st, interned, head->hash)->key : NULL;
}

pr_node *pr_graph_find(const pr_graph *g, const char *name)
{
	size_t len = strlen(name);
	return pr_graph_find_hashed(g, name, len, pr_str_hash(name, len));
}

pr_node *pr_graph_find_hashed(const pr_graph *g, const char *name, size_t len, uint32_t hash)
{
	const strtab *t = strings_of(g->program);
	if (!g->n_nodes || !t->n)
		return NULL;
	sslot e = *strtab_probe(t, name, len, hash);
	return e ? bound_in(g, sslot_str(e)) : NULL;
}

/* Binds n under interned, a name no node of g has: in its header, or in
 * g's overflow table when a node of another graph has it there. */
HOT_INLINE void name_bind(pr_graph *g, pr_node *n, const char *interned)
{
	str_head *head = str_head_of(interned);
	if (!head->bound) {
		head->bound = n;
		return;
	}
	pr_graph_store *st = g->store;
	hslots_fit(&st->overflow, &st->overflow_mask, NAMES_FIRST, st->overflow_n + 1);
	*overflow_probe(st, interned, head->hash) = (hslot){.key = n, .hash = head->hash};
	st->overflow_n++;
}

/* Binds n under interned (n's name, or the one it is about to get),
 * refusing a name g already has. */
static pr_err *name_add(pr_graph *g, pr_node *n, const char *interned)
{
	if (bound_in(g, interned))
		return pr_err_new("%%%s is already defined in @%s", interned, g->name);
	name_bind(g, n, interned);
	return NULL;
}

static void name_remove(pr_graph *g, pr_node *n)
{
	if (!n->name)
		return;
	str_head *head = str_head_of(n->name);
	if (head->bound == n) {
		head->bound = NULL;
		return;
	}
	pr_graph_store *st = g->store;
	hslot *s = st->overflow_n ? overflow_probe(st, n->name, head->hash) : NULL;
	if (s && s->key == n)
		overflow_delete(st, s);
}

/* pr_fresh_name_suffix, inlined into the search (a public function called
 * from inside the library goes through the PLT). */
HOT_INLINE size_t fresh_suffix(char *s, int i)
{
	char digits[PR_FRESH_SUFFIX_MAX];
	size_t n = 0, len = 0;
	unsigned v = (unsigned)i;
	do
		digits[n++] = (char)('0' + v % 10);
	while (v /= 10);
	s[len++] = '_';
	while (n)
		s[len++] = digits[--n];
	s[len] = 0;
	return len;
}

size_t pr_fresh_name_suffix(char *s, int i)
{
	return fresh_suffix(s, i);
}

/* The string-table slot of buf (len bytes, hash h): empty, or a string no
 * node of g has as its name; NULL when g has such a node. Inlined, as the
 * probe in it is: every fresh name asks it at least once, and as a call
 * (GCC's .isra clone) it cost more than its body. */
HOT_INLINE sslot *name_free_slot(const pr_graph *g, const strtab *t, const char *buf, size_t len,
			     uint32_t h)
{
	sslot *e = strtab_probe(t, buf, len, h);
	return *e && bound_in(g, sslot_str(*e)) ? NULL : e;
}

/* Turns buf (base, base_len bytes, with PR_FRESH_SUFFIX_MAX bytes of room
 * after it; base_hash is its pr_str_hash) into the first name not used in
 * g: base itself when *next is 0, else base_i for i from *next (1 at
 * least); *next (may be NULL) is left
 * after it. Returns the name's length, its hash in *h and its string-table
 * slot in *slot (see name_free_slot; the table has room for one more
 * string): each candidate is hashed and probed once. */
static size_t fresh_name_in(const pr_graph *g, char *buf, size_t base_len, uint32_t base_hash,
			    int *next, uint32_t *h, sslot **slot)
{
	strtab *t = strings_of(g->program);
	strtab_fit(t, 1);
	int from = next ? *next : 0;
	buf[base_len] = 0;
	*h = base_hash;
	if (from == 0 && (*slot = name_free_slot(g, t, buf, base_len, *h))) {
		if (next)
			*next = 1;
		return base_len;
	}
	for (int i = from > 0 ? from : 1;; i++) {
		size_t len = base_len + fresh_suffix(buf + base_len, i);
		*h = pr_str_hash(buf, len);
		if ((*slot = name_free_slot(g, t, buf, len, *h))) {
			if (next)
				*next = i + 1;
			return len;
		}
	}
}

char *pr_graph_fresh_name_next(const pr_graph *g, const char *base, int *next)
{
	size_t len = strlen(base);
	char *name = pr_xmalloc(len + PR_FRESH_SUFFIX_MAX);
	uint32_t h;
	sslot *slot;
	memcpy(name, base, len);
	fresh_name_in(g, name, len, pr_str_hash(name, len), next, &h, &slot);
	return name;
}

pr_node *pr_graph_new_node_fresh(pr_graph *g, pr_node_kind kind, const char *base,
				 size_t base_len, int *next)
{
	return pr_graph_new_node_fresh_hashed(g, kind, base, base_len, pr_str_hash(base, base_len),
					      next);
}

/* A slab node named s (len bytes, hash h), whose string-table slot is slot
 * (see name_free_slot). */
HOT_INLINE pr_node *new_node_named_at(pr_graph *g, pr_node_kind kind, sslot *slot,
				      const char *s, size_t len, uint32_t h)
{
	pr_node *n = new_node(g, kind, NULL);
	n->name = strtab_take(strings_of(g->program), slot, s, len, h);
	return n;
}

/* A fresh name with a suffix: base_i from *next (1 at least) on. Out of
 * line, as few names need one. */
static __attribute__((noinline)) pr_node *new_node_suffixed(pr_graph *g, pr_node_kind kind,
							   const char *base, size_t base_len,
							   uint32_t base_hash, int *next)
{
	char stack[128], *buf = stack;
	if (base_len + PR_FRESH_SUFFIX_MAX > sizeof stack)
		buf = pr_xmalloc(base_len + PR_FRESH_SUFFIX_MAX);
	memcpy(buf, base, base_len);
	uint32_t h;
	sslot *slot;
	size_t len = fresh_name_in(g, buf, base_len, base_hash, next, &h, &slot);
	pr_node *n = new_node_named_at(g, kind, slot, buf, len, h);
	if (buf != stack)
		free(buf);
	return n;
}

/* pr_graph_new_node_fresh_hashed, inlined into the entry points that make
 * a fresh node (one public function calling another goes through the PLT). */
HOT_INLINE pr_node *new_node_fresh(pr_graph *g, pr_node_kind kind, const char *base,
				   size_t base_len, uint32_t base_hash, int *next)
{
	int after_base = 1;   /* the cursor once base is known to be taken */
	if (!next || !*next) {
		/* most fresh names are their base: then it is interned from the
		 * caller's bytes, with no copy to add a suffix to */
		strtab *t = strings_of(g->program);
		strtab_fit(t, 1);
		sslot *slot = name_free_slot(g, t, base, base_len, base_hash);
		if (slot) {
			if (next)
				*next = 1;
			return new_node_named_at(g, kind, slot, base, base_len, base_hash);
		}
		/* taken: the search starts at base_1, not probing base again */
		if (next)
			*next = 1;
		else
			next = &after_base;
	}
	return new_node_suffixed(g, kind, base, base_len, base_hash, next);
}

pr_node *pr_graph_new_node_fresh_hashed(pr_graph *g, pr_node_kind kind, const char *base,
					size_t base_len, uint32_t base_hash, int *next)
{
	return new_node_fresh(g, kind, base, base_len, base_hash, next);
}

char *pr_graph_fresh_name(const pr_graph *g, const char *base)
{
	return pr_graph_fresh_name_next(g, base, NULL);
}

/* A detached pr_node_new node keeps its name to itself (it has no program);
 * every other node's name is interned. */
static void set_local_name(pr_node *n, const char *name)
{
	if (n->mem & NODE_NAME_HEAP)
		free((char *)n->name);
	n->name = pr_xstrdup(name);
	n->mem |= NODE_NAME_LOCAL | NODE_NAME_HEAP;
}

static void set_interned_name(pr_node *n, const char *interned)
{
	if (n->mem & NODE_NAME_HEAP)
		free((char *)n->name);
	n->name = interned;
	n->mem &= (uint16_t)~(NODE_NAME_LOCAL | NODE_NAME_HEAP);
}

pr_err *pr_node_rename(pr_node *n, const char *name)
{
	pr_graph *g = n->graph;
	if (!g) {
		set_local_name(n, name);
		return NULL;
	}
	const char *s = pr_program_intern(g->program, name, strlen(name));
	if (!(n->mem & NODE_LINKED)) {
		set_interned_name(n, s);
		return NULL;
	}
	if (bound_in(g, s))
		return pr_err_new("cannot rename %%%s: %%%s is already defined in @%s",
				  n->name ? n->name : "", name, g->name);
	name_remove(g, n);
	set_interned_name(n, s);
	return name_add(g, n, s);
}

pr_node *pr_graph_return(const pr_graph *g)
{
	return g->last && g->last->kind == PR_NODE_RETURN ? g->last : NULL;
}

void pr_graph_renumber(pr_graph *g)
{
	uint64_t order = ORDER_GAP;
	for (pr_node *n = g->first; n; n = n->next, order += ORDER_GAP)
		n->order = order;
	g->order_stale = false;
}

bool pr_node_before(const pr_node *a, const pr_node *b)
{
	PR_ASSERT(a->graph && a->graph == b->graph);
	if (a->graph->order_stale)
		pr_graph_renumber(a->graph);
	return a->order < b->order;
}

/* Gives n (already linked) an order between its neighbours. Inlined into
 * the links, of every node a loader appends or a pass inserts. */
HOT_INLINE void order_between(pr_graph *g, pr_node *n)
{
	uint64_t lo = n->prev ? n->prev->order : 0;
	if (!n->next) {
		n->order = lo + ORDER_GAP;
		if (n->order < lo)
			g->order_stale = true;
		return;
	}
	uint64_t hi = n->next->order;
	if (g->order_stale || hi - lo < 2 || hi < lo)
		g->order_stale = true;
	else
		n->order = lo + (hi - lo) / 2;
}

/* Indexes n's name (interning it first if n was made detached) and counts
 * it in; the caller links it into the list. */
static pr_err *link_check(pr_graph *g, pr_node *n)
{
	PR_ASSERT(!(n->mem & NODE_LINKED) && !n->prev && !n->next);
	PR_ASSERT(!n->graph || n->graph == g);
	if (n->name) {
		const char *s = n->mem & NODE_NAME_LOCAL
			? pr_program_intern(g->program, n->name, strlen(n->name)) : n->name;
		pr_err *e = name_add(g, n, s);
		if (e)
			return e;
		set_interned_name(n, s);
	}
	n->graph = g;
	n->mem |= NODE_LINKED;
	g->n_nodes++;
	g->store->n_heap += n->mem & NODE_HEAP ? 1 : 0;
	return NULL;
}

/* Puts n, counted in, at the end of g's list. */
static void list_append(pr_graph *g, pr_node *n)
{
	n->prev = g->last;
	if (g->last)
		g->last->next = n;
	else
		g->first = n;
	g->last = n;
	order_between(g, n);
}

/* Puts n, counted in, before pos in pos's list. */
HOT_INLINE void list_insert_before(pr_graph *g, pr_node *pos, pr_node *n)
{
	n->next = pos;
	n->prev = pos->prev;
	if (pos->prev)
		pos->prev->next = n;
	else
		g->first = n;
	pos->prev = n;
	order_between(g, n);
}

/* The name is free in g (the search saw to it): bound without asking
 * again, and linked with no second lookup of it. */
pr_node *pr_graph_new_node_fresh_before(pr_node *pos, pr_node_kind kind, const char *base,
					size_t base_len, uint32_t base_hash, int *next)
{
	PR_ASSERT(pos->graph && (pos->mem & NODE_LINKED));
	pr_graph *g = pos->graph;
	pr_node *n = new_node_fresh(g, kind, base, base_len, base_hash, next);
	name_bind(g, n, n->name);
	n->mem |= NODE_LINKED;
	g->n_nodes++;
	list_insert_before(g, pos, n);
	return n;
}

pr_err *pr_graph_append(pr_graph *g, pr_node *n)
{
	pr_err *e = link_check(g, n);
	if (e)
		return e;
	list_append(g, n);
	return NULL;
}

/* A name new to the program is bound nowhere: it needs no index lookup,
 * only its binding; one seen before goes the general way. */
pr_err *pr_graph_append_named(pr_graph *g, pr_node *n, const char *s, size_t len, uint32_t h)
{
	PR_ASSERT(n->graph == g && !n->name && !(n->mem & (NODE_LINKED | NODE_HEAP)));
	strtab *t = strings_of(g->program);
	strtab_fit(t, 1);
	sslot *e = strtab_probe(t, s, len, h);
	if (*e) {
		n->name = sslot_str(*e);
		return pr_graph_append(g, n);
	}
	n->name = strtab_put(t, e, s, len, h);
	str_head_of(n->name)->bound = n;
	n->mem |= NODE_LINKED;
	g->n_nodes++;
	list_append(g, n);
	return NULL;
}

pr_err *pr_graph_insert_before(pr_node *pos, pr_node *n)
{
	pr_graph *g = pos->graph;
	pr_err *e = link_check(g, n);
	if (e)
		return e;
	list_insert_before(g, pos, n);
	return NULL;
}

pr_err *pr_graph_insert_after(pr_node *pos, pr_node *n)
{
	if (pos->next)
		return pr_graph_insert_before(pos->next, n);
	return pr_graph_append(pos->graph, n);
}

void pr_graph_erase(pr_node *n)
{
	pr_graph *g = n->graph;
	PR_ASSERT(n->n_uses == 0);
	if (n->mem & NODE_LINKED) {
		name_remove(g, n);
		if (n->prev)
			n->prev->next = n->next;
		else
			g->first = n->next;
		if (n->next)
			n->next->prev = n->prev;
		else
			g->last = n->prev;
		g->n_nodes--;
		g->store->n_heap -= n->mem & NODE_HEAP ? 1 : 0;
	}
	node_free(n);
}

void pr_node_replace_uses_except(pr_node *old, pr_node *new_value, const pr_node *except)
{
	PR_ASSERT(old != new_value);
	int kept = 0;
	pr_use *uses = old->uses;
	int n = old->n_uses;
	/* Move the use records over in one pass instead of one removal each. */
	for (int i = 0; i < n; i++) {
		if (pr_use_user(&uses[i]) == except) {
			uses[i].arg->use_index = kept;
			uses[kept++] = uses[i];
			continue;
		}
		uses[i].arg->u.value = new_value;
		add_use(new_value, uses[i].arg);
	}
	old->n_uses = kept;
}

void pr_node_replace_all_uses(pr_node *old, pr_node *new_value)
{
	pr_node_replace_uses_except(old, new_value, NULL);
}

/* ---- programs ------------------------------------------------------------ */

static program_index *index_of(const pr_program *p)
{
	return p->index;
}

static void *named_find(named *table, const char *name)
{
	named *e = NULL;
	HASH_FIND_STR(table, name, e);
	return e ? e->item : NULL;
}

static void named_add(named **table, const char *name, void *item)
{
	named *e = pr_xmalloc(sizeof *e);
	e->name = name;
	e->item = item;
	HASH_ADD_KEYPTR(hh, *table, e->name, strlen(e->name), e);
}

static void named_clear(named **table)
{
	named *e, *tmp;
	HASH_ITER(hh, *table, e, tmp) {
		HASH_DEL(*table, e);
		free(e);
	}
}

pr_program *pr_program_new(void)
{
	pr_program *p = pr_xcalloc(1, sizeof *p);
	p->index = pr_xcalloc(1, sizeof(program_index));
	return p;
}

static void delegate_free(pr_delegate *d)
{
	for (int i = 0; i < d->n_specs; i++) {
		free(d->specs[i].key);
		free(d->specs[i].value);
	}
	free(d->specs);
	graph_free(d->body);
	free(d->name);
	free(d);
}

void pr_program_free(pr_program *p)
{
	if (!p)
		return;
	program_index *ix = index_of(p);
	named_clear(&ix->schemas);
	named_clear(&ix->delegates);
	named_clear(&ix->methods);
	named_clear(&ix->blobs);
	for (int i = 0; i < p->n_methods; i++)
		graph_free(p->methods[i]);
	free(p->methods);
	for (int i = 0; i < p->n_delegates; i++)
		delegate_free(p->delegates[i]);
	free(p->delegates);
	strtab_free(&ix->strings);   /* after the graphs: their nodes' names */
	free(ix);
	for (int i = 0; i < p->n_schemas; i++)
		pr_schema_free(p->schemas[i]);
	free(p->schemas);
	for (pr_blob *b = p->blobs, *next; b; b = next) {
		next = b->next;
		if (!b->borrowed)
			free((void *)b->bytes);
		free(b->name);
		free(b);
	}
	if (p->mapping)
		munmap(p->mapping, p->mapping_size);
	free(p);
}

pr_err *pr_program_add_schema(pr_program *p, pr_schema *s)
{
	if (pr_program_find_schema(p, s->full_name))
		return pr_err_new("op %s is declared twice", s->full_name);
	PR_GROW(p->schemas, p->n_schemas, p->cap_schemas);
	p->schemas[p->n_schemas++] = s;
	named_add(&index_of(p)->schemas, s->full_name, s);
	return NULL;
}

pr_schema *pr_program_find_schema(const pr_program *p, const char *full_name)
{
	return named_find(index_of(p)->schemas, full_name);
}

/* The schema already declared with exactly this text, found without parsing
 * it: passes declare the same copy op once per copy they insert. */
static pr_schema *declared_as(const pr_program *p, const char *text)
{
	const char *paren = strchr(text, '(');
	if (!paren || paren - text >= 256)
		return NULL;
	char name[256];
	memcpy(name, text, (size_t)(paren - text));
	name[paren - text] = 0;
	pr_schema *old = pr_program_find_schema(p, name);
	return old && old->text && !strcmp(old->text, text) ? old : NULL;
}

pr_err *pr_program_declare_op(pr_program *p, const char *text, pr_schema **out)
{
	if ((*out = declared_as(p, text)))
		return NULL;
	pr_schema *s = NULL;
	size_t col = 0;
	pr_err *e = pr_schema_parse(text, strlen(text), &s, &col);
	if (e)
		return pr_err_wrap(e, "op schema '%s', column %zu", text, col + 1);
	pr_schema *old = pr_program_find_schema(p, s->full_name);
	if (old) {
		bool same = !strcmp(old->text, s->text);
		char *name = pr_xstrdup(s->full_name);
		pr_schema_free(s);
		if (!same) {
			e = pr_err_new("op %s is already declared as '%s', not '%s'", name,
				       old->text, text);
			free(name);
			return e;
		}
		free(name);
		*out = old;
		return NULL;
	}
	e = pr_program_add_schema(p, s);
	if (e) {
		pr_schema_free(s);
		return e;
	}
	*out = s;
	return NULL;
}

pr_err *pr_program_add_blob(pr_program *p, const char *name, const uint8_t *bytes,
			    int64_t size, bool borrowed, pr_blob **out)
{
	if (pr_program_find_blob(p, name))
		return pr_err_new("blob @%s is defined twice", name);
	pr_blob *b = pr_xcalloc(1, sizeof *b);
	b->name = pr_xstrdup(name);
	b->size = size;
	b->borrowed = borrowed;
	if (borrowed) {
		b->bytes = bytes;
	} else {
		uint8_t *copy = pr_xmalloc((size_t)size);
		if (size)
			memcpy(copy, bytes, (size_t)size);
		b->bytes = copy;
	}
	program_index *ix = index_of(p);
	if (ix->last_blob)
		ix->last_blob->next = b;
	else
		p->blobs = b;
	ix->last_blob = b;
	named_add(&ix->blobs, b->name, b);
	if (out)
		*out = b;
	return NULL;
}

pr_blob *pr_program_find_blob(const pr_program *p, const char *name)
{
	return named_find(index_of(p)->blobs, name);
}

pr_err *pr_program_add_delegate(pr_program *p, const char *name, pr_delegate **out)
{
	if (pr_program_find_delegate(p, name))
		return pr_err_new("delegate @%s is defined twice", name);
	pr_delegate *d = pr_xcalloc(1, sizeof *d);
	d->name = pr_xstrdup(name);
	d->body = graph_new(p, name);
	d->body->delegate = d;
	PR_GROW(p->delegates, p->n_delegates, p->cap_delegates);
	p->delegates[p->n_delegates++] = d;
	named_add(&index_of(p)->delegates, d->name, d);
	*out = d;
	return NULL;
}

pr_delegate *pr_program_find_delegate(const pr_program *p, const char *name)
{
	return named_find(index_of(p)->delegates, name);
}

void pr_delegate_set_spec(pr_delegate *d, const char *key, const char *value)
{
	d->device_known = false;
	for (int i = 0; i < d->n_specs; i++) {
		if (!strcmp(d->specs[i].key, key)) {
			free(d->specs[i].value);
			d->specs[i].value = pr_xstrdup(value);
			return;
		}
	}
	d->specs = pr_xrealloc(d->specs, (size_t)(d->n_specs + 1) * sizeof *d->specs);
	d->specs[d->n_specs].key = pr_xstrdup(key);
	d->specs[d->n_specs].value = pr_xstrdup(value);
	d->n_specs++;
}

bool pr_delegate_remove_spec(pr_delegate *d, const char *key)
{
	d->device_known = false;
	for (int i = 0; i < d->n_specs; i++) {
		if (strcmp(d->specs[i].key, key))
			continue;
		free(d->specs[i].key);
		free(d->specs[i].value);
		memmove(&d->specs[i], &d->specs[i + 1], (size_t)(d->n_specs - i - 1) * sizeof *d->specs);
		d->n_specs--;
		return true;
	}
	return false;
}

const char *pr_delegate_spec(const pr_delegate *d, const char *key)
{
	for (int i = 0; i < d->n_specs; i++)
		if (!strcmp(d->specs[i].key, key))
			return d->specs[i].value;
	return NULL;
}

pr_err *pr_program_add_method(pr_program *p, const char *name, pr_graph **out)
{
	if (pr_program_find_method(p, name))
		return pr_err_new("method @%s is defined twice", name);
	pr_graph *g = graph_new(p, name);
	PR_GROW(p->methods, p->n_methods, p->cap_methods);
	p->methods[p->n_methods++] = g;
	named_add(&index_of(p)->methods, g->name, g);
	*out = g;
	return NULL;
}

pr_graph *pr_program_find_method(const pr_program *p, const char *name)
{
	return named_find(index_of(p)->methods, name);
}
