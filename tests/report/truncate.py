"""A truncated copy of a trace, for the tests that check how the views
show one: the longest prefix of SRC that `allocprof stats` reads as a
truncated trace (it ends inside a chunk), written to DST."""
import subprocess


def truncated_copy(ap, src, dst, env):
    data = open(src, "rb").read()
    for n in range(len(data) - 1, len(data) // 2, -1):
        with open(dst, "wb") as f:
            f.write(data[:n])
        st = subprocess.run([ap, "stats", dst], capture_output=True, env=env)
        if st.returncode == 0 and b"truncated          yes" in st.stdout:
            return dst
    raise RuntimeError("no prefix of %s reads as a truncated trace" % src)
