/* drainer_probe: prints the ring's drainer its sampler named in its
 * buffers file (`drainer <pid>`), found as the mapping of a file whose
 * name ends in ".buffers" in /proc/self/maps; `drainer none` if there is
 * none. Run exec'd by a shell under `allocprof record` (durable.sh,
 * drainer): an image whose ring record has not looked at yet names
 * record, so that its END does not wait for record's first look. */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ap_trace_buffers.h"

int main(void)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[4096], path[4096] = "";
	size_t suf = strlen(AP_BUFFERS_SUFFIX);
	while (maps && fgets(line, sizeof(line), maps)) {
		line[strcspn(line, "\n")] = 0;
		char *p = strchr(line, '/');
		size_t n = p ? strlen(p) : 0;
		if (n > suf && !strcmp(p + n - suf, AP_BUFFERS_SUFFIX)) {
			snprintf(path, sizeof(path), "%s", p);
			break;
		}
	}
	if (maps)
		fclose(maps);
	struct ap_buffers_head h;
	int fd = *path ? open(path, O_RDONLY) : -1;
	if (fd < 0 || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		printf("drainer none\n");
		return 1;
	}
	close(fd);
	printf("drainer %u\n", h.drainer_pid);
	return 0;
}
