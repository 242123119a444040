/* config.c: the settings (rate, stack depth, seed, time quantum,
 * children), read from ALLOCPROF or the separate ALLOCPROF_* variables.
 * ap_init fills the values in once, before the sampler turns on; every
 * file reads them, none writes them after that. */
#include "sampler-int.h"

/* The defaults, until ap_init has read the environment. */
struct ap_settings settings = {
	.rate = DEFAULT_RATE,
	.max_depth = DEFAULT_DEPTH,
	.quantum = AP_FINE_QUANTUM_NS,
	.coarse_step = AP_DEFAULT_QUANTUM_NS / AP_FINE_QUANTUM_NS,
};

static const char *const cfg_names[CFG_N] = {
	"ALLOCPROF_PID", "ALLOCPROF_RATE", "ALLOCPROF_MAX_DEPTH", "ALLOCPROF_NO_CHILDREN",
	"ALLOCPROF_OUTPUT",
};
static char cfg_field[CFG_OUTPUT][24];
static const char *cfg_out;
static int cfg_combined;

void cfg_load(void)
{
	const char *c = getenv("ALLOCPROF");
	if (!c)
		return;
	for (int i = 0; i < CFG_OUTPUT; i++) {
		size_t k = 0;
		while (*c && *c != ':') {
			if (k + 1 < sizeof(cfg_field[i]))
				cfg_field[i][k++] = *c;
			c++;
		}
		cfg_field[i][k] = 0;
		if (*c != ':')
			return; /* malformed: the sampler stays off */
		c++;
	}
	cfg_out = c;
	cfg_combined = 1;
}

/* Whether the settings came from `allocprof record` (ALLOCPROF): then
 * record finishes the buffers file after the process (buffer.c). */
int cfg_from_record(void)
{
	return cfg_combined;
}

const char *cfg(int which)
{
	if (!cfg_combined)
		return getenv(cfg_names[which]);
	return which == CFG_OUTPUT ? cfg_out : cfg_field[which];
}

