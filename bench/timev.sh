# Sourced by the bench scripts: `timev_fields FILE` prints the wall time
# (seconds), the user time (seconds) and the peak RSS (KiB) that
# `/usr/bin/time -v -o FILE` wrote, on one line.
timev_fields() {
	awk -F': ' '
		/Elapsed \(wall clock\)/ {
			n = split($2, p, ":"); s = 0
			for (i = 1; i <= n; i++) s = s * 60 + p[i]
			wall = s }
		/User time/ { user = $2 }
		/Maximum resident set size/ { rss = $2 }
		END { print wall, user, rss }' "$1"
}
