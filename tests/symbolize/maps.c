/* Describes the loaded modules the way the sampler records them (path,
 * load bias, PT_LOAD segments, GNU build-id read from memory), for tests
 * that build an in-memory trace of their own process. */
#include "symtest_maps.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ap_util.h"

static void read_build_id(struct ap_mapping *m, const struct dl_phdr_info *info,
			  const ElfW(Phdr) *ph)
{
	const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
	const char *end = p + ph->p_memsz;
	while (p + sizeof(ElfW(Nhdr)) <= end) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
		const char *name = p + sizeof(*nh);
		const char *desc = name + ((nh->n_namesz + 3) & ~3u);
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
		    !memcmp(name, "GNU", 4) && nh->n_descsz <= sizeof(m->build_id)) {
			memcpy(m->build_id, desc, nh->n_descsz);
			m->build_id_len = nh->n_descsz;
			return;
		}
		p = desc + ((nh->n_descsz + 3) & ~3u);
	}
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ap_trace *t = arg;
	char path[4096];
	if (!info->dlpi_name[0]) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
		if (n < 0)
			return 0;
		path[n] = '\0';
	} else if (info->dlpi_name[0] == '/') {
		snprintf(path, sizeof(path), "%s", info->dlpi_name);
	} else {
		return 0;	/* linux-vdso.so.1: no file, the sampler skips it */
	}
	t->maps = ap_xrealloc(t->maps, (t->nmaps + 1) * sizeof(*t->maps));
	struct ap_mapping *m = &t->maps[t->nmaps++];
	memset(m, 0, sizeof(*m));
	m->bias = info->dlpi_addr;
	m->path = ap_xstrdup(path);
	m->start = UINT64_MAX;
	m->segs = ap_xcalloc(info->dlpi_phnum, sizeof(*m->segs));
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_NOTE && !m->build_id_len)
			read_build_id(m, info, ph);
		if (ph->p_type != PT_LOAD)
			continue;
		m->segs[m->nsegs++] = (struct ap_segment){ ph->p_vaddr, ph->p_memsz,
							   ph->p_offset, ph->p_flags };
		if (m->bias + ph->p_vaddr < m->start)
			m->start = m->bias + ph->p_vaddr;
		if (m->bias + ph->p_vaddr + ph->p_memsz > m->end)
			m->end = m->bias + ph->p_vaddr + ph->p_memsz;
	}
	return 0;
}

void symtest_maps(struct ap_trace *t)
{
	dl_iterate_phdr(add_module, t);
}

void symtest_maps_free(struct ap_trace *t)
{
	for (size_t i = 0; i < t->nmaps; i++) {
		free(t->maps[i].path);
		free(t->maps[i].segs);
	}
	free(t->maps);
	t->maps = NULL;
	t->nmaps = 0;
}

struct ap_mapping *symtest_maps_copy(const struct ap_trace *t)
{
	struct ap_mapping *c = ap_xcalloc(t->nmaps, sizeof(*c));
	for (size_t i = 0; i < t->nmaps; i++) {
		c[i] = t->maps[i];
		c[i].path = ap_xstrdup(t->maps[i].path);
		c[i].segs = ap_xcalloc(t->maps[i].nsegs ? t->maps[i].nsegs : 1, sizeof(*c[i].segs));
		memcpy(c[i].segs, t->maps[i].segs, t->maps[i].nsegs * sizeof(*c[i].segs));
	}
	return c;
}

int symtest_site_line(const char *file, const char *name)
{
	char marker[128], line[1024];
	int mlen = snprintf(marker, sizeof(marker), "SITE:%s", name);
	FILE *f = fopen(file, "r");
	if (!f)
		return -1;
	int no = 0, found = -1;
	while (found < 0 && fgets(line, sizeof(line), f)) {
		no++;
		/* the marker is followed by a blank or ends the line */
		for (const char *p = strstr(line, marker); p; p = strstr(p + 1, marker))
			if (p[mlen] == ' ' || p[mlen] == '\n' || p[mlen] == '\0')
				found = no;
	}
	fclose(f);
	return found;
}
