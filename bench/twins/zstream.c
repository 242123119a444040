/* zstream: per-request compression streams. Each request compresses a
 * 4-20 KiB generated text with zlib: deflateInit, deflate, deflateEnd,
 * with zalloc/zfree set to z_alloc/z_free, so every request allocates
 * and frees zlib's state (about 6 KiB) and four 64 KiB arrays.
 * A pool should win big: 256 KiB freed at the top of the heap is more
 * than glibc's trim threshold (128 KiB), so glibc gives the pages back
 * and the next request faults them in again; the pool keeps them.
 * Twin: z_alloc takes blocks from two vpools (up to 16 KiB, and above:
 * the size classes a hand-pooler would make), z_free puts them back. */
// site: z_alloc
// libs: -lz
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "twin.h"

/* The sizes of one stream's blocks, so that the twin's cycle pacing
 * knows what a free gives back (zfree is not told). */
struct zsizes {
	void *p[8];
	size_t n[8];
};

#ifdef TWIN
static struct vpool small, big;
#endif

TW_SITE static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
	struct zsizes *zs = opaque;
	size_t n = (size_t)items * size;
#ifdef TWIN
	void *p = tw_get(n <= 16384 ? &small : &big, n);
#else
	void *p = malloc(n);
#endif
	TW_ALLOC(n);
	for (int i = 0; i < 8; i++)
		if (!zs->p[i]) {
			zs->p[i] = p;
			zs->n[i] = n;
			break;
		}
	return p;
}

TW_SITE static void z_free(voidpf opaque, voidpf p)
{
	struct zsizes *zs = opaque;
	size_t n = 0;
	for (int i = 0; i < 8; i++)
		if (zs->p[i] == p) {
			zs->p[i] = NULL;
			n = zs->n[i];
			break;
		}
	(void)n;
	TW_FREE(n);
#ifdef TWIN
	vpool_put(n <= 16384 ? &small : &big, p);
#else
	free(p);
#endif
}

int main(int argc, char **argv)
{
	static const char *words[] = { "alloc", "free", "pool", "victim", "cycle", "heap",
					"page", "fault", "trim", "stream", "deflate", "request" };
	static unsigned char in[24 << 10], out[32 << 10];
	long n = argc > 1 ? atol(argv[1]) : 3000;
	uint64_t rng = 0x1234567887654321ULL, sum = 0;
#ifdef TWIN
	tw_pool_init(&small);
	tw_pool_init(&big);
#endif
	for (long r = 0; r < n; r++) {
		size_t len = 4096 + tw_rand(&rng) % (16 << 10), k = 0;
		while (k < len) {
			const char *w = words[tw_rand(&rng) % 12];
			size_t wl = strlen(w);
			if (k + wl + 1 > len)
				break;
			memcpy(in + k, w, wl);
			k += wl;
			in[k++] = (tw_rand(&rng) & 7) ? ' ' : '\n';
		}
		struct zsizes zs = { { 0 }, { 0 } };
		z_stream s;
		memset(&s, 0, sizeof(s));
		s.zalloc = z_alloc;
		s.zfree = z_free;
		s.opaque = &zs;
		if (deflateInit(&s, Z_DEFAULT_COMPRESSION) != Z_OK)
			abort();
		s.next_in = in;
		s.avail_in = (uInt)k;
		s.next_out = out;
		s.avail_out = sizeof(out);
		if (deflate(&s, Z_FINISH) != Z_STREAM_END)
			abort();
		sum = tw_mix(sum, crc32(0, out, (uInt)s.total_out));
		sum = tw_mix(sum, s.total_out);
		deflateEnd(&s);
	}
	printf("zstream %ld requests checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
