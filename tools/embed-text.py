#!/usr/bin/env python3
"""Writes a text file as a C header holding one string constant.

usage: embed-text.py INPUT OUTPUT NAME

OUTPUT gets `static const char NAME[] = "...";`, the bytes of INPUT. Used
for the flame graph's script (cli/flamegraph.js), which goes into a CDATA
section, and the page of `allocprof html` (cli/html.js, cli/html.css),
inside <script> and <style>: INPUT must not hold "]]>", nor "</" followed
by "script" or "style".
"""
import sys


def main():
    src, out, name = sys.argv[1:4]
    data = open(src, "rb").read()
    if b"]]>" in data:
        sys.exit(f"embed-text.py: {src}: holds ']]>', which would end the CDATA section")
    low = data.lower()
    if b"</script" in low or b"</style" in low:
        sys.exit(f"embed-text.py: {src}: holds '</script' or '</style', which would end its element")
    lines = [f"/* Generated from {src.split('/')[-1]} by tools/embed-text.py. */",
             f"static const char {name}[] ="]
    for line in data.decode("utf-8").splitlines(keepends=True):
        esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t") \
                  .replace("\n", "\\n").replace("??", "?\\?")
        lines.append(f'\t"{esc}"')
    lines[-1] += ";"
    open(out, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
