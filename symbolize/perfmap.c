/* perf map files (/tmp/perf-PID.map): the names a JIT gives its code, one
 * line each, "START SIZE name" with START and SIZE in hex (the format
 * perf's report reads: tools/perf/Documentation/jit-interface.txt). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "perfmap.h"
#include "search.h"

static int sym_cmp(const void *a, const void *b)
{
	const struct ap_perfmap_sym *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

void ap_perfmap_path(char *out, size_t outlen, uint64_t pid)
{
	snprintf(out, outlen, "/tmp/perf-%" PRIu64 ".map", pid);
}

int ap_perfmap_load(struct ap_perfmap *pm, const char *path, uint64_t not_before_s)
{
	memset(pm, 0, sizeof(*pm));
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	struct stat st;
	/* only a regular file written since the process started: a map left
	 * by an earlier process of the same pid names other code */
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_mtime < not_before_s) {
		fclose(f);
		return -1;
	}
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = 0;
		char *p = line, *e;
		errno = 0;
		uint64_t start = strtoull(p, &e, 16);
		if (e == p || *e != ' ' || errno)
			continue;
		p = e + 1;
		uint64_t size = strtoull(p, &e, 16);
		if (e == p || *e != ' ' || errno || !size || start + size < start)
			continue;
		p = e + 1;
		if (!*p)
			continue;
		if (pm->n == alloc) {
			alloc = alloc ? 2 * alloc : 64;
			pm->syms = realloc(pm->syms, alloc * sizeof(*pm->syms));
			if (!pm->syms)
				abort(); /* out of memory, as ap_xmalloc */
		}
		pm->syms[pm->n].start = start;
		pm->syms[pm->n].size = size;
		pm->syms[pm->n].name = strdup(p);
		if (!pm->syms[pm->n].name)
			abort();
		pm->n++;
	}
	free(line);
	fclose(f);
	qsort(pm->syms, pm->n, sizeof(*pm->syms), sym_cmp);
	return 0;
}

const char *ap_perfmap_find(const struct ap_perfmap *pm, uint64_t addr)
{
	/* the last symbol starting at or below addr; a later line of the
	 * same start (code replaced) wins, as sorting keeps no order: take
	 * the innermost range holding addr among those */
	size_t lo = AP_UPPER_BOUND(pm->syms, pm->n, start, addr);
	while (lo-- > 0) {
		const struct ap_perfmap_sym *s = &pm->syms[lo];
		if (addr - s->start < s->size)
			return s->name;
		if (addr - s->start > (UINT64_C(1) << 32))
			break; /* no JIT function is that long */
	}
	return NULL;
}

void ap_perfmap_release(struct ap_perfmap *pm)
{
	for (size_t i = 0; i < pm->n; i++)
		free(pm->syms[i].name);
	free(pm->syms);
	memset(pm, 0, sizeof(*pm));
}
