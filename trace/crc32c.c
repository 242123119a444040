/* CRC-32C for chunk checksums: hardware instruction when present, table otherwise. */
#include "ap_trace_enc.h"

#include <stdbool.h>

static uint32_t crc_table[256];
static int crc_mode; /* 0 unknown, 1 table, 2 sse4.2 */

static void crc_init_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[i] = c;
	}
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(const uint8_t *p,
							 size_t len, uint32_t c)
{
	uint64_t c64 = c;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		c64 = __builtin_ia32_crc32di(c64, w);
		p += 8;
		len -= 8;
	}
	c = (uint32_t)c64;
	while (len--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}

static uint32_t crc_sw(const uint8_t *p, size_t len, uint32_t c)
{
	while (len--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

uint32_t ap_crc32c(const void *data, size_t len)
{
	int mode = __atomic_load_n(&crc_mode, __ATOMIC_ACQUIRE);
	if (!mode) {
		__builtin_cpu_init();
		if (__builtin_cpu_supports("sse4.2")) {
			mode = 2;
		} else {
			crc_init_table();
			mode = 1;
		}
		__atomic_store_n(&crc_mode, mode, __ATOMIC_RELEASE);
	}
	if (mode == 2)
		return ~crc_hw(data, len, 0xffffffffu);
	return ~crc_sw(data, len, 0xffffffffu);
}
