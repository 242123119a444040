/* `allocprof try`: runs the program with the sites advise names served by
 * a real pool (pool/vpool.h, through liballocprof-try.so: try/preload.c)
 * and measures what the pool saves, against a baseline run with the same
 * library loaded and nothing pooled, and against the program run as it is
 * (no library), interleaved and repeated; prints it beside advise's
 * prediction (the advise code's, called here: the model, and its measured
 * replay unless --no-measure). Where the library alone moves the program
 * by half the saving or more, the baseline does not stand for the
 * program, and the verdict is what both comparisons agree on. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <jansson.h>
#include <libelf.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ap_advise.h"
#include "ap_symbolize.h"
#include "commands.h"
#include "render.h"
#include "try.h"
#include "views.h"

#define TRY_SO "liballocprof-try.so"
#define DEFAULT_RUNS 8

enum {
	OPT_SITE = AP_VOPT_FIRST_OWN,
	OPT_RUNS,
};

static void try_usage(FILE *f)
{
	fputs("usage: allocprof try [OPTIONS] TRACE [-- PROGRAM ARGS...]\n\n"
	      "Runs the program of TRACE (its recorded command line, or PROGRAM ARGS)\n"
	      "with the allocation sites advise says to pool (or is unsure of: its\n"
	      "replay faulted where the program did not, or the pool hands blocks\n"
	      "much larger than asked for) served by a real pool\n"
	      "(pool/vpool.h, with the cap or size classes advise measured, cycled as\n"
	      "its model cycles), with no change to the program: a preloaded library\n"
	      "recognizes the sites' call instructions. Runs a baseline (the same\n"
	      "library, every site looked up, nothing pooled), each pooled site in\n"
	      "turn and the program as it is (no library), interleaved and repeated,\n"
	      "checks that every run's standard output, standard error and exit\n"
	      "status are the baseline's, and prints per site what the pool did\n"
	      "(allocations, reallocs and bytes avoided, hits by source, held peak)\n"
	      "and the CPU time it saved with its 95% interval, against the baseline\n"
	      "and against the program, beside advise's prediction.\n"
	      "A saving whose interval spans zero is said to be within noise. Where\n"
	      "the library alone moves the program by half the saving or more, try\n"
	      "says so, and its verdict is what the two savings agree on.\n\n"
	      "options:\n"
	      "  --site SITE          pool this site: a site name as advise prints it (or\n"
	      "                       its --json `site`), its `site_id`, or a function that\n"
	      "                       names one site; repeatable (default: every site\n"
	      "                       advise says to pool, or is unsure of: replay\n"
	      "                       faults, larger blocks)\n"
	      "  --runs N             rounds of runs, each the baseline, every site and the\n"
	      "                       program once (default 8; 6 or more give a 95%\n"
	      "                       interval)\n"
	      "  --no-measure         advise's prediction from its model alone (no measured\n"
	      "                       replay first)\n"
	      "  --measure-time D     the measured replay's time budget (default 15s)\n"
	      "  --replay-cpus N|all  the CPUs the measured replay runs on (default: as many\n"
	      "                       as the recorded run could use; see allocprof-advise(1));\n"
	      "                       the program's own runs are not pinned\n"
	      "  --json               print JSON (see docs/json.md)\n"
	      "  -h, --help           show this help\n\n"
	      "The program's standard input is read once and given to every run. The\n"
	      "program must use glibc's malloc: try refuses another allocator in front\n"
	      "of it (LD_PRELOAD or the program's own), sanitizer builds and static\n"
	      "programs, and says so when a chosen site is never reached. See\n"
	      "allocprof-try(1) and docs/pool-model.md.\n",
	      f);
}

/* ---- the sites' call instructions ---- */

struct tsite {
	const struct ap_advise_site *as; /* advise's */
	uint64_t cap;
	uint64_t classes[AP_TRY_MAX_CLASSES];
	size_t nclasses;
	bool round_up;	      /* a request allocated at its class's size */
	struct ap_buf pcs;    /* "pc ..." lines, with the site's id left as %u */
	size_t npcs, skipped; /* call paths: pooled, and not poolable */
	size_t walked;	      /* call paths told by walking the stack */
};

/* True when pc's function is C++ operator new(size_t) or new[](size_t). */
static bool is_operator_new(struct ap_symbolizer *sym, uint64_t pc)
{
	const struct ap_frame *f;
	size_t n = ap_sym_pc(sym, pc, &f);
	if (!n)
		return false;
	const char *name = f[n - 1].full;
	return !strcmp(name, "operator new(unsigned long)") ||
	       !strcmp(name, "operator new[](unsigned long)");
}

/* " BUILDID OFFSET" of pc, or false when its module has no build-id. */
static bool add_module_pc(struct ap_buf *b, const struct ap_trace *t, uint64_t pc)
{
	const struct ap_mapping *m = ap_trace_mapping_for(t, pc);
	if (!m || !m->build_id_len)
		return false;
	ap_buf_addstr(b, " ");
	for (size_t i = 0; i < m->build_id_len; i++)
		ap_buf_addf(b, "%02x", m->build_id[i]);
	ap_buf_addf(b, " %llx", (unsigned long long)(pc - m->bias));
	return true;
}

/* A "pc" line (try.h) for the return address pc (and `inner`, the one
 * just inside it, for a frame), or false when a module has no build-id. */
static bool add_pc(struct ap_buf *b, const struct ap_trace *t, uint64_t pc, uint64_t inner,
		   unsigned kind, uint32_t depth, uint32_t id)
{
	struct ap_buf l = AP_BUF_INIT;
	ap_buf_addf(&l, "pc %u %u", id, kind);
	bool ok = add_module_pc(&l, t, pc);
	if (ok && kind >= AP_TRY_KIND_FRAME) {
		ap_buf_addf(&l, " %u", depth);
		ok = add_module_pc(&l, t, inner);
	}
	if (ok) {
		ap_buf_add(&l, "\n", 1);
		ap_buf_add(b, l.buf, l.len);
	}
	ap_buf_release(&l);
	return ok;
}

struct seen_pc {
	uint64_t pc, inner;
	unsigned kind;
	uint32_t depth;
};

/* Where a walk starts in st: the call of the allocator (0), or, when
 * that is libstdc++'s operator new, the call of operator new (1), which
 * is what the library sees: it interposes operator new itself, so
 * libstdc++'s never runs (std::string and std::vector growth, whose
 * frames the views drop, reach operator new from inside libstdc++). */
static uint32_t leaf_of(struct ap_symbolizer *sym, const struct ap_stack *st)
{
	return st->depth > 1 && is_operator_new(sym, st->pcs[0]) ? 1 : 0;
}

/* Adds the line unless it is there already; false when it cannot be. A
 * frame's depth is counted from the walk's start, `base`. */
static bool add_once(struct tsite *ts, struct seen_pc **seen, size_t *n, size_t *alloc,
		     const struct ap_trace *t, const struct ap_stack *st, uint32_t at,
		     uint32_t base, unsigned kind, uint32_t id)
{
	uint64_t pc = st->pcs[at], inner = kind >= AP_TRY_KIND_FRAME ? st->pcs[at - 1] : 0;
	uint32_t depth = kind >= AP_TRY_KIND_FRAME ? at - base : 0;
	for (size_t i = 0; i < *n; i++)
		if ((*seen)[i].pc == pc && (*seen)[i].inner == inner && (*seen)[i].kind == kind &&
		    (*seen)[i].depth == depth)
			return true;
	if (!add_pc(&ts->pcs, t, pc, inner, kind, depth, id))
		return false;
	AP_ALLOC_GROW(*seen, *n + 1, *alloc);
	(*seen)[(*n)++] = (struct seen_pc){pc, inner, kind, depth};
	return true;
}

/* The call instructions of site `ts` (the config's site `id`): the call
 * of the allocator in every stack the site map gives the site, or the
 * call of operator new when libstdc++'s new sits between. A site reached
 * through another library's function (via) is its frame at its depth
 * above that library's call of the allocator: the library walks the
 * stack for calls from there (try.h). */
static void site_pcs(struct tsite *ts, const struct ap_trace *t, const struct ap_site_map *m,
		     struct ap_symbolizer *sym, uint32_t id)
{
	uint32_t sid = ts->as->site_id;
	struct seen_pc *seen = NULL;
	size_t nseen = 0, seen_alloc = 0;
	for (size_t k = 0; k < t->nstacks; k++) {
		if (m->site_of_stack[k] != sid)
			continue;
		const struct ap_stack *st = &t->stacks[k];
		uint32_t d = m->pc_of_stack[k];
		bool ok;
		uint32_t base = leaf_of(sym, st);
		if (d == 0) {
			ok = add_once(ts, &seen, &nseen, &seen_alloc, t, st, 0, 0, AP_TRY_KIND_CALL,
				      id);
		} else if (d == 1 && base == 1) {
			ok = add_once(ts, &seen, &nseen, &seen_alloc, t, st, 1, 0, AP_TRY_KIND_NEW,
				      id);
		} else if (d < 64 && d < st->depth) {
			ok = add_once(ts, &seen, &nseen, &seen_alloc, t, st, base, 0,
				      AP_TRY_KIND_LEAF, id) &&
			     add_once(ts, &seen, &nseen, &seen_alloc, t, st, d, base,
				      AP_TRY_KIND_FRAME, id);
			ts->walked += ok;
		} else {
			ok = false;
		}
		if (ok)
			ts->npcs++;
		else
			ts->skipped++;
	}
	free(seen);
}

