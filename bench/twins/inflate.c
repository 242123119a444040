/* inflate: per-message decompression. A message bus's consumer receives
 * zlib-compressed messages (64 distinct ones, 2-60 KiB of text each
 * before compression, made once at start) and decodes each with a
 * stream of its own: inflateInit, inflate in 16 KiB chunks (zlib's
 * zpipe.c loop: each chunk checksummed as it comes), inflateEnd, with
 * zalloc/zfree set to z_alloc/z_free, so every message allocates and
 * frees zlib's inflate state (~7 KiB) and its 32 KiB window (allocated
 * at the first inflate call that does not finish the stream: every
 * message longer than a chunk).
 * Unlike zstream.c (deflate: 5 blocks, 262 KiB a stream, trimmed at the
 * top of the heap every request), a stream's 39 KiB stays under glibc's
 * trim threshold: the pages stay, and a pool should save little, two
 * malloc/free pairs beside an inflate of 2-60 KiB.
 * Twin: z_alloc takes blocks from two vpools (up to 16 KiB, and above),
 * z_free puts them back. */
// site: z_alloc
// libs: -lz -lm
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "twin.h"

#define NMSG 64
#define CHUNK 16384

static unsigned char chunk[CHUNK];

static struct tw_sized zsz;

#ifdef TWIN
static struct vpool small, big;
#endif

TW_SITE static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
	(void)opaque;
	size_t n = (size_t)items * size;
#ifdef TWIN
	void *p = tw_get(n <= 16384 ? &small : &big, n);
#else
	void *p = malloc(n);
#endif
	TW_ALLOC(n);
	tw_sized_add(&zsz, p, n);
	return p;
}

TW_SITE static void z_free(voidpf opaque, voidpf p)
{
	(void)opaque;
	size_t n = tw_sized_take(&zsz, p);
	TW_FREE(n);
#ifdef TWIN
	vpool_put(n <= 16384 ? &small : &big, p);
#else
	(void)n;
	free(p);
#endif
}

struct msg {
	unsigned char *z;
	size_t zlen, len;
};

static const char *vocab[] = {"order", "id", "price", "qty", "symbol", "ts", "side", "buy", "sell",
			      "venue", "status", "filled", "open", "cancel", "account", "user"};

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	uint64_t rng = 0xabad1deacafef00dULL, sum = 0;
	struct msg msgs[NMSG];
	char *text = malloc(64 << 10);
	if (!text)
		abort();
	for (int i = 0; i < NMSG; i++) {
		/* 2 KiB * 2^(0..5): log-uniform 2-60 KiB */
		size_t want = (size_t)(2048.0 * __builtin_exp2((double)(tw_rand(&rng) % 4900) / 1000.0));
		size_t len = 0;
		while (len + 64 < want) {
			uint64_t r = tw_rand(&rng);
			len += (size_t)sprintf(text + len, "{\"%s\":%u,\"%s\":\"%s\"},\n", vocab[r & 15],
					       (unsigned)(r >> 8) % 100000, vocab[r >> 40 & 15],
					       vocab[r >> 44 & 15]);
		}
		uLongf zl = compressBound(len);
		msgs[i].z = malloc(zl);
		if (!msgs[i].z || compress2(msgs[i].z, &zl, (const Bytef *)text, len, 6) != Z_OK)
			abort();
		msgs[i].zlen = zl;
		msgs[i].len = len;
	}
	free(text);
#ifdef TWIN
	tw_pool_init(&small);
	tw_pool_init(&big);
#endif
	for (long r = 0; r < n; r++) {
		struct msg *m = &msgs[tw_rand(&rng) % NMSG];
		z_stream zs;
		memset(&zs, 0, sizeof zs);
		zs.zalloc = z_alloc;
		zs.zfree = z_free;
		if (inflateInit(&zs) != Z_OK)
			abort();
		zs.next_in = m->z;
		zs.avail_in = (uInt)m->zlen;
		/* zlib's zpipe.c: inflate into a chunk, consume it, again */
		uint64_t h = m->len;
		int ret;
		do {
			zs.next_out = chunk;
			zs.avail_out = CHUNK;
			ret = inflate(&zs, Z_NO_FLUSH);
			if (ret != Z_OK && ret != Z_STREAM_END)
				abort();
			size_t got = CHUNK - zs.avail_out;
			for (size_t k = 0; k + 8 <= got; k += 8) {
				uint64_t v;
				memcpy(&v, chunk + k, 8);
				h = tw_mix(h, v);
			}
		} while (ret != Z_STREAM_END);
		if (zs.total_out != m->len)
			abort();
		inflateEnd(&zs);
		sum = tw_mix(sum, h);
	}
	for (int i = 0; i < NMSG; i++)
		free(msgs[i].z);
	printf("inflate %ld messages checksum %016llx\n", n, (unsigned long long)sum);
	return 0;
}
