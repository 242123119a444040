/* A program with code in no file, as a JIT has: it writes a function into
 * an anonymous executable mapping, names it in the perf map
 * /tmp/perf-<pid>.map (the format perf reads: "START SIZE name"), and
 * calls it 300 times; each call allocates 100 bytes with malloc, so the
 * call site of 300 allocations is the JIT's jit_make_buffer. The map is
 * left for the test to remove.
 * usage: jit [MAPDIR]  (default /tmp) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef void *(*jit_fn)(void);

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return perror("mmap"), 1;
	/* push rbp; mov rbp,rsp; mov edi,100; movabs rax,malloc; call rax;
	 * pop rbp; ret */
	void *(*m)(size_t) = malloc;
	uint64_t target = (uint64_t)(uintptr_t)m;
	uint8_t fn[] = {0x55, 0x48, 0x89, 0xe5, 0xbf, 100, 0, 0, 0, 0x48, 0xb8, 0, 0, 0, 0, 0, 0,
			0, 0, 0xff, 0xd0, 0x5d, 0xc3};
	memcpy(fn + 11, &target, 8);
	uint8_t *at = code + 64;
	memcpy(at, fn, sizeof(fn));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC) < 0)
		return perror("mprotect"), 1;
	char path[4096];
	snprintf(path, sizeof(path), "%s/perf-%d.map", dir, (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return perror(path), 1;
	fprintf(f, "%lx %zx jit_other\n", (unsigned long)(uintptr_t)code, (size_t)64);
	fprintf(f, "%lx %zx jit_make_buffer\n", (unsigned long)(uintptr_t)at, sizeof(fn));
	fclose(f);
	jit_fn call = (jit_fn)(uintptr_t)at;
	void *keep[300];
	for (int i = 0; i < 300; i++)
		keep[i] = call();
	long sum = 0;
	for (int i = 0; i < 300; i++) {
		sum += keep[i] != NULL;
		free(keep[i]);
	}
	printf("%ld\n", sum);
	return 0;
}
