/* Whole runs: a trace and the traces of the processes and images that
 * followed it, read as one (ap_trace.h, "Whole runs"). */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ap_trace.h"
#include "trace-int.h"
#include "heap.h"

/* The decimal at *p (digits only), moved past; false if there is none. */
static bool skip_digits(const char **p)
{
	const char *q = *p;
	while (*q >= '0' && *q <= '9')
		q++;
	if (q == *p)
		return false;
	*p = q;
	return true;
}

bool ap_trace_is_child_suffix(const char *s)
{
	/* [.<pid>[-<n>]][.exec<gen>[-<n>]], at least one part
	 * (sampler/README.md, "fork and exec") */
	const char *p = s;
	bool any = false;
	if (*p == '.' && p[1] >= '0' && p[1] <= '9') {
		p++;
		skip_digits(&p);
		if (*p == '-' && (p++, !skip_digits(&p)))
			return false;
		any = true;
	}
	if (!strncmp(p, ".exec", 5)) {
		p += 5;
		if (!skip_digits(&p))
			return false;
		if (*p == '-' && (p++, !skip_digits(&p)))
			return false;
		any = true;
	}
	return any && !*p;
}

bool ap_trace_file_is_trace(const char *path)
{
	char magic[AP_TRACE_MAGIC_LEN];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool yes = read(fd, magic, sizeof(magic)) == (ssize_t)sizeof(magic) &&
		   !memcmp(magic, AP_TRACE_MAGIC, AP_TRACE_MAGIC_LEN);
	close(fd);
	return yes;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t ap_trace_children(const char *path, time_t since, char ***out)
{
	char dir[PATH_MAX * 2 + 64];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	const char *base = path;
	if (slash) {
		*slash = 0;
		base = path + (slash - dir) + 1;
	}
	*out = NULL;
	DIR *d = opendir(!slash ? "." : dir[0] ? dir : "/");
	if (!d)
		return 0;
	size_t bl = strlen(base), n = 0, alloc = 0;
	char **names = NULL;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, base, bl) || !ap_trace_is_child_suffix(de->d_name + bl))
			continue;
		struct ap_buf p = AP_BUF_INIT;
		if (slash)
			ap_buf_addf(&p, "%s/%s", dir, de->d_name);
		else
			ap_buf_addstr(&p, de->d_name);
		/* never through a symbolic link: the sampler makes none, and
		 * one planted by another user (in a directory others can
		 * write) must not make the run unreadable; nor a file of a
		 * child's name that is no trace */
		struct stat st;
		if (lstat(p.buf, &st) < 0 || !S_ISREG(st.st_mode) || st.st_mtime < since ||
		    (st.st_size > 0 && !ap_trace_file_is_trace(p.buf))) {
			ap_buf_release(&p);
			continue;
		}
		AP_ALLOC_GROW(names, n + 1, alloc);
		names[n++] = ap_buf_detach(&p, NULL);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	*out = names;
	return n;
}

void ap_run_release(struct ap_run *run)
{
	for (size_t i = 0; i < run->n; i++) {
		ap_trace_free(run->traces[i]);
		free(run->paths[i]);
	}
	free(run->traces);
	free(run->paths);
	memset(run, 0, sizeof(*run));
}

static bool run_has(const struct ap_run *run, const char *path)
{
	for (size_t i = 0; i < run->n; i++)
		if (!strcmp(run->paths[i], path))
			return true;
	return false;
}

static void run_add(struct ap_run *run, size_t *alloc, char *path, struct ap_trace *t)
{
	if (run->n + 1 > *alloc) {
		*alloc = *alloc ? *alloc * 2 : 4;
		run->traces = ap_xrealloc(run->traces, *alloc * sizeof(*run->traces));
		run->paths = ap_xrealloc(run->paths, *alloc * sizeof(*run->paths));
	}
	run->traces[run->n] = t;
	run->paths[run->n++] = path;
}

