/* Prints the call sites of every allocation in a trace, one line per site:
 * "COUNT FUNC FILE:LINE" (file as basename), most allocations first; the
 * symbolizer's warnings go to stderr. For the end-to-end test that
 * records testdata/inline and testdata/cxx.
 *
 * usage: callsites TRACE
 *
 * With --pcs MODULE: every distinct PC of the trace's stacks that is in a
 * module whose path ends in "/MODULE", one block each, by offset:
 * "MODULE_PATH 0xADDR" (ADDR = pc - 1 - bias, what addr2line is given),
 * then the PC's frames innermost first, "FUNC<TAB>FILE<TAB>LINE" (FUNC the
 * whole demangled name, FILE "??" when unknown), then an empty line: what
 * `addr2line -i -f -C -e MODULE_PATH ADDR` prints, for tests/symbolize/
 * toolchains.py to compare. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ap_symbolize.h"
#include "ap_trace.h"

struct site {
	const char *func, *file;
	int line;
	size_t count;
};

static int site_cmp(const void *a, const void *b)
{
	const struct site *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	int c = strcmp(x->func, y->func);
	return c ? c : x->line - y->line;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void print_pcs(struct ap_symbolizer *s, const struct ap_trace *t, const char *module)
{
	uint64_t *pcs = NULL;
	size_t n = 0, alloc = 0;
	size_t mlen = strlen(module);
	for (size_t i = 1; i < t->nstacks; i++)
		for (uint32_t d = 0; d < t->stacks[i].depth; d++) {
			uint64_t pc = t->stacks[i].pcs[d];
			const struct ap_mapping *m = ap_trace_mapping_for(t, pc);
			size_t plen = m ? strlen(m->path) : 0;
			if (!m || plen <= mlen || strcmp(m->path + plen - mlen, module) ||
			    m->path[plen - mlen - 1] != '/')
				continue;
			AP_ALLOC_GROW(pcs, n + 1, alloc);
			pcs[n++] = pc;
		}
	if (n)
		qsort(pcs, n, sizeof(*pcs), u64_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i && pcs[i] == pcs[i - 1])
			continue;
		const struct ap_mapping *m = ap_trace_mapping_for(t, pcs[i]);
		const struct ap_frame *f;
		size_t nf = ap_sym_pc(s, pcs[i], &f);
		printf("%s 0x%llx\n", m->path, (unsigned long long)(pcs[i] - 1 - m->bias));
		for (size_t k = 0; k < nf; k++)
			printf("%s\t%s\t%d\n", f[k].full, f[k].file ? f[k].file : "??", f[k].line);
		printf("\n");
	}
	free(pcs);
}

int main(int argc, char **argv)
{
	const char *pcs_of = NULL;
	if (argc == 4 && !strcmp(argv[1], "--pcs")) {
		pcs_of = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: callsites [--pcs MODULE] TRACE\n");
		return 2;
	}
	struct ap_trace *t;
	struct ap_error err;
	if (ap_trace_read(argv[1], &t, &err, NULL, NULL)) {
		fprintf(stderr, "callsites: %s\n", err.msg);
		return 1;
	}
	if (ap_trace_load_events(t, &err) < 0) {
		fprintf(stderr, "callsites: %s\n", err.msg);
		return 1;
	}
	struct ap_symbolizer *s = ap_sym_new(t, NULL, &err);
	if (!s) {
		fprintf(stderr, "callsites: %s\n", err.msg);
		return 1;
	}
	for (const char *const *w = ap_sym_warnings(s); *w; w++)
		fprintf(stderr, "callsites: warning: %s\n", *w);
	if (pcs_of) {
		print_pcs(s, t, pcs_of);
		ap_sym_free(s);
		ap_trace_free(t);
		return 0;
	}

	/* call site per stack, then count events per site */
	struct site *sites = NULL;
	size_t nsites = 0, alloc = 0;
	size_t *site_of = calloc(t->nstacks ? t->nstacks : 1, sizeof(*site_of));
	struct ap_frame *fr = NULL;
	size_t n = 0, fralloc = 0;
	for (size_t i = 1; i < t->nstacks; i++) {
		size_t cs = ap_sym_stack(s, &t->stacks[i], &fr, &n, &fralloc);
		const char *func = n ? fr[cs].full : "(no stack)";
		const char *file = n && fr[cs].file ? strrchr(fr[cs].file, '/') : NULL;
		file = file ? file + 1 : (n && fr[cs].file ? fr[cs].file : "??");
		int line = n ? fr[cs].line : 0;
		size_t j;
		for (j = 0; j < nsites; j++)
			if (!strcmp(sites[j].func, func) && !strcmp(sites[j].file, file) &&
			    sites[j].line == line)
				break;
		if (j == nsites) {
			AP_ALLOC_GROW(sites, nsites + 1, alloc);
			sites[nsites++] = (struct site){ func, file, line, 0 };
		}
		site_of[i] = j;
	}
	for (size_t e = 0; e < t->nev; e++)
		if (t->ev[e].type == AP_EV_ALLOC && t->ev[e].stack && t->ev[e].stack < t->nstacks)
			sites[site_of[t->ev[e].stack]].count++;
	qsort(sites, nsites, sizeof(*sites), site_cmp);
	for (size_t j = 0; j < nsites; j++)
		if (sites[j].count)
			printf("%zu %s %s:%d\n", sites[j].count, sites[j].func, sites[j].file, sites[j].line);
	free(fr);
	free(site_of);
	free(sites);
	ap_sym_free(s);
	ap_trace_free(t);
	return 0;
}
