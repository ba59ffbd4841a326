// Command rggen writes inject/robotgo_keys_gen.go (see package rgtable);
// go generate runs it from inject/.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/keyrelay/keyrelay/inject/internal/rgtable"
)

func main() {
	out := flag.String("out", "robotgo_keys_gen.go", "output file")
	flag.Parse()
	src, err := rgtable.Generate()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
