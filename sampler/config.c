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
static char cfg_field[CFG_OUTPUT][40];
static const char *cfg_out;
static int cfg_combined;

/* ALLOCPROF's format into the fields: 0, or -1 if malformed. */
static int cfg_parse(const char *c)
{
	for (int i = 0; i < CFG_OUTPUT; i++) {
		size_t k = 0;
		while (*c && *c != ':') {
			if (k + 1 < sizeof(cfg_field[i]))
				cfg_field[i][k++] = *c;
			c++;
		}
		cfg_field[i][k] = 0;
		if (*c != ':')
			return -1; /* malformed: the sampler stays off */
		c++;
	}
	cfg_out = c;
	cfg_combined = 1;
	return 0;
}

void cfg_load(void)
{
	const char *c = getenv("ALLOCPROF");
	if (c)
		cfg_parse(c);
}

/* The settings of an attach (attach.c), in ALLOCPROF's format; c lives
 * as long as the sampler runs. 0, or -1 if malformed. */
int cfg_use(const char *c)
{
	return cfg_parse(c);
}

/* Whether the settings came from `allocprof record` (ALLOCPROF): then
 * record finishes the buffers file after the process (buffer.c). Not
 * when attached: its buffers are private memory. */
int cfg_from_record(void)
{
	return cfg_combined && !attach_mode; /* attached: no buffers file */
}

/* ALLOCPROF's first field: the pid of the process record launched, after
 * a '.' the run's number in hex (record's: a later run's program may get
 * the pid of an earlier run's), and after another '.' record's own pid
 * (the ring's drainer, in record's pid namespace), in *drainer if not
 * NULL; 0 for what is not said. */
uint64_t cfg_run_pid(uint64_t *run_id, uint64_t *drainer)
{
	const char *s = cfg(CFG_PID);
	uint64_t pid = 0, id = 0, rec = 0;
	*run_id = 0;
	if (drainer)
		*drainer = 0;
	if (!s || !*s)
		return 0;
	for (; *s >= '0' && *s <= '9'; s++)
		pid = pid * 10 + (uint64_t)(*s - '0');
	if (*s == '.') {
		for (s++; *s && *s != '.'; s++) {
			int d = *s >= '0' && *s <= '9' ? *s - '0'
				: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
							: -1;
			if (d < 0)
				return 0; /* malformed: no run said */
			id = id << 4 | (uint64_t)d;
		}
		if (*s == '.') {
			for (s++; *s >= '0' && *s <= '9'; s++)
				rec = rec * 10 + (uint64_t)(*s - '0');
			if (*s || rec > UINT32_MAX)
				return 0;
		}
	} else if (*s) {
		return 0;
	}
	*run_id = id;
	if (drainer)
		*drainer = rec;
	return pid;
}

const char *cfg(int which)
{
	if (!cfg_combined)
		return getenv(cfg_names[which]);
	return which == CFG_OUTPUT ? cfg_out : cfg_field[which];
}