int ap_run_read(struct ap_run *run, const char *const *paths, size_t n, bool children,
		struct ap_error *err, ap_progress_fn progress, void *progress_ctx)
{
	memset(run, 0, sizeof(*run));
	size_t alloc = 0;
	for (size_t i = 0; i < n; i++) {
		if (run_has(run, paths[i]))
			continue;
		struct ap_trace *t;
		if (ap_trace_read(paths[i], &t, err, progress, progress_ctx) < 0)
			goto fail;
		run_add(run, &alloc, ap_xstrdup(paths[i]), t);
		if (!children)
			continue;
		uint64_t began = t->start_realtime_ns;
		char **kids;
		size_t nk = ap_trace_children(paths[i], 0, &kids);
		for (size_t k = 0; k < nk; k++) {
			struct ap_trace *c = NULL;
			/* an empty file is a trace made ahead for an image
			 * that has not come (yet): a root process that dropped
			 * to another user makes its next image's before */
			struct stat st;
			if (run_has(run, kids[k]) || /* given too */
			    (stat(kids[k], &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)) {
				free(kids[k]);
				continue;
			}
			if (ap_trace_read(kids[k], &c, err, progress, progress_ctx) < 0) {
				/* say why a file the user did not name was read */
				struct ap_buf m = AP_BUF_INIT;
				ap_buf_addf(&m, "%s (a child trace of %s; --no-children reads %s alone)",
					    err->msg, paths[i], paths[i]);
				ap_error_set(err, "%s", m.buf);
				ap_buf_release(&m);
				for (size_t j = k; j < nk; j++)
					free(kids[j]);
				free(kids);
				goto fail;
			}
			/* A child trace that began before the trace itself is
			 * left from an earlier run written to the same path; one
			 * whose HEADER names another run (a daemon of an earlier
			 * run forked it, or exec'd it, after this run began) is
			 * that run's. */
			if (c->start_realtime_ns < began ||
			    (c->run_pid && t->run_pid && c->run_pid != t->run_pid) ||
			    (c->run_id && t->run_id && c->run_id != t->run_id)) {
				ap_trace_free(c);
				free(kids[k]);
				continue;
			}
			run_add(run, &alloc, kids[k], c);
		}
		free(kids);
	}
	return 0;
fail:
	ap_run_release(run);
	return -1;
}

/* ---- merging ---- */

/* The merged trace's events (its ap_trace.src): the traces of the run,
 * kept, and where each one's threads and stacks start in the merged
 * numbering. */
struct run_src {
	struct ap_evsrc base;
	struct ap_trace **traces;
	size_t n;
	size_t *thread_base, *stack_base;
};

/* An iteration: the processes' own, merged by time through a binary heap
 * (util/heap.h) of the next event of each, keyed (its time, the process):
 * ties go to the earlier process, then its own order. */
struct proc_it {
	struct ap_events *it;
	const struct ap_event *ev; /* its batch: ev[i, n) not handed out yet */
	size_t i, n;
};

struct run_it {
	const struct run_src *r;
	struct proc_it *p;
	struct ap_heap_key *h;
	size_t nh;
	/* a process's events that could not go on (ap_events_error): the
	 * iteration ends with it */
	const char *why;
	struct ap_event out[AP_EVENTS_BATCH];
};

/* Fills x's batch if it is used up; false when x has no more, or its
 * events cannot go on (m->why set). */
static bool proc_fill(struct run_it *m, struct proc_it *x, size_t *i)
{
	if (*i < x->n)
		return true;
	*i = 0;
	ssize_t n = ap_events_next(x->it, &x->ev);
	if (n < 0 && !m->why)
		m->why = ap_events_error(x->it);
	x->n = n > 0 ? (size_t)n : 0;
	return n > 0;
}

static void *run_open(struct ap_evsrc *src)
{
	struct run_src *r = (struct run_src *)src;
	struct run_it *m = ap_xcalloc(1, sizeof(*m));
	m->r = r;
	m->p = ap_xcalloc(r->n, sizeof(*m->p));
	m->h = ap_xmalloc(r->n * sizeof(*m->h));
	for (size_t p = 0; p < r->n; p++) {
		m->p[p].it = ap_events_open(r->traces[p]);
		if (proc_fill(m, &m->p[p], &m->p[p].i))
			m->h[m->nh++] = (struct ap_heap_key){m->p[p].ev[0].ts, p};
	}
	ap_heap_make(m->h, m->nh);
	return m;
}

static ssize_t run_next(void *state, const struct ap_event **out, struct ap_error *err)
{
	struct run_it *m = state;
	const struct run_src *r = m->r;
	size_t n = 0;
	*out = m->out;
	while (m->nh && n < AP_EVENTS_BATCH && !m->why) {
		struct ap_heap_key *x = &m->h[0];
		size_t proc = x->id;
		struct proc_it *pi = &m->p[proc];
		struct ap_event e = pi->ev[pi->i];
		e.addr += (uint64_t)proc << AP_RUN_SHIFT;
		e.thread = (uint32_t)(e.thread + r->thread_base[proc]);
		if (e.stack)
			e.stack = (uint32_t)(e.stack + r->stack_base[proc]);
		m->out[n++] = e;
		pi->i++;
		if (proc_fill(m, pi, &pi->i)) {
			x->ts = pi->ev[pi->i].ts;
			ap_heap_down(m->h, m->nh, 0);
		} else {
			ap_heap_pop(m->h, &m->nh);
		}
	}
	if (m->why)
		return ap_error_set(err, "%s", m->why);
	return (ssize_t)n;
}

static void run_close(void *state)
{
	struct run_it *m = state;
	for (size_t p = 0; p < m->r->n; p++)
		ap_events_close(m->p[p].it);
	free(m->p);
	free(m->h);
	free(m);
}

static void run_src_release(struct ap_evsrc *src)
{
	struct run_src *r = (struct run_src *)src;
	for (size_t p = 0; p < r->n; p++)
		ap_trace_free(r->traces[p]);
	free(r->traces);
	free(r->thread_base);
	free(r->stack_base);
	free(r);
}

static bool run_changed(const struct ap_evsrc *src)
{
	const struct run_src *r = (const struct run_src *)src;
	for (size_t p = 0; p < r->n; p++)
		if (ap_trace_changed(r->traces[p]))
			return true;
	return false;
}

static const struct ap_evsrc_ops run_ops = {run_open, run_next, run_close, run_src_release,
					    run_changed};

static char *join_argv(const struct ap_trace *t)
{
	struct ap_buf b = AP_BUF_INIT;
	for (size_t i = 0; i < t->argc; i++)
		ap_buf_addf(&b, "%s%s", i ? " " : "", t->argv[i]);
	if (!t->argc)
		ap_buf_addstr(&b, t->exe);
	return ap_buf_detach(&b, NULL);
}

int ap_run_merge(struct ap_run *run, struct ap_trace **out, struct ap_error *err)
{
	if (run->n > AP_RUN_MAX_PROCS)
		return ap_error_set(err, "%s: %zu traces in one run; at most %d can be read together",
				    run->paths[0], run->n, AP_RUN_MAX_PROCS);
	size_t nthreads = 0, nstacks = 1, npcs = 0, nmaps = 0, nev = 0;
	for (size_t p = 0; p < run->n; p++) {
		const struct ap_trace *t = run->traces[p];
		if (t->rate != run->traces[0]->rate)
			return ap_error_set(err,
					    "%s, %s: recorded at different rates (%llu, %llu); "
					    "traces read together need one rate",
					    run->paths[0], run->paths[p],
					    (unsigned long long)run->traces[0]->rate,
					    (unsigned long long)t->rate);
		nthreads += t->nthreads;
		nstacks += t->nstacks - 1;
		for (size_t s = 1; s < t->nstacks; s++)
			npcs += t->stacks[s].depth;
		nmaps += t->nmaps;
		nev += t->nev;
	}
	if (nthreads > AP_MAX_THREADS)
		return ap_error_set(err, "%s: %zu threads in one run; at most %u can be read together",
				    run->paths[0], nthreads, AP_MAX_THREADS);
	if (run->n == 1) {
		*out = run->traces[0];
		run->traces[0] = NULL;
		ap_run_release(run);
		return 0;
	}

	struct ap_trace *m = ap_xcalloc(1, sizeof(*m));
	struct ap_trace *root = run->traces[0];
	/* The root's identity, moved over. */
	*m = *root;
	root->exe = NULL;
	root->argv = NULL;
	root->argc = 0;
	root->sampler = NULL;
	root->parent_trace = NULL;
	root->malloc_owner = NULL;
	m->maps = ap_xcalloc(nmaps ? nmaps : 1, sizeof(*m->maps));
	m->nmaps = 0;
	m->threads = ap_xcalloc(nthreads ? nthreads : 1, sizeof(*m->threads));
	m->nthreads = 0;
	m->stacks = ap_xcalloc(nstacks, sizeof(*m->stacks));
	m->nstacks = 1;
	uint64_t *pool = ap_xmalloc((npcs ? npcs : 1) * sizeof(*pool));
	m->stacks[0].pcs = pool;
	m->ev = NULL;
	m->nev = nev;
	m->last_ts = 0;
	m->src = NULL;
	m->events_progress = NULL;
	m->procs = ap_xcalloc(run->n, sizeof(*m->procs));
	m->nprocs = run->n;
	m->map_index = NULL;
	m->nmap_index = 0;
	m->has_end = true;
	m->has_counts = true;
	/* each process's counter peaked at its own time: no whole-run peak */
	m->has_live_peak = false;
	m->live_peak = m->live_slack = 0;
	m->calls = m->bytes = m->cpu_ns = 0;
	m->spawn_unfollowed = 0;
	m->has_switches = m->has_minflt = true;
	m->nvcsw = m->nivcsw = m->unwind_ns = m->minflt = 0;
	m->sampler_waits = m->sampler_wait_ns = 0;
	/* Addresses of several processes do not mix: a whole run has no
	 * list of pooled objects (advise goes process by process). */
	m->pooled = NULL;
	m->npooled = 0;
	/* each process's symbols come over with its mappings, below */
	memset(&m->symtab, 0, sizeof(m->symtab));
	m->truncated = false;
	m->file_size = m->bytes_used = m->nrecords = m->ngap_records = 0;

	size_t *thread_base = ap_xcalloc(run->n, sizeof(*thread_base));
	size_t *stack_base = ap_xcalloc(run->n, sizeof(*stack_base));
	size_t pcs_used = 0;
	for (size_t p = 0; p < run->n; p++) {
		struct ap_trace *t = run->traces[p];
		uint64_t shift = (uint64_t)p << AP_RUN_SHIFT;
		struct ap_process *pr = &m->procs[p];
		pr->path = ap_xstrdup(run->paths[p]);
		pr->pid = t->pid;
		pr->ppid = t->ppid;
		pr->cmdline = join_argv(t == root ? m : t);
		pr->exe = ap_xstrdup(t == root ? m->exe : t->exe);
		pr->first_thread = m->nthreads;
		pr->nthreads = t->nthreads;
		pr->events = t->nev;
		pr->has_end = t->has_end;
		pr->has_counts = t->has_counts;
		pr->calls = t->calls;
		pr->bytes = t->bytes;
		pr->end_reason = t->end_reason;
		pr->end_status = t->end_status;
		pr->end_status_known = t->end_status_known;
		pr->forked = t->parent_trace != NULL;
		pr->end_ns = t->end_ns;

		thread_base[p] = m->nthreads;
		for (size_t i = 0; i < t->nthreads; i++) {
			m->threads[m->nthreads] = t->threads[i];
			m->threads[m->nthreads++].proc = (uint32_t)p;
			t->threads[i].name = NULL;
		}
		t->nthreads = 0;
		stack_base[p] = m->nstacks - 1;
		for (size_t s = 1; s < t->nstacks; s++) {
			struct ap_stack *d = &m->stacks[m->nstacks++];
			d->depth = t->stacks[s].depth;
			d->pcs = pool + pcs_used;
			for (uint32_t k = 0; k < d->depth; k++)
				d->pcs[k] = t->stacks[s].pcs[k] + shift;
			pcs_used += d->depth;
		}
		for (size_t i = 0; i < t->nmaps; i++) {
			struct ap_mapping *d = &m->maps[m->nmaps++];
			*d = t->maps[i];
			d->bias += shift;
			d->start += shift;
			d->end += shift;
		}
		t->nmaps = 0;
		ap_symtab_take(&m->symtab, &t->symtab, (uint32_t)(shift >> AP_RUN_SHIFT));

		if (t->start_ns < m->start_ns) {
			m->start_ns = t->start_ns;
			m->start_realtime_ns = t->start_realtime_ns;
		}
		if (t->end_ns > m->end_ns)
			m->end_ns = t->end_ns;
		if (t->last_ts > m->last_ts)
			m->last_ts = t->last_ts;
		if (t->cpus > m->cpus)
			m->cpus = t->cpus;
		if (t->allowed_cpus > m->allowed_cpus)
			m->allowed_cpus = t->allowed_cpus;
		if (t->max_depth > m->max_depth)
			m->max_depth = t->max_depth;
		if (t->time_quantum_ns > m->time_quantum_ns)
			m->time_quantum_ns = t->time_quantum_ns;
		m->has_end = m->has_end && t->has_end;
		m->has_counts = m->has_counts && t->has_counts;
		if (!m->malloc_owner && t->malloc_owner)
			m->malloc_owner = ap_xstrdup(t->malloc_owner);
		if (t->spawn_unfollowed && !m->spawn_unfollowed)
			memcpy(m->spawn_first, t->spawn_first, sizeof(m->spawn_first));
		m->spawn_unfollowed += t->spawn_unfollowed;
		m->calls += t->calls;
		m->bytes += t->bytes;
		m->cpu_ns += t->cpu_ns;
		m->has_switches = m->has_switches && t->has_switches;
		m->nvcsw += t->nvcsw;
		m->sampler_waits += t->sampler_waits;
		m->sampler_wait_ns += t->sampler_wait_ns;
		m->nivcsw += t->nivcsw;
		m->unwind_ns += t->unwind_ns;
		m->has_minflt = m->has_minflt && t->has_minflt;
		m->minflt += t->minflt;
		if (t->truncated && !m->truncated) {
			m->truncated = true;
			struct ap_buf why = AP_BUF_INIT;
			ap_buf_addf(&why, "%s: %s", run->paths[p], t->truncated_why);
			snprintf(m->truncated_why, sizeof(m->truncated_why), "%.*s",
				 (int)(sizeof(m->truncated_why) - 1), why.buf);
			ap_buf_release(&why);
		}
		m->file_size += t->file_size;
		m->bytes_used += t->bytes_used;
		m->nrecords += t->nrecords;
		m->resolved &= t->resolved;
		m->ngap_records += t->ngap_records;
	}
	if (!m->has_counts)
		m->calls = m->bytes = 0;
	/* The root's end is the run's (its exit status is record's); a root
	 * that exec'd ended where its last image did: PATH.exec<n>, the
	 * greatest n, of its pid. */
	const struct ap_trace *last = root;
	unsigned long last_n = 0;
	size_t rl = strlen(run->paths[0]);
	for (size_t p = 1; p < run->n && root->end_reason == AP_END_EXEC; p++) {
		const char *sfx = run->paths[p] + rl;
		char *end;
		if (strncmp(run->paths[p], run->paths[0], rl) || strncmp(sfx, ".exec", 5) ||
		    run->traces[p]->pid != root->pid)
			continue;
		unsigned long n = strtoul(sfx + 5, &end, 10);
		if (end != sfx + 5 && (!*end || *end == '-') && n > last_n) {
			last_n = n;
			last = run->traces[p];
		}
	}
	m->end_reason = last->end_reason;
	m->end_status = last->end_status;
	m->end_status_known = last->end_status_known;

	/* The traces stay, as the source of the events. */
	struct run_src *src = ap_xcalloc(1, sizeof(*src));
	src->base.ops = &run_ops;
	src->traces = run->traces;
	src->n = run->n;
	src->thread_base = thread_base;
	src->stack_base = stack_base;
	m->src = &src->base;
	run->traces = ap_xcalloc(run->n, sizeof(*run->traces));
	ap_trace_index_maps(m);
	ap_run_release(run);
	*out = m;
	return 0;
}
