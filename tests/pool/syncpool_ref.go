// The reference for the pool model: Go's own sync.Pool on one P, with
// automatic GC off and runtime.GC() as the cycle. Reads scripts on stdin:
//
//	script NAME    start a new, empty pool
//	put ID         Put object ID (a positive integer)
//	get            Get; prints "NAME N ID" or "NAME N miss" (N counts Gets)
//	gc             one collection cycle
//
// With GOMAXPROCS=1 every Get and Put runs on P 0, so the output is exact.
package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

type obj struct{ id int }

func main() {
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(-1)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var pool *sync.Pool
	name := ""
	ngets := 0
	// Objects stay reachable from here too, so a cycle cannot free them
	// while the pool would still hand them out (it never does anyway).
	objs := map[int]*obj{}
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "script":
			pool = &sync.Pool{}
			name = f[1]
			ngets = 0
			objs = map[int]*obj{}
		case "put":
			id, err := strconv.Atoi(f[1])
			if err != nil {
				fmt.Fprintln(os.Stderr, "bad id:", f[1])
				os.Exit(2)
			}
			o := objs[id]
			if o == nil {
				o = &obj{id}
				objs[id] = o
			}
			pool.Put(o)
		case "get":
			ngets++
			x := pool.Get()
			if x == nil {
				fmt.Fprintf(out, "%s %d miss\n", name, ngets)
			} else {
				fmt.Fprintf(out, "%s %d %d\n", name, ngets, x.(*obj).id)
			}
		case "gc":
			runtime.GC()
		default:
			fmt.Fprintln(os.Stderr, "bad line:", in.Text())
			os.Exit(2)
		}
	}
}
