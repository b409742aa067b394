/* device_ids.c: the process-wide table of interned devices that specs name
 * by id (pr_device_intern, pr_device_of).
 *
 * A spec names two devices (where its value lives and the arena it is
 * planned in) and a big program has millions of specs, so a spec holds a
 * 4-byte id instead of two 20-byte pr_device values, as it holds pointers to
 * interned layouts instead of arrays (layouts.c). Like a layout, a device
 * stays in the table until exit, so an id stays valid in any program.
 *
 * Storage: the devices sit in chunks of 64, 128, 256, ... entries that never
 * move, so pr_device_of is an index computation and two loads, with no lock:
 * a device is written before the count that makes its id valid is published
 * (release), and a reader loads the count first (acquire). An open-
 * addressing hash table (linear probing, at most half full) maps a device
 * to its id under one mutex. Id 0 is the host and is never looked up: most
 * specs are on the host. Each thread remembers the last device it interned,
 * so a loader reading the same device again and again takes no lock.
 *
 * A destructor frees the chunks at exit (leak checkers see nothing left) and
 * starts a new generation, which empties every thread's memo. */
#include "passrun/device.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "passrun/error.h"

#define FIRST_CHUNK_LOG2 6
#define CHUNKS 26      /* 64 * (2^26 - 1) ids: more than 32-bit ids reach */

static struct {
	pthread_mutex_t lock;
	uint32_t *slots;       /* id + 1; 0 is empty */
	size_t cap;            /* a power of two, or 0 */
} table = {.lock = PTHREAD_MUTEX_INITIALIZER};

static _Atomic(pr_device *) chunks[CHUNKS];
static _Atomic uint32_t n_ids = 1;   /* id 0, the host, is always there */
static const pr_device host = {.type = "cpu", .index = -1};
/* What an id nobody gave names: a type no one can register (not a name
 * pr_device_parse reads), so anything that must place or run it refuses. */
static const pr_device invalid = {.type = "<invalid id>", .index = 0};

static _Atomic unsigned generation = 1;
static _Thread_local pr_device memo_device;
static _Thread_local pr_device_id memo_id;
static _Thread_local unsigned memo_generation;

/* Chunk c holds ids 64 * (2^c - 1) up to 64 * (2^(c+1) - 1): with id + 64,
 * c is the position of its top bit above the first chunk's. */
static unsigned chunk_of(pr_device_id id)
{
	uint64_t k = (uint64_t)id + (1u << FIRST_CHUNK_LOG2);
	return (unsigned)(63 - __builtin_clzll(k)) - FIRST_CHUNK_LOG2;
}

static pr_device *entry(pr_device_id id)
{
	unsigned c = chunk_of(id);
	size_t at = (size_t)((uint64_t)id + (1u << FIRST_CHUNK_LOG2) - ((uint64_t)1 << (c + FIRST_CHUNK_LOG2)));
	return atomic_load_explicit(&chunks[c], memory_order_relaxed) + at;
}

static uint64_t device_hash(const pr_device *d)
{
	uint64_t h = 0xcbf29ce484222325u ^ (uint64_t)(uint32_t)d->index;
	for (int i = 0; i < PR_DEVICE_TYPE_MAX && d->type[i]; i++)
		h = (h ^ (unsigned char)d->type[i]) * 0x100000001b3u;
	return h ^ (h >> 29);
}

/* The slot that holds d's id, or the empty one where it belongs. */
static uint32_t *find_slot(const pr_device *d, uint64_t hash)
{
	size_t mask = table.cap - 1;
	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		uint32_t *s = &table.slots[i];
		if (!*s || pr_device_same_spelling(entry(*s - 1), d))
			return s;
	}
}

static void grow_slots(void)
{
	uint32_t *old = table.slots;
	size_t old_cap = table.cap;
	table.cap = old_cap ? 2 * old_cap : 64;
	table.slots = pr_xcalloc(table.cap, sizeof *table.slots);
	for (size_t i = 0; i < old_cap; i++)
		if (old[i])
			*find_slot(entry(old[i] - 1), device_hash(entry(old[i] - 1))) = old[i];
	free(old);
}

/* A new id for d (the lock held): its entry is written, then the count. */
static pr_device_id add_locked(const pr_device *d)
{
	pr_device_id id = atomic_load_explicit(&n_ids, memory_order_relaxed);
	PR_ASSERT(id < UINT32_MAX);
	unsigned c = chunk_of(id);
	if (!atomic_load_explicit(&chunks[c], memory_order_relaxed))
		atomic_store_explicit(&chunks[c],
				      pr_xmalloc(sizeof(pr_device) << (c + FIRST_CHUNK_LOG2)),
				      memory_order_relaxed);
	pr_device *e = entry(id);
	memset(e, 0, sizeof *e);   /* the bytes after the type's 0 too: hashing stops there */
	memcpy(e->type, d->type, strnlen(d->type, PR_DEVICE_TYPE_MAX - 1));
	e->index = d->index;
	atomic_store_explicit(&n_ids, id + 1, memory_order_release);
	return id;
}

static pr_device_id intern_locked(const pr_device *d)
{
	pthread_mutex_lock(&table.lock);
	if (2 * (size_t)atomic_load_explicit(&n_ids, memory_order_relaxed) > table.cap)
		grow_slots();
	uint32_t *s = find_slot(d, device_hash(d));
	if (!*s)
		*s = add_locked(d) + 1;
	pr_device_id id = *s - 1;
	pthread_mutex_unlock(&table.lock);
	return id;
}

pr_device_id pr_device_intern(pr_device d)
{
	if (pr_device_is_host(d))
		return PR_DEVICE_ID_HOST;
	unsigned gen = atomic_load_explicit(&generation, memory_order_relaxed);
	if (memo_generation == gen && pr_device_same_spelling(&memo_device, &d))
		return memo_id;   /* the memo holds a canonical device: d is one too */
	d = pr_device_canonical(d);
	pr_device_id id = intern_locked(&d);
	memo_device = d;
	memo_id = id;
	memo_generation = gen;
	return id;
}

bool pr_device_id_valid(pr_device_id id)
{
	return id < atomic_load_explicit(&n_ids, memory_order_acquire);
}

const pr_device *pr_device_of(pr_device_id id)
{
	if (id == PR_DEVICE_ID_HOST)
		return &host;
	return pr_device_id_valid(id) ? entry(id) : &invalid;
}

__attribute__((destructor)) static void device_ids_free(void)
{
	pthread_mutex_lock(&table.lock);
	for (unsigned c = 0; c < CHUNKS; c++)
		free(atomic_exchange(&chunks[c], NULL));
	free(table.slots);
	table.slots = NULL;
	table.cap = 0;
	atomic_store(&n_ids, 1);
	atomic_fetch_add(&generation, 1);
	pthread_mutex_unlock(&table.lock);
}