/* ---- refusals before running ---- */

/* Whether the ELF file at path names a symbol of `names` in its dynamic
 * symbols (defined only, with `defined`), or a DT_NEEDED library whose
 * name starts with one of `libs`. The name found, or NULL. */
static const char *elf_mentions(const char *path, const char *const *names, bool defined,
				const char *const *libs)
{
	static char found[128];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	const char *res = NULL;
	Elf_Scn *scn = NULL;
	while (e && !res && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_DYNAMIC))
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data || !sh.sh_entsize)
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n && !res; i++) {
			if (sh.sh_type == SHT_DYNSYM) {
				GElf_Sym sym;
				if (!gelf_getsym(data, (int)i, &sym) ||
				    (defined && sym.st_shndx == SHN_UNDEF))
					continue;
				const char *nm = elf_strptr(e, sh.sh_link, sym.st_name);
				for (size_t j = 0; nm && names && names[j] && !res; j++)
					if (!strcmp(nm, names[j]))
						res = names[j];
			} else {
				GElf_Dyn dyn;
				if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
					continue;
				const char *nm = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
				for (size_t j = 0; nm && libs && libs[j] && !res; j++)
					if (!strncmp(nm, libs[j], strlen(libs[j]))) {
						snprintf(found, sizeof(found), "%s", nm);
						res = found;
					}
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return res;
}

/* Refuses, with one line, what the pool's ownership check cannot be safe
 * in: a sanitizer build, another allocator preloaded. Returns 0 or -1. */
static int refuse_program(const char *shown, const char *path)
{
	static const char *const rt[] = {"__asan_init", "__tsan_init", "__msan_init",
					 "__hwasan_init", NULL};
	static const char *const rtlibs[] = {"libasan.", "libtsan.", "libmsan.", "libhwasan.",
					     NULL};
	const char *s = elf_mentions(path, rt, false, rtlibs);
	if (s) {
		ap_say("try: %s: built with a sanitizer (%s): its runtime replaces malloc, and "
			   "nothing else may serve its blocks",
			   shown, s);
		return -1;
	}
	const char *pre = getenv("LD_PRELOAD");
	if (!pre || !*pre)
		return 0;
	char *copy = ap_xstrdup(pre), *save = NULL;
	static const char *const mal[] = {"malloc", "free", "calloc", "realloc", NULL};
	int rc = 0;
	for (char *lib = strtok_r(copy, " :", &save); lib && !rc;
	     lib = strtok_r(NULL, " :", &save)) {
		char libpath[PATH_MAX];
		if (!strchr(lib, '/'))
			continue; /* the loader's search: not followed here */
		if (!realpath(lib, libpath) || !elf_mentions(libpath, mal, true, NULL))
			continue;
		ap_say(
		    "try: LD_PRELOAD=%s: another allocator is preloaded (it defines malloc): a "
		    "pooled block could not be told from its blocks",
		    lib);
		rc = -1;
	}
	free(copy);
	return rc;
}

/* liballocprof-try.so: $ALLOCPROF_TRY_PRELOAD, the build tree's (../try/
 * from this binary), or pkglibdir's. */
static int find_library(char *out, size_t len)
{
	const char *env = getenv("ALLOCPROF_TRY_PRELOAD");
	if (env && *env) {
		if (!realpath(env, out)) {
			ap_say("try: ALLOCPROF_TRY_PRELOAD=%s: %s", env, strerror(errno));
			return -1;
		}
		return 0;
	}
	char self[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash = n > 0 ? (self[n] = 0, strrchr(self, '/')) : NULL;
	if (slash) {
		*slash = 0;
		snprintf(cand, sizeof(cand), "%s/../try/" TRY_SO, self);
		if (access(cand, R_OK) == 0 && realpath(cand, out))
			return 0;
		snprintf(cand, sizeof(cand), "%s/" TRY_SO, self);
		if (access(cand, R_OK) == 0 && realpath(cand, out))
			return 0;
	}
	snprintf(cand, sizeof(cand), "%s/" TRY_SO, AP_PKGLIBDIR);
	if (access(cand, R_OK) == 0 && strlen(cand) < len) {
		memcpy(out, cand, strlen(cand) + 1);
		return 0;
	}
	ap_say("try: cannot find " TRY_SO ": not next to allocprof-report nor in %s; set "
		   "ALLOCPROF_TRY_PRELOAD to its path",
		   AP_PKGLIBDIR);
	return -1;
}

/* ---- runs ---- */

struct site_counts {
	double gets, hits, small, src[AP_POOL_NSRC];
	double allocs_avoided, alloc_bytes_avoided, reallocs, reallocs_avoided,
	    realloc_bytes_avoided;
	double puts, dropped_cap, released, held_peak;
};

struct run {
	double cpu_ns, wall_ns, minflt, maxrss_kb, calls, cycles;
	unsigned procs; /* processes that wrote a line */
	struct site_counts s[AP_TRY_MAX_SITES];
};

struct out_ref {
	char *out, *err;
	size_t nout, nerr;
	int status;
	bool set;
};

static char *read_fd_all(int fd, size_t *n)
{
	struct stat st;
	*n = 0;
	if (fstat(fd, &st) < 0)
		return NULL;
	char *b = ap_xmalloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = pread(fd, b + got, (size_t)st.st_size - got, (off_t)got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	b[got] = 0;
	*n = got;
	return b;
}

/* The library's lines (try.h) into r; what it refused, if it did, into
 * why. */
static void parse_results(int fd, struct run *r, char *why, size_t whylen)
{
	size_t n;
	char *b = read_fd_all(fd, &n);
	if (!b)
		return;
	bool first = true;
	for (char *line = strtok(b, "\n"); line; line = strtok(NULL, "\n")) {
		unsigned long long calls, cycles;
		long hwm;
		int pid;
		unsigned id;
		char *ref;
		if (sscanf(line, "proc pid=%d calls=%llu hwm_kb=%ld cycles=%llu", &pid, &calls,
			   &hwm, &cycles) == 4) {
			r->procs++;
			r->calls += (double)calls;
			if (first && hwm > 0)
				r->maxrss_kb = (double)hwm; /* the program's own process */
			if (first)
				r->cycles = (double)cycles;
			first = false;
			if ((ref = strstr(line, " refused=")) && strcmp(ref + 9, "-"))
				snprintf(why, whylen, "%s", ref + 9);
		} else if (sscanf(line, "site id=%u", &id) == 1 && id < AP_TRY_MAX_SITES) {
			struct site_counts *c = &r->s[id];
			unsigned long long v[17];
			if (sscanf(line,
				   "site id=%*u gets=%llu hits=%llu small=%llu private=%llu "
				   "shared=%llu "
				   "stolen=%llu victim=%llu allocs_avoided=%llu "
				   "alloc_bytes_avoided=%llu "
				   "reallocs=%llu reallocs_avoided=%llu realloc_bytes_avoided=%llu "
				   "puts=%llu "
				   "dropped_cap=%llu released=%llu held_peak=%llu",
				   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
				   &v[9], &v[10], &v[11], &v[12], &v[13], &v[14], &v[15]) != 16)
				continue;
			c->gets += (double)v[0];
			c->hits += (double)v[1];
			c->small += (double)v[2];
			c->src[AP_POOL_PRIVATE] += (double)v[3];
			c->src[AP_POOL_SHARED] += (double)v[4];
			c->src[AP_POOL_STOLEN] += (double)v[5];
			c->src[AP_POOL_VICTIM] += (double)v[6];
			c->allocs_avoided += (double)v[7];
			c->alloc_bytes_avoided += (double)v[8];
			c->reallocs += (double)v[9];
			c->reallocs_avoided += (double)v[10];
			c->realloc_bytes_avoided += (double)v[11];
			c->puts += (double)v[12];
			c->dropped_cap += (double)v[13];
			c->released += (double)v[14];
			if ((double)v[15] > c->held_peak)
				c->held_peak = (double)v[15];
		}
	}
	free(b);
}

struct runner {
	char **argv;	     /* the program's command line */
	const char *path;    /* argv[0] resolved */
	char **envp;	     /* with the library preloaded and ALLOCPROF_TRY below */
	char **envp_plain;   /* the caller's, without ALLOCPROF_TRY: the program as it is */
	size_t env_try;	     /* envp's ALLOCPROF_TRY entry */
	int stdin_fd;	     /* the input every run gets (-1: /dev/null) */
	const char *outfile; /* where the library writes */
};

static double ts_ns(const struct timespec *t)
{
	return (double)t->tv_sec * 1e9 + (double)t->tv_nsec;
}

/* A SIGINT, SIGTERM or SIGHUP while the runs go on: the running program
 * gets the same signal (a supervisor's SIGTERM reaches try alone), try
 * waits for it, removes its scratch directory, and then dies of the
 * signal itself, as its caller expects. */
static volatile sig_atomic_t try_stop;
static volatile pid_t try_child;
static const int stop_sigs[] = { SIGINT, SIGTERM, SIGHUP };

static void on_stop(int sig)
{
	try_stop = sig;
	pid_t c = try_child;
	if (c > 0)
		kill(c, sig);
}

static void stop_handlers(bool on, struct sigaction *old)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stop_sigs) / sizeof(stop_sigs[0]); i++) {
		if (on) {
			sigaction(stop_sigs[i], NULL, &old[i]);
			if (old[i].sa_handler != SIG_IGN)	/* nohup's SIGHUP stays ignored */
				sigaction(stop_sigs[i], &sa, NULL);
		} else {
			sigaction(stop_sigs[i], &old[i], NULL);
		}
	}
}

