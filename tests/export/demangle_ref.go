// The names Go's pprof shows for C++ functions: each line of stdin (a
// mangled name) through the demangling pprof applies by default
// (internal/symbolizer: demangle.Filter with NoParams and
// NoTemplateParams), with the demangle package vendored in Go's own tree.
package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/ianlancetaylor/demangle"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println(demangle.Filter(in.Text(), demangle.NoParams, demangle.NoTemplateParams))
	}
}
