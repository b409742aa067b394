/* layouts.c: the process-wide table of interned layouts (a rank, a shape and
 * strides) that every pr_spec points at.
 *
 * A spec is a value: it is copied between programs, onto callers' stacks and
 * into runtime structures, so the arrays it points at cannot belong to one
 * program. As LLVM's context uniques types, this table keeps one copy of each
 * distinct layout for the life of the process: pr_layout_intern hands out the
 * copy's address, so specs with the same dims share their pointers and a
 * spec costs two pointers instead of two PR_MAX_RANK arrays.
 *
 * Storage: a layout's 2 * rank numbers (the shape, then the strides) sit in
 * fixed-size chunks that never move or shrink, so an address stays valid
 * until exit. An open-addressing hash table (linear probing, at most half
 * full, doubled when it is) maps the dims to their copy; it holds addresses
 * only and may be reallocated freely. Rank 0 needs no storage: it gets the
 * address of a static empty array.
 *
 * One mutex guards both (the Python API calls in from several threads with
 * the GIL released). A program has few distinct layouts and a loader asks
 * for the same ones again and again, so each thread first looks in a small
 * cache of its own (the addresses it was last given, by hash), which needs
 * no lock: what it points at never changes.
 *
 * A destructor frees everything at exit, so leak checkers see no memory
 * left behind; it resets the table and moves to a new generation, which
 * empties every thread's cache, so a later call (another destructor's) still
 * works, at the price of that memory. */
#include "passrun/program.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Numbers per chunk: room for 256 layouts of the largest rank. */
#define CHUNK_DIMS (256 * 2 * PR_MAX_RANK)

typedef struct chunk {
	struct chunk *prev;
	size_t used;            /* numbers of dims taken */
	int64_t dims[CHUNK_DIMS];
} chunk;

typedef struct slot {
	const int64_t *dims;    /* NULL: empty */
	uint64_t hash;
	int rank;
} slot;

static struct {
	pthread_mutex_t lock;
	slot *slots;
	size_t cap;             /* a power of two, or 0 */
	size_t n;               /* layouts held */
	chunk *last;            /* the chunk being filled; older ones behind it */
} table = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const int64_t no_dims[1];

/* Entries of another generation than the table's are empty. */
#define RECENT 16
static _Atomic unsigned generation = 1;
static _Thread_local slot recent[RECENT];
static _Thread_local unsigned recent_generation[RECENT];

/* The rank and every number take part, so that a shape and its strides
 * swapped (or a transpose) land in different slots. */
static uint64_t dims_hash(int rank, const int64_t *shape, const int64_t *strides)
{
	uint64_t h = (uint64_t)rank * 0x9e3779b97f4a7c15u;
	for (int i = 0; i < rank; i++) {
		h = (h ^ (uint64_t)shape[i]) * 0x100000001b3u;
		h = (h ^ (uint64_t)strides[i]) * 0x100000001b3u;
	}
	h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdu;   /* so the low bits (the slot) */
	return h ^ (h >> 33);                       /* depend on every bit */
}

static bool slot_holds(const slot *e, uint64_t hash, int rank, const int64_t *shape,
		       const int64_t *strides)
{
	if (e->hash != hash || e->rank != rank)
		return false;
	for (int i = 0; i < rank; i++)   /* a few numbers: no memcmp call */
		if (e->dims[i] != shape[i] || e->dims[rank + i] != strides[i])
			return false;
	return true;
}

/* The slot that holds the layout, or the empty one where it belongs. */
static slot *find_slot(uint64_t hash, int rank, const int64_t *shape, const int64_t *strides)
{
	size_t mask = table.cap - 1;
	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		slot *e = &table.slots[i];
		if (!e->dims || slot_holds(e, hash, rank, shape, strides))
			return e;
	}
}

static void grow_slots(void)
{
	slot *old = table.slots;
	size_t old_cap = table.cap;
	table.cap = old_cap ? 2 * old_cap : 1024;
	table.slots = pr_xcalloc(table.cap, sizeof *table.slots);
	for (size_t i = 0; i < old_cap; i++) {
		if (!old[i].dims)
			continue;
		size_t mask = table.cap - 1, j = old[i].hash & mask;
		while (table.slots[j].dims)
			j = (j + 1) & mask;
		table.slots[j] = old[i];
	}
	free(old);
}

/* Room for n numbers that will never move. */
static int64_t *take_dims(size_t n)
{
	if (!table.last || table.last->used + n > CHUNK_DIMS) {
		chunk *c = pr_xmalloc(sizeof *c);
		c->prev = table.last;
		c->used = 0;
		table.last = c;
	}
	int64_t *d = table.last->dims + table.last->used;
	table.last->used += n;
	return d;
}

static const int64_t *intern_locked(uint64_t hash, int rank, const int64_t *shape,
				    const int64_t *strides)
{
	pthread_mutex_lock(&table.lock);
	if (2 * (table.n + 1) > table.cap)
		grow_slots();
	slot *e = find_slot(hash, rank, shape, strides);
	if (!e->dims) {
		int64_t *d = take_dims(2 * (size_t)rank);
		memcpy(d, shape, sizeof(int64_t) * (size_t)rank);
		memcpy(d + rank, strides, sizeof(int64_t) * (size_t)rank);
		*e = (slot){.dims = d, .hash = hash, .rank = rank};
		table.n++;
	}
	const int64_t *dims = e->dims;
	pthread_mutex_unlock(&table.lock);
	return dims;
}

const int64_t *pr_layout_intern(int rank, const int64_t *shape, const int64_t *strides)
{
	PR_ASSERT(rank >= 0 && rank <= PR_MAX_RANK);
	if (rank == 0)
		return no_dims;
	uint64_t hash = dims_hash(rank, shape, strides);
	unsigned gen = atomic_load_explicit(&generation, memory_order_relaxed);
	size_t r = hash % RECENT;
	if (recent_generation[r] == gen && slot_holds(&recent[r], hash, rank, shape, strides))
		return recent[r].dims;
	const int64_t *dims = intern_locked(hash, rank, shape, strides);
	recent[r] = (slot){.dims = dims, .hash = hash, .rank = rank};
	recent_generation[r] = gen;
	return dims;
}

size_t pr_layout_count(void)
{
	pthread_mutex_lock(&table.lock);
	size_t n = table.n;
	pthread_mutex_unlock(&table.lock);
	return n;
}

__attribute__((destructor)) static void layouts_free(void)
{
	pthread_mutex_lock(&table.lock);
	while (table.last) {
		chunk *c = table.last;
		table.last = c->prev;
		free(c);
	}
	free(table.slots);
	table.slots = NULL;
	table.cap = table.n = 0;
	atomic_fetch_add(&generation, 1);
	pthread_mutex_unlock(&table.lock);
}