/* One run with the config `cfg` (NULL: the program as it is, without the
 * library): its costs and counts into r, its output into o (caller
 * frees). Returns 0, or -1 after one line. */
static int run_once(struct runner *rn, const char *cfg, struct run *r, struct out_ref *o, char *why,
		    size_t whylen)
{
	memset(r, 0, sizeof(*r));
	int ofd = memfd_create("allocprof-try-out", MFD_CLOEXEC);
	int efd = memfd_create("allocprof-try-err", MFD_CLOEXEC);
	int rfd = open(rn->outfile, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (ofd < 0 || efd < 0 || rfd < 0) {
		ap_say("try: %s", strerror(errno));
		return -1;
	}
	char envbuf[PATH_MAX + 32];
	if (cfg) {
		snprintf(envbuf, sizeof(envbuf), AP_TRY_ENV "=%s", cfg);
		rn->envp[rn->env_try] = envbuf;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (rn->stdin_fd >= 0) {
		lseek(rn->stdin_fd, 0, SEEK_SET);
		posix_spawn_file_actions_adddup2(&fa, rn->stdin_fd, 0);
	} else {
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	}
	posix_spawn_file_actions_adddup2(&fa, ofd, 1);
	posix_spawn_file_actions_adddup2(&fa, efd, 2);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid;
	int rc = posix_spawn(&pid, rn->path, &fa, NULL, rn->argv, cfg ? rn->envp : rn->envp_plain);
	posix_spawn_file_actions_destroy(&fa);
	if (!rc) {
		try_child = pid;
		if (try_stop)	/* it came before the child was known */
			kill(pid, try_stop);
	}
	if (rc) {
		ap_say("try: %s: %s", rn->argv[0], strerror(rc));
		close(ofd);
		close(efd);
		close(rfd);
		return -1;
	}
	int st;
	struct rusage ru;
	while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
		;
	try_child = 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r->wall_ns = ts_ns(&t1) - ts_ns(&t0);
	r->cpu_ns = (double)ru.ru_utime.tv_sec * 1e9 + (double)ru.ru_utime.tv_usec * 1e3 +
		    (double)ru.ru_stime.tv_sec * 1e9 + (double)ru.ru_stime.tv_usec * 1e3;
	r->minflt = (double)ru.ru_minflt;
	r->maxrss_kb = (double)ru.ru_maxrss; /* unless the library says (VmHWM) */
	parse_results(rfd, r, why, whylen);
	o->out = read_fd_all(ofd, &o->nout);
	o->err = read_fd_all(efd, &o->nerr);
	o->status = st;
	o->set = true;
	close(ofd);
	close(efd);
	close(rfd);
	return 0;
}

static bool same_output(const struct out_ref *a, const struct out_ref *b)
{
	return a->status == b->status && a->nout == b->nout && a->nerr == b->nerr &&
	       !memcmp(a->out, b->out, a->nout) && !memcmp(a->err, b->err, a->nerr);
}

static void out_free(struct out_ref *o)
{
	free(o->out);
	free(o->err);
	memset(o, 0, sizeof(*o));
}

/* What differs between a and b, for people. */
static void say_difference(char *buf, size_t len, const struct out_ref *a, const struct out_ref *b)
{
	if (a->status != b->status) {
		snprintf(buf, len, "exit status %d, the baseline's %d", b->status, a->status);
		return;
	}
	const char *what = "standard output";
	const char *x = a->out, *y = b->out;
	size_t nx = a->nout, ny = b->nout;
	if (nx == ny && !memcmp(x, y, nx)) {
		what = "standard error";
		x = a->err, y = b->err, nx = a->nerr, ny = b->nerr;
	}
	size_t i = 0;
	while (i < nx && i < ny && x[i] == y[i])
		i++;
	snprintf(buf, len, "%s differs from byte %zu (%zu bytes, the baseline's %zu)", what, i, ny,
		 nx);
}

/* ---- statistics ---- */

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median_of(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- output ---- */

/* A measured verdict (try's, not advise's). */
enum try_verdict {
	TV_NONE,  /* one round, or too few for a 90 % interval */
	TV_NOISE, /* the interval spans zero, or the two comparisons disagree */
	TV_SAVES,
	TV_COSTS,
};

static const char *try_verdict_name(enum try_verdict v)
{
	switch (v) {
	case TV_SAVES:
		return "saves";
	case TV_COSTS:
		return "costs more";
	case TV_NOISE:
		return "within noise";
	default:
		return "no verdict";
	}
}

/* A median of paired differences with its sign-test interval. */
struct paired {
	double ns, low_ns, high_ns, conf;
};

/* The median and interval of d (n values; d is sorted). */
static struct paired paired_of(double *d, size_t n)
{
	struct paired p;
	p.conf = ap_median_interval(d, n, &p.low_ns, &p.high_ns);
	p.ns = median_of(d, n);
	return p;
}

/* Below this confidence an interval says nothing worth a verdict: the
 * sign test's interval of 2 to 4 rounds is their extremes at 50 to 88 %
 * (review29: `--runs 2` said "the pool costs 53.4ms more" at 50 %). */
#define TRY_MIN_CONF 0.9

static enum try_verdict sign_of(const struct paired *p, size_t rounds)
{
	if (rounds < 2 || p->conf < TRY_MIN_CONF)
		return TV_NONE;
	return p->low_ns > 0 ? TV_SAVES : p->high_ns < 0 ? TV_COSTS : TV_NOISE;
}

/* Whether try's baseline (the library loaded, nothing pooled) stands for
 * the program, for a site whose pool saves `saved` against it, when the
 * library alone moves the program's CPU time by `lib` (medians): while
 * the library's effect is under half the saving, the saving against the
 * program (the saving plus that effect) has its sign and is within half
 * of it. From half on, the two comparisons can tell different stories:
 * bench/twins' chan, whose threads switch a quarter less often when each
 * call costs a few ns more, ran 11-15 ms cheaper with the library alone
 * (medians of 9 and 15 rounds) where a pool cost 10-15 ms against that
 * baseline; its hand-pooled twin saves 7-17 ms. */
static bool baseline_stands(double saved, double lib)
{
	return fabs(lib) < fabs(saved) / 2;
}

/* The verdict from what can be trusted: the saving against the baseline
 * while it stands for the program; else only what it and the pooled run
 * against the program agree on (a saving, or a cost), within noise when
 * they do not. */
static enum try_verdict verdict_of(const struct paired *vs_base, const struct paired *vs_prog,
				   bool stands, size_t rounds)
{
	enum try_verdict b = sign_of(vs_base, rounds);
	if (stands || b == TV_NONE)
		return b;
	return b == sign_of(vs_prog, rounds) ? b : TV_NOISE;
}

struct variant_result {
	struct ap_run_cost cost; /* medians; hits: the site's */
	double cycles;
	struct site_counts c; /* medians of the pooled site's counts */
	struct paired vs_base;	/* the saving against the baseline */
	struct paired vs_prog;	/* against the program without the library */
	bool stands;		/* the baseline stands for the program here */
	enum try_verdict verdict;
	double reached; /* baseline: the site's gets (median) */
};

/* Medians of every run of variant j (runs[round * nv + j]). */
static void medians(const struct run *runs, size_t rounds, size_t nv, size_t j, unsigned site,
		    struct variant_result *vr)
{
	double *x = ap_xmalloc(rounds * sizeof(*x));
#define MED(dst, expr)                                                                             \
	do {                                                                                       \
		for (size_t r = 0; r < rounds; r++) {                                              \
			const struct run *R = &runs[r * nv + j];                                   \
			x[r] = (expr);                                                             \
		}                                                                                  \
		(dst) = median_of(x, rounds);                                                      \
	} while (0)
	MED(vr->cost.cpu_ns, R->cpu_ns);
	MED(vr->cost.wall_ns, R->wall_ns);
	MED(vr->cost.minflt, R->minflt);
	vr->cost.minflt_lo = vr->cost.minflt_hi = rounds ? runs[j].minflt : 0;
	for (size_t r = 1; r < rounds; r++) {
		vr->cost.minflt_lo = fmin(vr->cost.minflt_lo, runs[r * nv + j].minflt);
		vr->cost.minflt_hi = fmax(vr->cost.minflt_hi, runs[r * nv + j].minflt);
	}
	MED(vr->cost.maxrss_kb, R->maxrss_kb);
	MED(vr->cost.calls, R->calls);
	MED(vr->cycles, R->cycles);
	struct site_counts *c = &vr->c;
	MED(c->gets, R->s[site].gets);
	MED(c->hits, R->s[site].hits);
	vr->cost.hits = c->hits;
	MED(c->small, R->s[site].small);
	for (int s = AP_POOL_PRIVATE; s < AP_POOL_NSRC; s++)
		MED(c->src[s], R->s[site].src[s]);
	MED(c->allocs_avoided, R->s[site].allocs_avoided);
	MED(c->alloc_bytes_avoided, R->s[site].alloc_bytes_avoided);
	MED(c->reallocs, R->s[site].reallocs);
	MED(c->reallocs_avoided, R->s[site].reallocs_avoided);
	MED(c->realloc_bytes_avoided, R->s[site].realloc_bytes_avoided);
	MED(c->puts, R->s[site].puts);
	MED(c->dropped_cap, R->s[site].dropped_cap);
	MED(c->released, R->s[site].released);
	MED(c->held_peak, R->s[site].held_peak);
#undef MED
	free(x);
}

static const char *pred_result_name(const struct ap_advise_site *s)
{
	return ap_advise_site_shape(s) == AP_VERDICT_POOL_CAP && s->capped ? "with cap" : "";
}

static const struct ap_replay_result *pred_result(const struct ap_advise_site *s)
{
	return ap_advise_site_shape(s) == AP_VERDICT_POOL_CAP && s->capped ? &s->rc : &s->r;
}

/* advise's prediction for the pool try runs, vpool's: at a Rust site
 * (ap_advise_site.own_list) the verdict's measurement is its own free
 * list's, and vpool's is the one beside it, or the model's. */
static double pred_time(const struct ap_advise_site *s)
{
	const struct ap_measured *v = ap_advise_site_vpool(s);
	return v ? v->saved_ns : s->own_list ? s->r.time_saved_ns : ap_advise_site_saved_ns(s);
}

static const char *pred_source(const struct ap_advise_site *s)
{
	return ap_advise_site_vpool(s) ? "measured replay" : "model";
}

static void fmt_count(char *b, size_t n, double v)
{
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%.0f", v);
	/* thousands separators */
	size_t len = strlen(tmp), neg = tmp[0] == '-', o = 0;
	for (size_t i = 0; i < len && o + 2 < n; i++) {
		if (i > neg && (len - i) % 3 == 0)
			b[o++] = ',';
		b[o++] = tmp[i];
	}
	b[o] = 0;
}

static void fmt_dur(char *b, size_t n, double ns)
{
	if (ns < 0) {
		b[0] = '-';
		ap_advise_format_duration(b + 1, n - 1, -ns);
	} else {
		ap_advise_format_duration(b, n, ns);
	}
}

struct report {
	const struct ap_trace *t;
	const struct ap_advice *a;
	char **argv;
	size_t rounds, nv;
	struct tsite *ts;
	size_t nts;
	struct variant_result *vr; /* [0] baseline, [1 + i] site i, [nv - 1] the program */
	struct paired lib;	   /* the library alone: the baseline less the program */
	bool identical, deterministic;
	char differs[512];
	bool predicted_measured;
	/* Every run counts every site's requests (try/preload.c): a pooled
	 * run whose other sites' requests are not the baseline's did other
	 * work (a program whose allocations change from run to run). */
	bool same_requests;
	char req_differs[512];
};

static void print_counts_row(const char *label, double got, double pred, bool bytes)
{
	char a[48], b[48];
	if (bytes) {
		ap_format_bytes(a, sizeof(a), got);
		ap_format_bytes(b, sizeof(b), pred);
	} else {
		fmt_count(a, sizeof(a), got);
		fmt_count(b, sizeof(b), pred);
	}
	printf("  %-22s %16s %16s\n", label, a, b);
}

static void print_text(const struct report *rp)
{
	struct ap_buf nb = AP_BUF_INIT;
	printf("Program:");
	for (char **a = rp->argv; *a; a++)
		printf(" %s", ap_safe_name(&nb, *a));
	printf("\n");
	ap_buf_release(&nb);
	printf("Runs: %zu rounds of the program, the baseline and %zu pooled variant%s, "
	       "interleaved (%zu runs)\n",
	       rp->rounds, rp->nts, rp->nts == 1 ? "" : "s", rp->rounds * rp->nv);
	if (!rp->deterministic)
		printf("Output: the runs without a pool differ (%s): the program's output is not "
		       "deterministic, not compared\n",
		       rp->differs);
	else if (rp->identical)
		printf("Output: identical in every run (standard output, standard error, exit "
		       "status)\n");
	else
		printf("Output: DIFFERS: %s\n", rp->differs);
	if (!rp->same_requests)
		printf("Requests: differ between runs (%s): the runs did not do the same work, and "
		       "the savings compare unlike runs\n",
		       rp->req_differs);
	if (rp->t->rate > 1)
		printf(
		    "Sampled trace: call paths no sample saw are not pooled, and advise's figures "
		    "are estimates (record --all for every path)\n");
	const struct variant_result *b = &rp->vr[0];
	char d1[32], d2[32], m1[32], c1[48];
	fmt_dur(d1, sizeof(d1), b->cost.cpu_ns);
	fmt_dur(d2, sizeof(d2), b->cost.wall_ns);
	ap_format_bytes(m1, sizeof(m1), b->cost.maxrss_kb * 1024);
	fmt_count(c1, sizeof(c1), b->cost.calls);
	printf("Baseline (medians): CPU %s, wall %s, %.0f minor faults, peak RSS %s, %s allocator "
	       "calls\n",
	       d1, d2, b->cost.minflt, m1, c1);
	const struct variant_result *pg = &rp->vr[rp->nv - 1];
	fmt_dur(d1, sizeof(d1), pg->cost.cpu_ns);
	fmt_dur(d2, sizeof(d2), pg->cost.wall_ns);
	printf("Program without the library (medians): CPU %s, wall %s, %.0f minor faults\n", d1,
	       d2, pg->cost.minflt);
	char l1[32], l2[32], l3[32];
	fmt_dur(l1, sizeof(l1), rp->lib.ns);
	fmt_dur(l2, sizeof(l2), rp->lib.low_ns);
	fmt_dur(l3, sizeof(l3), rp->lib.high_ns);
	printf("The library alone (the baseline less the program): %s [%s, %s], %.0f%% "
	       "confidence\n",
	       l1, l2, l3, 100 * rp->lib.conf);
	if (rp->a->measured) {
		struct ap_buf cb = AP_BUF_INIT;
		ap_advise_replay_cpus_words(rp->a, &cb);
		printf("advise's measured replay: %s\n", cb.buf);
		ap_buf_release(&cb);
	}
	for (size_t i = 0; i < rp->nts; i++) {
		const struct tsite *ts = &rp->ts[i];
		const struct ap_advise_site *as = ts->as;
		const struct variant_result *v = &rp->vr[i + 1];
		const struct ap_replay_result *pr = pred_result(as);
		struct ap_buf sb = AP_BUF_INIT;
		printf("\n%s\n", ap_safe_name(&sb, as->name));
		ap_buf_release(&sb);
		printf("  advise: %s",
		       as->verdict_text ? as->verdict_text : ap_verdict_name(as->verdict));
		if (ts->cap) {
			char cb[32];
			ap_format_bytes(cb, sizeof(cb), (double)ts->cap);
			printf("; pooled with cap %s", cb);
		}
		for (size_t k = 0; k < ts->nclasses; k++) {
			char cb[32];
			ap_format_bytes(cb, sizeof(cb), (double)ts->classes[k]);
			printf("%s%s", k ? ", " : "; pooled in size classes up to ", cb);
		}
		if (ts->round_up)
			printf(" (each request rounded up to its class)");
		printf("; %zu call path%s", ts->npcs, ts->npcs == 1 ? "" : "s");
		if (ts->walked)
			printf(" (%zu through %s: the stack is walked)", ts->walked,
			       as->via ? as->via : "a library");
		if (ts->skipped)
			printf(" (%zu not pooled: no build-id, or too deep)", ts->skipped);
		printf("\n");
		if (as->calloc_share >= 0.5 && as->measured)
			printf("  (its objects come from calloc: each pooled block is cleared whole "
			       "here, as calloc would, where advise's replay leaves it as the program "
			       "left it)\n");
		printf("  %-22s %16s %16s\n", "", "measured", "advise predicted");
		if (ap_advise_site_shape(as) == AP_VERDICT_SIZE_CLASSES)
			printf("  (advise's counts are of one pool: its model does not replay size "
			       "classes)\n");
		print_counts_row("requests", v->c.gets, pr->gets, false);
		print_counts_row("hits", v->c.hits, pr->gets - pr->misses, false);
		print_counts_row("allocations avoided", v->c.allocs_avoided, pr->allocs_avoided,
				 false);
		print_counts_row("reallocs", v->c.reallocs, pr->reallocs, false);
		print_counts_row("reallocs avoided", v->c.reallocs_avoided, pr->reallocs_avoided,
				 false);
		print_counts_row("bytes avoided",
				 v->c.alloc_bytes_avoided + v->c.realloc_bytes_avoided,
				 pr->bytes_avoided, true);
		print_counts_row("held peak", v->c.held_peak, pr->peak_held_bytes, true);
		char src[160], psrc[160];
		snprintf(src, sizeof(src), "%.0f/%.0f/%.0f/%.0f", v->c.src[AP_POOL_PRIVATE],
			 v->c.src[AP_POOL_SHARED], v->c.src[AP_POOL_STOLEN],
			 v->c.src[AP_POOL_VICTIM]);
		snprintf(psrc, sizeof(psrc), "%.0f/%.0f/%.0f/%.0f", pr->hits[AP_POOL_PRIVATE],
			 pr->hits[AP_POOL_SHARED], pr->hits[AP_POOL_STOLEN],
			 pr->hits[AP_POOL_VICTIM]);
		printf("  %-22s %16s %16s\n", "hits p/s/st/v", src, psrc);
		char s1[32], lo[32], hi[32], p1[32];
		fmt_dur(s1, sizeof(s1), v->vs_base.ns);
		fmt_dur(lo, sizeof(lo), v->vs_base.low_ns);
		fmt_dur(hi, sizeof(hi), v->vs_base.high_ns);
		fmt_dur(p1, sizeof(p1), pred_time(as));
		printf("  %-22s %16s %16s (%s)\n", "CPU time saved", s1, p1,
		       pred_source(as));
		printf("  %-22s [%s, %s], %.0f%% confidence, %zu rounds\n", "interval", lo, hi,
		       100 * v->vs_base.conf, rp->rounds);
		char q1[32], qlo[32], qhi[32];
		fmt_dur(q1, sizeof(q1), v->vs_prog.ns);
		fmt_dur(qlo, sizeof(qlo), v->vs_prog.low_ns);
		fmt_dur(qhi, sizeof(qhi), v->vs_prog.high_ns);
		printf("  %-22s %16s [%s, %s], %.0f%% confidence\n", "against the program", q1, qlo,
		       qhi, 100 * v->vs_prog.conf);
		/* the figure the verdict stands on: against the baseline while it
		 * stands for the program, else against the program */
		const struct paired *f = v->stands ? &v->vs_base : &v->vs_prog;
		double whole = v->stands ? b->cost.cpu_ns : pg->cost.cpu_ns;
		char fs[32];
		fmt_dur(fs, sizeof(fs), fabs(f->ns));
		double share = whole > 0 ? 100 * fabs(f->ns) / whole : 0;
		if (!v->stands) {
			char lb[32];
			fmt_dur(lb, sizeof(lb), fabs(rp->lib.ns));
			printf("  the library alone moves the program by as much as the saving, or half "
			       "of it (its runs with nothing pooled cost %s %s than the program's): "
			       "the baseline does not stand for the program, and the verdict is what "
			       "the savings against the baseline (%s) and against the program (%s) "
			       "agree on\n",
			       lb, rp->lib.ns < 0 ? "less" : "more", s1, q1);
		}
		switch (v->verdict) {
		case TV_NONE:
			if (rp->rounds < 2)
				printf("  => one round, no interval: no verdict (--runs 6 or more give "
				       "a 95%% interval)\n");
			else
				printf("  => %zu rounds, a %.0f%% interval: too few for a verdict "
				       "(--runs 6 or more give a 95%% interval)\n",
				       (size_t)rp->rounds, 100 * f->conf);
			break;
		case TV_NOISE:
			if (v->stands)
				printf("  => within noise: the interval spans zero\n");
			else if (sign_of(&v->vs_base, rp->rounds) == TV_NOISE &&
				 sign_of(&v->vs_prog, rp->rounds) == TV_NOISE)
				printf("  => within noise: both intervals span zero\n");
			else
				printf("  => within noise: the two savings do not agree on a sign\n");
			break;
		case TV_COSTS:
			printf("  => the pool costs %s more CPU time (%.1f%% of the run)%s\n", fs,
			       share, v->stands ? "" : ", against the program");
			break;
		case TV_SAVES:
			printf("  => the pool saves %s of CPU time (%.1f%% of the run)%s\n", fs, share,
			       v->stands ? "" : ", against the program");
			break;
		}
	}
}

static json_t *counts_json(const struct site_counts *c)
{
	json_t *o = json_object();
	json_object_set_new(o, "requests", json_integer(ap_view_round(c->gets)));
	json_object_set_new(o, "hits", json_integer(ap_view_round(c->hits)));
	json_t *h = json_object();
	for (int s = AP_POOL_PRIVATE; s < AP_POOL_NSRC; s++)
		json_object_set_new(h, ap_pool_src_name(s), json_integer(ap_view_round(c->src[s])));
	json_object_set_new(o, "hits_by_source", h);
	json_object_set_new(o, "small_hits", json_integer(ap_view_round(c->small)));
	json_object_set_new(o, "allocs_avoided", json_integer(ap_view_round(c->allocs_avoided)));
	json_object_set_new(
	    o, "bytes_avoided",
	    json_integer(ap_view_round(c->alloc_bytes_avoided + c->realloc_bytes_avoided)));
	json_object_set_new(o, "reallocs", json_integer(ap_view_round(c->reallocs)));
	json_object_set_new(o, "reallocs_avoided",
			    json_integer(ap_view_round(c->reallocs_avoided)));
	json_object_set_new(o, "dropped_by_cap", json_integer(ap_view_round(c->dropped_cap)));
	json_object_set_new(o, "held_peak_bytes", json_integer(ap_view_round(c->held_peak)));
	return o;
}

static json_t *cost_json(const struct variant_result *v)
{
	json_t *o = ap_advise_cost_json(&v->cost);
	json_object_set_new(o, "cycles", json_integer(ap_view_round(v->cycles)));
	return o;
}

static json_t *paired_json(const struct paired *p)
{
	json_t *o = json_object();
	json_object_set_new(o, "time_saved_ns", json_integer(ap_view_round(p->ns)));
	json_object_set_new(o, "time_saved_low_ns", json_integer(ap_view_round(p->low_ns)));
	json_object_set_new(o, "time_saved_high_ns", json_integer(ap_view_round(p->high_ns)));
	json_object_set_new(o, "confidence", json_real(p->conf));
	return o;
}

static int print_json(const struct report *rp)
{
	json_t *root = json_object();
	json_t *av = json_array();
	for (char **a = rp->argv; *a; a++)
		json_array_append_new(av, ap_json_text(*a));
	json_object_set_new(root, "argv", av);
	json_object_set_new(root, "rounds", json_integer((json_int_t)rp->rounds));
	json_object_set_new(root, "sampled", json_boolean(rp->t->rate > 1));
	json_object_set_new(root, "output_identical",
			    rp->deterministic ? json_boolean(rp->identical) : json_null());
	json_object_set_new(root, "output_deterministic", json_boolean(rp->deterministic));
	json_object_set_new(root, "same_requests", json_boolean(rp->same_requests));
	if (!rp->identical || !rp->deterministic)
		json_object_set_new(root, "output_difference", json_string(rp->differs));
	json_object_set_new(root, "baseline", cost_json(&rp->vr[0]));
	json_t *pj = ap_advise_cost_json(&rp->vr[rp->nv - 1].cost);
	json_object_del(pj, "allocator_calls"); /* the library counts them: not loaded */
	json_object_del(pj, "pool_hits");
	/* the library reads VmHWM; wait4's ru_maxrss of a child spawned by
	 * vfork carries try's own peak across the exec */
	json_object_set_new(pj, "peak_rss_bytes", json_null());
	json_object_set_new(root, "program", pj);
	json_t *lj = json_object();
	json_object_set_new(lj, "cpu_ns", json_integer(ap_view_round(rp->lib.ns)));
	json_object_set_new(lj, "cpu_low_ns", json_integer(ap_view_round(rp->lib.low_ns)));
	json_object_set_new(lj, "cpu_high_ns", json_integer(ap_view_round(rp->lib.high_ns)));
	json_object_set_new(lj, "confidence", json_real(rp->lib.conf));
	json_object_set_new(root, "library_alone", lj);
	if (rp->a->measured) {
		json_t *mr = json_object();
		ap_advise_replay_cpus_json(rp->a, mr);
		json_object_set_new(root, "measured_replay", mr);
	}
	json_t *sites = json_array();
	for (size_t i = 0; i < rp->nts; i++) {
		const struct tsite *ts = &rp->ts[i];
		const struct ap_advise_site *as = ts->as;
		const struct variant_result *v = &rp->vr[i + 1];
		json_t *o = json_object();
		json_object_set_new(o, "site", ap_json_text(as->name));
		json_object_set_new(o, "site_id", json_integer((json_int_t)as->site_id));
		json_object_set_new(o, "verdict", json_string(ap_verdict_name(as->verdict)));
		json_object_set_new(o, "cap",
				    ts->cap ? json_integer((json_int_t)ts->cap) : json_null());
		json_t *cl = json_array();
		for (size_t k = 0; k < ts->nclasses; k++)
			json_array_append_new(cl, json_integer((json_int_t)ts->classes[k]));
		json_object_set_new(o, "size_classes", cl);
		json_object_set_new(o, "call_paths", json_integer((json_int_t)ts->npcs));
		json_object_set_new(o, "paths_walked", json_integer((json_int_t)ts->walked));
		json_object_set_new(o, "paths_not_pooled", json_integer((json_int_t)ts->skipped));
		json_t *c = counts_json(&v->c);
		json_object_update(o, c);
		json_decref(c);
		json_object_set_new(o, "time_saved_ns", json_integer(ap_view_round(v->vs_base.ns)));
		json_object_set_new(o, "time_saved_low_ns",
				    json_integer(ap_view_round(v->vs_base.low_ns)));
		json_object_set_new(o, "time_saved_high_ns",
				    json_integer(ap_view_round(v->vs_base.high_ns)));
		json_object_set_new(o, "confidence", json_real(v->vs_base.conf));
		json_object_set_new(o, "against_program", paired_json(&v->vs_prog));
		json_object_set_new(o, "baseline_stands_for_program", json_boolean(v->stands));
		json_object_set_new(o, "measured_verdict",
				    json_string(try_verdict_name(v->verdict)));
		json_object_set_new(o, "verdict_from",
				    json_string(v->stands ? "baseline" : "baseline and program"));
		json_object_set_new(o, "within_noise", json_boolean(v->verdict == TV_NOISE));
		const struct ap_replay_result *pr = pred_result(as);
		json_object_set_new(o, "predicted_allocs_avoided",
				    json_integer(ap_view_round(pr->allocs_avoided)));
		json_object_set_new(o, "predicted_bytes_avoided",
				    json_integer(ap_view_round(pr->bytes_avoided)));
		json_object_set_new(o, "predicted_reallocs_avoided",
				    json_integer(ap_view_round(pr->reallocs_avoided)));
		json_object_set_new(o, "predicted_hits",
				    json_integer(ap_view_round(pr->gets - pr->misses)));
		json_t *h = json_object();
		for (int s = AP_POOL_PRIVATE; s < AP_POOL_NSRC; s++)
			json_object_set_new(h, ap_pool_src_name(s),
					    json_integer(ap_view_round(pr->hits[s])));
		json_object_set_new(o, "predicted_hits_by_source", h);
		json_object_set_new(o, "predicted_held_peak_bytes",
				    json_integer(ap_view_round(pr->peak_held_bytes)));
		json_object_set_new(o, "predicted_time_saved_ns",
				    json_integer(ap_view_round(pred_time(as))));
		json_object_set_new(o, "predicted_time_source",
				    json_string(pred_source(as)));
		json_object_set_new(o, "predicted_counts",
				    json_string(*pred_result_name(as) ? "with cap" : "one pool"));
		json_object_set_new(o, "pooled", cost_json(v));
		json_object_set_new(o, "output_identical",
				    rp->deterministic ? json_boolean(rp->identical) : json_null());
		json_array_append_new(sites, o);
	}
	json_object_set_new(root, "sites", sites);
	return ap_view_json_print(root);
}

/* ---- the command ---- */

/* The advise site `spec` names: its name, its site_id, or a function
 * naming one site. NULL after one line. */
static const struct ap_advise_site *find_site(const struct ap_advice *a, const char *spec)
{
	for (size_t i = 0; i < a->nsites; i++)
		if (!strcmp(a->sites[i].name, spec))
			return &a->sites[i];
	char *end;
	unsigned long id = strtoul(spec, &end, 10);
	if (*spec && !*end)
		for (size_t i = 0; i < a->nsites; i++)
			if (a->sites[i].site_id == id)
				return &a->sites[i];
	const struct ap_advise_site *hit = NULL;
	size_t n = 0;
	for (size_t i = 0; i < a->nsites; i++)
		if (a->sites[i].function && !strcmp(a->sites[i].function, spec)) {
			hit = &a->sites[i];
			n++;
		}
	if (n == 1)
		return hit;
	if (n > 1)
		ap_say("try: --site %s: names %zu sites; give one's name or site_id (allocprof "
			   "advise --json lists them)",
			   spec, n);
	else
		ap_say(
		    "try: --site %s: no such site in the trace (allocprof advise -n 0 lists them)",
		    spec);
	return NULL;
}

/* A site whose objects grow by copy (ap_advise_by_copy): advise measured
 * a pool of the objects, which try cannot make. */
#define BY_COPY_NOTE                                                                          \
	"its objects grow by copy (as std::string and std::vector do): advise measured a pool " \
	"of the objects, each keeping its capacity, and try can only pool the site's blocks"

static bool pool_verdict(enum ap_verdict v)
{
	return v == AP_VERDICT_POOL || v == AP_VERDICT_POOL_CAP || v == AP_VERDICT_SIZE_CLASSES ||
	       v == AP_VERDICT_FAULTS || v == AP_VERDICT_LARGER;
}

/* The walk's stops for a config that lists the sites ts: the frame of
 * every other site's stack that starts at one of those sites' library
 * calls (LEAF), at its depth: a walk from there that meets it first is
 * that site's call, not pooled. */
static void add_stops(struct ap_buf *b, const struct ap_trace *t, const struct ap_site_map *m,
		      struct ap_symbolizer *sym, const struct tsite *ts, size_t nts)
{
	uint64_t *leaf = NULL;
	size_t nleaf = 0, leaf_alloc = 0;
	bool *chosen = ap_xcalloc(m->nsites ? m->nsites : 1, sizeof(*chosen));
	for (size_t i = 0; i < nts; i++)
		chosen[ts[i].as->site_id] = true;
	for (size_t k = 0; k < t->nstacks; k++) {
		uint32_t s = m->site_of_stack[k], d = m->pc_of_stack[k];
		uint32_t base = leaf_of(sym, &t->stacks[k]);
		if (s < m->nsites && chosen[s] && d > base && d < t->stacks[k].depth) {
			AP_ALLOC_GROW(leaf, nleaf + 1, leaf_alloc);
			leaf[nleaf++] = t->stacks[k].pcs[base];
		}
	}
	struct tsite scratch = {.pcs = AP_BUF_INIT};
	struct seen_pc *seen = NULL;
	size_t nseen = 0, seen_alloc = 0;
	for (size_t k = 0; k < t->nstacks && nleaf; k++) {
		uint32_t s = m->site_of_stack[k], d = m->pc_of_stack[k];
		uint32_t base = leaf_of(sym, &t->stacks[k]);
		if (s >= m->nsites || chosen[s] || d <= base || d >= 64 || d >= t->stacks[k].depth)
			continue;
		bool through = false;
		for (size_t i = 0; i < nleaf && !through; i++)
			through = leaf[i] == t->stacks[k].pcs[base];
		if (through)
			add_once(&scratch, &seen, &nseen, &seen_alloc, t, &t->stacks[k], d, base,
				 AP_TRY_KIND_STOP, 0);
	}
	if (scratch.pcs.len)
		ap_buf_add(b, scratch.pcs.buf, scratch.pcs.len);
	ap_buf_release(&scratch.pcs);
	free(seen);
	free(leaf);
	free(chosen);
}

/* A variant's config: every site tried, so that every run does the same
 * bookkeeping (try/preload.c), and site `pooled` pooled (-1: the
 * baseline, none). */
static int write_config(const char *path, ssize_t pooled, const char *outfile,
			const struct ap_advice *a, struct tsite *ts, size_t nts,
			const struct ap_trace *t, const struct ap_site_map *m,
			struct ap_symbolizer *sym)
{
	FILE *f = fopen(path, "we");
	if (!f) {
		ap_say("try: %s: %s", path, strerror(errno));
		return -1;
	}
	fprintf(f, AP_TRY_MAGIC "\nmode %s\nout %s\ngc %llu\n", pooled >= 0 ? "pool" : "base", outfile,
		a->gc_mode == AP_GC_GOGC ? (unsigned long long)a->gogc : 0ULL);
	for (size_t i = 0; i < nts; i++) {
		unsigned id = (unsigned)i;
		fprintf(f, "site %u %llu %zu", id, (unsigned long long)ts[i].cap, ts[i].nclasses);
		for (size_t k = 0; k < AP_TRY_MAX_CLASSES; k++)
			fprintf(f, " %llu",
				k < ts[i].nclasses ? (unsigned long long)ts[i].classes[k] : 0ULL);
		fprintf(f, " %d\n", ts[i].round_up);
		/* the lines carry the site's id as %u */
		const char *p = ts[i].pcs.buf ? ts[i].pcs.buf : "";
		while (*p) {
			const char *nl = strchr(p, '\n');
			unsigned kind;
			char rest[256];
			if (sscanf(p, "pc %*u %u %255[^\n]", &kind, rest) == 2)
				fprintf(f, "pc %u %u %s\n", id, kind, rest);
			p = nl ? nl + 1 : p + strlen(p);
		}
	}
	if (pooled >= 0)
		fprintf(f, "pool %zd\n", pooled);
	struct ap_buf stops = AP_BUF_INIT;
	add_stops(&stops, t, m, sym, ts, nts);
	if (stops.len)
		fwrite(stops.buf, 1, stops.len, f);
	ap_buf_release(&stops);
	int rc = fclose(f);
	if (rc) {
		ap_say("try: %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Removes the scratch directory and its files. */
static void remove_scratch(const char *dir, size_t nv)
{
	char p[PATH_MAX + 64];
	for (size_t j = 0; j < nv; j++) {
		snprintf(p, sizeof(p), "%s/v%zu.cfg", dir, j);
		unlink(p);
	}
	snprintf(p, sizeof(p), "%s/out", dir);
	unlink(p);
	rmdir(dir);
}

int cmd_try(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"site", required_argument, NULL, OPT_SITE},
	    {"runs", required_argument, NULL, OPT_RUNS},
	    AP_VIEW_MEASURE_LONGOPTS,
	    {"json", no_argument, NULL, AP_VOPT_JSON},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct sigaction old_sa[sizeof(stop_sigs) / sizeof(stop_sigs[0])];
	bool handlers = false;
	/* Everything after `--` is the program's. */
	int dd = argc;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dd = i;
			break;
		}
	const char *site_spec[AP_TRY_MAX_SITES];
	size_t nspec = 0;
	long runs = DEFAULT_RUNS;
	bool json = false;
	struct ap_view_measure vm;
	ap_view_measure_init(&vm);
	vm.progress = true;
	int opt;
	opterr = 0;
	optind = 1;
	while ((opt = ap_view_getopt(dd, argv, ":h", longopts)) != -1) {
		char *end;
		switch (opt) {
		case 'h':
			try_usage(stdout);
			return AP_EXIT_OK;
		case OPT_SITE:
			if (nspec == AP_TRY_MAX_SITES)
				return ap_usage_error("try", "at most %d --site options",
						      AP_TRY_MAX_SITES);
			site_spec[nspec++] = optarg;
			break;
		case OPT_RUNS:
			runs = strtol(optarg, &end, 10);
			if (*end || end == optarg || runs < 1 || runs > 1000)
				return ap_usage_error(
				    "try", "--runs wants a count from 1 to 1000, not '%s'", optarg);
			break;
		case AP_VOPT_JSON:
			json = true;
			break;
		default: {
			int m = ap_view_measure_option(&vm, "try", opt, optarg);
			if (m < 0)
				return AP_EXIT_USAGE;
			if (m)
				break;
			return ap_view_bad_option("try", opt, argv);
		}
		}
	}
	if (optind == dd)
		return ap_usage_error("try", "a TRACE file is needed");
	if (dd - optind > 1)
		return ap_usage_error("try",
				      "one TRACE only (the program's arguments go after --)");
	const char *trace_path = argv[optind];
	if (ap_view_touch_check() < 0)
		return AP_EXIT_USAGE;

	struct ap_cost_table costs;
	if (ap_advise_load_costs(&costs) < 0)
		return AP_EXIT_FAIL;
	struct ap_advise_options ao;
	ap_advise_options_init(&ao);
	ao.costs = &costs;
	struct ap_view_opts vo;
	ap_view_opts_init(&vo);
	vo.no_values = true;
	vo.no_children = true; /* a pool does not cross processes: the program's own */
	struct ap_view v;
	if (ap_view_load(&v, (char **)&trace_path, 1, &vo) != 0)
		return AP_EXIT_FAIL;
	const struct ap_trace *t = v.trace;
	int rc = AP_EXIT_FAIL;
	struct ap_site_map m;
	ap_advise_sites(t, v.sym, false, &m);
	struct ap_error err;
	struct ap_advice *a = ap_advise_run(t, &m, &ao, &err);
	struct tsite ts[AP_TRY_MAX_SITES];
	size_t nts = 0;
	struct run *rs = NULL;
	struct out_ref ref = {0}, cur = {0};
	struct ap_buf pb = AP_BUF_INIT;
	char **envp = NULL, **envp_plain = NULL;
	char dir[PATH_MAX] = "";
	struct variant_result *vr = NULL;
	size_t nv = 0;
	memset(ts, 0, sizeof(ts));
	if (!a) {
		ap_print_error(&err);
		goto out;
	}

	/* The program. */
	char **pargv;
	if (dd < argc) {
		if (dd + 1 == argc) {
			ap_usage_error("try", "no program after --");
			rc = AP_EXIT_USAGE;
			goto out;
		}
		pargv = argv + dd + 1;
	} else {
		if (!t->argc || !t->argv || !t->argv[0]) {
			ap_say("try: %s: the trace has no command line; give one after --",
				   trace_path);
			goto out;
		}
		pargv = t->argv;
	}
	char path[PATH_MAX], lib[PATH_MAX];
	if (ap_find_program(pargv[0], path, sizeof(path)) < 0) {
		ap_say("try: %s: %s", pargv[0], strerror(errno));
		goto out;
	}
	char shown[PATH_MAX + 8];
	snprintf(shown, sizeof(shown), "try: %s", pargv[0]);
	if (ap_check_program(shown, path) < 0 || refuse_program(pargv[0], path) < 0 ||
	    find_library(lib, sizeof(lib)) < 0)
		goto out;

	/* advise's prediction: the model, and its measured replay (whose
	 * verdicts are the ones advise prints: the sites are chosen after). */
	ap_view_measure_run(&vm, a, t, &m, &ao);

	/* The sites. */
	if (nspec) {
		for (size_t i = 0; i < nspec; i++) {
			const struct ap_advise_site *s = find_site(a, site_spec[i]);
			if (!s)
				goto out;
			bool dup = false;
			for (size_t k = 0; k < nts; k++)
				dup |= ts[k].as == s;
			if (!dup)
				ts[nts++].as = s;
			if (ap_advise_by_copy(s))
				ap_say("try: note: %s: %s", s->name, BY_COPY_NOTE);
		}
	} else {
		for (size_t i = 0; i < a->nsites && nts < AP_TRY_MAX_SITES; i++) {
			if (!pool_verdict(a->sites[i].verdict))
				continue;
			if (ap_advise_by_copy(&a->sites[i])) {
				ap_say("try: note: %s: %s; not tried (name it with --site to try a pool "
				       "of its blocks)",
				       a->sites[i].name, BY_COPY_NOTE);
				continue;
			}
			ts[nts++].as = &a->sites[i];
		}
		if (!nts) {
			ap_say("try: %s: advise finds no site to pool; name one with --site "
				   "(allocprof "
				   "advise -n 0 lists them)",
				   trace_path);
			goto out;
		}
	}
	for (size_t i = 0; i < nts; i++) {
		const struct ap_advise_site *s = ts[i].as;
		if (ap_advise_site_shape(s) == AP_VERDICT_POOL_CAP && s->capped)
			ts[i].cap = s->cap;
		if (ap_advise_site_shape(s) == AP_VERDICT_SIZE_CLASSES)
		{
			for (size_t k = 0; k < s->nclasses && k < AP_TRY_MAX_CLASSES; k++)
				ts[i].classes[ts[i].nclasses++] = s->classes[k];
			ts[i].round_up = s->round_up;
		}
		site_pcs(&ts[i], t, &m, v.sym, (uint32_t)i);
		if (!ts[i].npcs) {
			ap_say(
			    "try: %s: no call path of it can be found again (its modules have "
			    "no build-id, or its stacks are over 64 frames deep)",
			    s->name);
			goto out;
		}
	}

	/* The environment: the library first in LD_PRELOAD. */
	extern char **environ;
	size_t ne = 0;
	while (environ[ne])
		ne++;
	envp = ap_xcalloc(ne + 3, sizeof(*envp));
	envp_plain = ap_xcalloc(ne + 1, sizeof(*envp_plain));
	size_t k = 0, kp = 0;
	const char *pre = getenv("LD_PRELOAD");
	ap_buf_addf(&pb, "LD_PRELOAD=%s%s%s", lib, pre && *pre ? ":" : "", pre && *pre ? pre : "");
	for (size_t i = 0; i < ne; i++) {
		if (strncmp(environ[i], AP_TRY_ENV "=", strlen(AP_TRY_ENV) + 1))
			envp_plain[kp++] = environ[i]; /* the caller's LD_PRELOAD stays */
		if (strncmp(environ[i], "LD_PRELOAD=", 11) &&
		    strncmp(environ[i], AP_TRY_ENV "=", strlen(AP_TRY_ENV) + 1))
			envp[k++] = environ[i];
	}
	envp[k++] = pb.buf;
	struct runner rn = {.argv = pargv,
			    .path = path,
			    .envp = envp,
			    .envp_plain = envp_plain,
			    .env_try = k,
			    .stdin_fd = -1};
	envp[k + 1] = NULL;

	/* Standard input, read once. */
	if (!isatty(0)) {
		int fd = memfd_create("allocprof-try-in", MFD_CLOEXEC);
		char buf[65536];
		ssize_t r;
		while (fd >= 0 && (r = read(0, buf, sizeof(buf))) != 0) {
			if (r < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			if (write(fd, buf, (size_t)r) != r)
				break;
		}
		rn.stdin_fd = fd;
	}

	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/allocprof-try-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		ap_say("try: %s: %s", dir, strerror(errno));
		dir[0] = 0;
		goto out;
	}
	char outfile[PATH_MAX + 16], cfg[PATH_MAX + 16];
	snprintf(outfile, sizeof(outfile), "%s/out", dir);
	rn.outfile = outfile;
	/* The variants: the baseline (0), each site pooled (1 + i), and the
	 * program as it is, without the library (nv - 1: no config). */
	nv = nts + 2;
	for (size_t j = 0; j + 1 < nv; j++) {
		snprintf(cfg, sizeof(cfg), "%s/v%zu.cfg", dir, j);
		if (write_config(cfg, (ssize_t)j - 1, outfile, a, ts, nts, t, &m, v.sym) < 0)
			goto out;
	}

	/* The runs: each round every variant once, starting one further each
	 * round. */
	stop_handlers(true, old_sa);
	handlers = true;
	rs = ap_xcalloc((size_t)runs * nv, sizeof(*rs));
	bool identical = true, deterministic = true;
	char differs[512] = "";
	bool progress = !json && ap_progress_wanted();
	for (long r = 0; r < runs; r++) {
		for (size_t q = 0; q < nv; q++) {
			size_t j = ((size_t)r + q) % nv;
			char why[600] = "";
			bool plain = j == nv - 1;
			snprintf(cfg, sizeof(cfg), "%s/v%zu.cfg", dir, j);
			if (progress) {
				fprintf(stderr, "\rallocprof: try: round %ld of %ld", r + 1, runs);
				fflush(stderr);
			}
			if (run_once(&rn, plain ? NULL : cfg, &rs[(size_t)r * nv + j], &cur, why,
				     sizeof(why)) < 0 ||
			    try_stop) {
				if (progress)
					fputs("\r\033[K", stderr);
				goto out;
			}
			if (why[0]) {
				if (progress)
					fputs("\r\033[K", stderr);
				ap_say("try: %s: %s: a pooled block could not be told from its "
					   "blocks; "
					   "not measured",
					   pargv[0], why);
				goto out;
			}
			if (!plain && !rs[(size_t)r * nv + j].procs) {
				if (progress)
					fputs("\r\033[K", stderr);
				char st[64];
				if (WIFSIGNALED(cur.status))
					snprintf(st, sizeof(st), "killed by %s",
						 strsignal(WTERMSIG(cur.status)));
				else
					snprintf(st, sizeof(st), "exit status %d",
						 WEXITSTATUS(cur.status));
				ap_say("try: %s: no counts from the run (%s): " TRY_SO
					   " was not loaded "
					   "(the program cleared LD_PRELOAD, or ran a static or "
					   "setuid program), "
					   "or the program was killed",
					   pargv[0], st);
				goto out;
			}
			if (!ref.set) {
				ref = cur;
				memset(&cur, 0, sizeof(cur));
				continue;
			}
			if (!same_output(&ref, &cur)) {
				if ((j == 0 || plain) && deterministic) {
					/* a run without a pool differs: no output of the
					 * program's is a reference */
					deterministic = false;
					say_difference(differs, sizeof(differs), &ref, &cur);
				} else if (!plain && j && identical && deterministic) {
					/* a pooled run differs: is the baseline itself stable? */
					identical = false;
					char d[400];
					say_difference(d, sizeof(d), &ref, &cur);
					snprintf(differs, sizeof(differs),
						 "round %ld, pooling %s: %s", r + 1,
						 ts[j - 1].as->name, d);
				}
			}
			out_free(&cur);
		}
	}
	if (progress)
		fputs("\r\033[K", stderr);
	if (!deterministic)
		identical = false;

	/* The medians; what the library alone does (the baseline less the
	 * program); each site's saving against the baseline and against the
	 * program, with their intervals, and the verdict from them. */
	vr = ap_xcalloc(nv, sizeof(*vr));
	double *d = ap_xmalloc((size_t)runs * sizeof(*d));
	size_t jp = nv - 1;
	for (long r = 0; r < runs; r++)
		d[r] = rs[(size_t)r * nv].cpu_ns - rs[(size_t)r * nv + jp].cpu_ns;
	struct paired alone = paired_of(d, (size_t)runs);
	for (size_t j = 0; j < nv; j++) {
		medians(rs, (size_t)runs, nv, j, j && j < jp ? (unsigned)(j - 1) : 0, &vr[j]);
		if (!j || j == jp)
			continue;
		for (long r = 0; r < runs; r++)
			d[r] = rs[(size_t)r * nv].cpu_ns - rs[(size_t)r * nv + j].cpu_ns;
		vr[j].vs_base = paired_of(d, (size_t)runs);
		for (long r = 0; r < runs; r++)
			d[r] = rs[(size_t)r * nv + jp].cpu_ns - rs[(size_t)r * nv + j].cpu_ns;
		vr[j].vs_prog = paired_of(d, (size_t)runs);
		vr[j].stands = baseline_stands(vr[j].vs_base.ns, alone.ns);
		vr[j].verdict =
		    verdict_of(&vr[j].vs_base, &vr[j].vs_prog, vr[j].stands, (size_t)runs);
	}
	/* Whether the baseline reached each site (its gets). */
	bool unreached = false;
	for (size_t i = 0; i < nts; i++) {
		for (long r = 0; r < runs; r++)
			d[r] = rs[(size_t)r * nv].s[i].gets;
		vr[i + 1].reached = median_of(d, (size_t)runs);
		if (vr[i + 1].reached == 0 && vr[i + 1].c.gets == 0)
			unreached = true;
	}
	/* Every pooled run's requests at the other sites, against the range
	 * of the baseline's runs, give or take a factor of two (a program
	 * whose threads race makes more or fewer from run to run:
	 * tests/try's semantics, whose churning threads stop when another
	 * has forked ten times, 6 % and more apart on a busy CPU). */
	bool same_requests = true;
	char req_differs[512] = "";
	for (size_t j = 1; j < jp && same_requests; j++)
		for (size_t i = 0; i < nts && same_requests; i++) {
			if (i == j - 1)
				continue;
			double lo = INFINITY, hi = 0;
			for (long r = 0; r < runs; r++) {
				lo = fmin(lo, rs[(size_t)r * nv].s[i].gets);
				hi = fmax(hi, rs[(size_t)r * nv].s[i].gets);
				d[r] = rs[(size_t)r * nv + j].s[i].gets;
			}
			double got = median_of(d, (size_t)runs), want = vr[i + 1].reached;
			if (got < lo / 2 - 2 || got > 2 * hi + 2) {
				/* (the names are the program's: made safe to print) */
				struct ap_buf n1 = AP_BUF_INIT, n2 = AP_BUF_INIT;
				same_requests = false;
				snprintf(req_differs, sizeof(req_differs),
					 "%s: %.0f requests in the runs pooling %s, %.0f in the baseline's",
					 ap_safe_name(&n1, ts[i].as->name), got,
					 ap_safe_name(&n2, ts[j - 1].as->name), want);
				ap_buf_release(&n1);
				ap_buf_release(&n2);
			}
		}
	free(d);

	struct report rp = {.t = t,
			    .a = a,
			    .argv = pargv,
			    .rounds = (size_t)runs,
			    .nv = nv,
			    .ts = ts,
			    .nts = nts,
			    .vr = vr,
			    .lib = alone,
			    .identical = identical,
			    .deterministic = deterministic,
			    .same_requests = same_requests};
	snprintf(rp.differs, sizeof(rp.differs), "%s", differs);
	snprintf(rp.req_differs, sizeof(rp.req_differs), "%s", req_differs);
	int prc = json ? print_json(&rp) : (print_text(&rp), AP_EXIT_OK);
	rc = prc;
	fflush(stdout);
	for (size_t i = 0; i < nts; i++)
		if (vr[i + 1].reached == 0 && vr[i + 1].c.gets == 0)
			ap_say(
			    "try: %s: never reached in %ld runs: none of its %zu call path%s "
			    "ran (another input, or a program rebuilt since the trace?)",
			    ts[i].as->name, runs * (long)(nv - 1), ts[i].npcs,
			    ts[i].npcs == 1 ? "" : "s");
	if (unreached)
		rc = AP_EXIT_FAIL;
	if (deterministic && !identical) {
		ap_say("try: %s: the program's output changed with the pool: %s", pargv[0],
			   differs);
		rc = AP_EXIT_FAIL;
	}
	if (rn.stdin_fd >= 0)
		close(rn.stdin_fd);
out:
	ap_buf_release(&pb);
	if (dir[0])
		remove_scratch(dir, nv);
	out_free(&ref);
	out_free(&cur);
	free(rs);
	free(vr);
	free(envp);
	free(envp_plain);
	for (size_t i = 0; i < AP_TRY_MAX_SITES; i++)
		ap_buf_release(&ts[i].pcs);
	if (a)
		ap_advice_free(a);
	ap_site_map_release(&m);
	ap_view_release(&v);
	if (handlers)
		stop_handlers(false, old_sa);
	if (try_stop) {
		signal(try_stop, SIG_DFL);
		raise(try_stop);
	}
	return rc;
}
