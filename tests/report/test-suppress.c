/* Leak suppressions (report/suppress.c): the leak:PATTERN syntax (glob,
 * anchors, literal regex characters), the frames a rule reads (from the
 * call site outwards: function, whole name, module, file), the built-in
 * rule (a call site in libstdc++ or in glibc's _IO_file_doallocate), and
 * the errors of a bad file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ap_check.h"
#include "ap_report.h"

static char dir[] = "/tmp/test-suppress-XXXXXX";

static struct ap_suppressions *load(const char *text, bool builtin, struct ap_error *err)
{
	char path[64];
	snprintf(path, sizeof(path), "%s/s.supp", dir);
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return ap_suppress_new(path, builtin, err);
}

/* A stack: an allocator frame (malloc), then the call site `func` in
 * `module`, then main. */
static int match(const struct ap_suppressions *s, const char *func, const char *full,
		 const char *module, const char *file)
{
	struct ap_frame fr[3] = {
	    {.func = "malloc", .full = "malloc", .module = "/lib/libc.so.6", .allocator = true},
	    {.func = func, .full = full ? full : func, .module = module, .file = file},
	    {.func = "main", .full = "main", .module = "/bin/app", .file = "/src/main.c"},
	};
	return ap_suppress_stack(s, fr, 3, 1);
}

int main(void)
{
	struct ap_error err;
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	struct ap_suppressions *s = load("# comment\n\n  leak:cache_*\r\n"
					 "leak:^app::Pool::get$\nleak:a.b\nleak:/vendor/\n",
					 false, &err);
	CHECK(s, "load: %s", err.msg);
	if (s) {
		CHECK(match(s, "fill_cache_now", NULL, "/bin/app", NULL) == 0,
		      "glob in the middle");
		CHECK(match(s, "cache", NULL, "/bin/app", NULL) == -1, "'cache_*' needs the '_'");
		CHECK(match(s, "app::Pool::get", "app::Pool<int>::get(int)", "/bin/app", NULL) == 1,
		      "anchored, on the short name");
		CHECK(match(s, "app::Pool::getter", NULL, "/bin/app", NULL) == -1, "'$' anchors");
		CHECK(match(s, "x", "a.b()", "/bin/app", NULL) == 2, "the whole name");
		CHECK(match(s, "x", "axb", "/bin/app", NULL) == -1, "'.' is literal");
		CHECK(match(s, "x", NULL, "/opt/vendor/lib.so", NULL) == 3, "the module");
		CHECK(match(s, "x", NULL, "/bin/app", "/src/vendor/x.c") == 3, "the file");
		CHECK(match(s, "parse", NULL, "/bin/app", "/src/p.c") == -1, "no rule");
		/* a caller's frame: from the call site outwards */
		struct ap_suppressions *m = load("leak:^main$\n", false, &err);
		CHECK(m && match(m, "parse", NULL, "/bin/app", NULL) == 0, "a caller matches");
		/* allocator frames are not read */
		struct ap_suppressions *a = load("leak:malloc\n", false, &err);
		CHECK(a && match(a, "parse", NULL, "/bin/app", NULL) == -1, "allocator frames");
		ap_suppress_free(m);
		ap_suppress_free(a);
	}
	ap_suppress_free(s);

	/* the built-in rule: the call site only */
	s = ap_suppress_new(NULL, true, &err);
	CHECK(s && match(s, "libstdc++.so.6+0xa57ba", NULL,
			 "/usr/lib/x86_64-linux-gnu/libstdc++.so.6", NULL) == 0,
	      "libstdc++'s own call site");
	CHECK(s && match(s, "__GI__IO_file_doallocate", NULL, "/lib/libc.so.6", NULL) == 0,
	      "stdout's buffer");
	CHECK(s && match(s, "getline", NULL, "/lib/libc.so.6", NULL) == -1,
	      "other libc call sites are the program's");
	ap_suppress_free(s);
	s = ap_suppress_new(NULL, false, &err);
	CHECK(s && match(s, "libstdc++.so.6+0xa57ba", NULL, "/usr/lib/libstdc++.so.6", NULL) == -1,
	      "no built-in rule without builtin");
	ap_suppress_free(s);

	/* errors */
	s = load("leak:ok\nfun:malloc\n", false, &err);
	char want[128];
	snprintf(want, sizeof(want), "%s/s.supp:2: not a suppression 'leak:PATTERN': 'fun:malloc'",
		 dir);
	CHECK(!s && !strcmp(err.msg, want), "a bad line: %s", s ? "accepted" : err.msg);
	ap_suppress_free(s);
	s = load("leak:\n", false, &err);
	CHECK(!s && strstr(err.msg, ":1: not a suppression"), "an empty pattern: %s",
	      s ? "accepted" : err.msg);
	ap_suppress_free(s);
	s = ap_suppress_new("/nonexistent/s.supp", true, &err);
	CHECK(!s && !strcmp(err.msg, "/nonexistent/s.supp: No such file or directory"),
	      "a missing file: %s", s ? "accepted" : err.msg);

	char path[64];
	snprintf(path, sizeof(path), "%s/s.supp", dir);
	unlink(path);
	rmdir(dir);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
