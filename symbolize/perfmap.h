/* perf map files: the names a JIT writes for its code (perfmap.c). */
#ifndef AP_PERFMAP_H
#define AP_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

struct ap_perfmap_sym {
	uint64_t start, size;
	char *name;
};

struct ap_perfmap {
	struct ap_perfmap_sym *syms;	/* sorted by start */
	size_t n;
};

/* /tmp/perf-<pid>.map */
void ap_perfmap_path(char *out, size_t outlen, uint64_t pid);

/* Reads the map at path if it is a regular file modified at
 * not_before_s (seconds since the epoch) or later. Returns 0, or -1 (pm
 * empty) when there is none to read. Lines that are not "START SIZE name"
 * are skipped. */
int ap_perfmap_load(struct ap_perfmap *pm, const char *path, uint64_t not_before_s);

/* The name of the code holding addr, or NULL. */
const char *ap_perfmap_find(const struct ap_perfmap *pm, uint64_t addr);

void ap_perfmap_release(struct ap_perfmap *pm);

#endif
