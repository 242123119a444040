/* symbolize/debugcache.c: separate debug files kept decompressed, by
 * build-id (debugcache.h). */
#include "debugcache.h"
#include "ap_symbolize.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A file the cache has not used for this long goes (its program
 * upgraded, say) when another is written. */
#define UNUSED_DAYS 30

static unsigned n_read, n_written;

void ap_debugcache_counts(unsigned *read, unsigned *written)
{
	*read = n_read;
	*written = n_written;
}

/* The cache's directory, "" when there is none (ALLOCPROF_DEBUG_CACHE=0,
 * no home). */
static const char *cache_dir(void)
{
	static char dir[PATH_MAX];
	static bool known;
	if (known)
		return dir;
	known = true;
	const char *off = getenv("ALLOCPROF_DEBUG_CACHE");
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n = -1;
	if (off && !strcmp(off, "0"))
		n = -1;
	else if (xdg && xdg[0] == '/')
		n = snprintf(dir, sizeof(dir), "%s/allocprof/debug", xdg);
	else if (home && home[0] == '/')
		n = snprintf(dir, sizeof(dir), "%s/.cache/allocprof/debug", home);
	if (n < 0 || (size_t)n >= sizeof(dir) - 200)
		dir[0] = 0;
	return dir;
}

/* <cache>/<xx>/<rest>.debug of a build-id into out; false if no cache. */
static bool cache_path(const unsigned char *id, int len, char *out, size_t size)
{
	const char *dir = cache_dir();
	if (!dir[0] || len < 2 || len > 64)
		return false;
	size_t n = (size_t)snprintf(out, size, "%s/%02x/", dir, id[0]);
	for (int i = 1; i < len; i++)
		n += (size_t)snprintf(out + n, size - n, "%02x", id[i]);
	snprintf(out + n, size - n, ".debug");
	return true;
}

/* Whether the ELF file e has the build-id (id, len). */
static bool has_build_id(Elf *e, const unsigned char *id, int len)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		GElf_Nhdr nh;
		size_t off = 0, name_at, desc_at;
		while (d && (off = gelf_getnote(d, off, &nh, &name_at, &desc_at)) > 0)
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + name_at, "GNU", 4))
				return nh.n_descsz == (GElf_Word)len &&
				       !memcmp((char *)d->d_buf + desc_at, id, (size_t)len);
	}
	return false;
}

/* Whether the debug file e is worth keeping decompressed: DWARF sections
 * in SHF_COMPRESSED form, none in the older .zdebug form, and no
 * .gnu_debugaltlink (a dwz file named relative to where e is). */
static bool worth_keeping(Elf *e)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(e, &shstrndx) < 0)
		return false;
	bool compressed = false;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
		if (!name || !strncmp(name, ".zdebug", 7) || !strcmp(name, ".gnu_debugaltlink"))
			return false;
		compressed |= !strncmp(name, ".debug_", 7) && (sh.sh_flags & SHF_COMPRESSED);
	}
	return compressed;
}

static void make_dirs(const char *path)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		mkdir(p, 0755);
		*s = '/';
	}
}

/* Removes the files of the cache not used for UNUSED_DAYS (their times
 * are touched at each use). */
static void sweep(void)
{
	const char *dir = cache_dir();
	DIR *top = opendir(dir);
	if (!top)
		return;
	time_t old = time(NULL) - (time_t)UNUSED_DAYS * 86400;
	struct dirent *de;
	while ((de = readdir(top))) {
		if (strlen(de->d_name) != 2)
			continue;
		char sub[PATH_MAX + 8];
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		DIR *d = opendir(sub);
		struct dirent *f;
		while (d && (f = readdir(d))) {
			char p[PATH_MAX + 300];
			struct stat st;
			snprintf(p, sizeof(p), "%s/%s", sub, f->d_name);
			if (f->d_name[0] != '.' && lstat(p, &st) == 0 && S_ISREG(st.st_mode) &&
			    st.st_mtime < old)
				unlink(p);
		}
		if (d)
			closedir(d);
	}
	closedir(top);
}

/* Writes the debug file src (an open descriptor) to dst with its
 * compressed sections decompressed: a copy made beside dst, decompressed
 * in place by libelf, renamed over dst. */
static bool keep(int src, const char *dst)
{
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", dst, (long)getpid());
	make_dirs(dst);
	int out = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0)
		return false;
	bool ok = true;
	char buf[1 << 16];
	off_t at = 0;
	for (ssize_t n; ok && (n = pread(src, buf, sizeof(buf), at)) != 0; at += n)
		ok = n > 0 && write(out, buf, (size_t)n) == n;
	Elf *e = ok ? elf_begin(out, ELF_C_RDWR, NULL) : NULL;
	ok = e != NULL;
	Elf_Scn *scn = NULL;
	while (ok && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		ok = gelf_getshdr(scn, &sh) != NULL;
		if (ok && (sh.sh_flags & SHF_COMPRESSED))
			ok = elf_compress(scn, 0, 0) >= 0;
	}
	ok = ok && elf_update(e, ELF_C_WRITE) >= 0;
	if (e)
		elf_end(e);
	ok = close(out) == 0 && ok && rename(tmp, dst) == 0;
	if (!ok)
		unlink(tmp);
	return ok;
}

int ap_debugcache_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
				 Dwarf_Addr base, const char *file_name,
				 const char *debuglink_file, GElf_Word debuglink_crc,
				 char **debuginfo_file_name)
{
	const unsigned char *id;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &id, &vaddr);
	char kept[PATH_MAX];
	bool cached = len > 0 && cache_path(id, len, kept, sizeof(kept));
	elf_version(EV_CURRENT);
	if (cached) {
		int fd = open(kept, O_RDONLY | O_CLOEXEC);
		Elf *e = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
		bool same = e && has_build_id(e, id, len);
		if (e)
			elf_end(e);
		if (same) {
			futimens(fd, NULL); /* used now: not swept */
			*debuginfo_file_name = strdup(kept);
			n_read++;
			return fd;
		}
		if (fd >= 0)
			close(fd);
	}
	int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
					      debuglink_file, debuglink_crc,
					      debuginfo_file_name);
	if (fd < 0 || !cached)
		return fd;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	bool worth = e && has_build_id(e, id, len) && worth_keeping(e);
	if (e)
		elf_end(e);
	if (!worth || !keep(fd, kept))
		return fd;
	n_written++;
	sweep();
	int k = open(kept, O_RDONLY | O_CLOEXEC);
	if (k < 0)
		return fd;
	close(fd);
	free(*debuginfo_file_name);
	*debuginfo_file_name = strdup(kept);
	return k;
}
