//go:build ignore

// gen writes robotgo_keys_gen.go, robotgo's key name for each key of the
// keys table (package rgtable makes it from robotgo's x11/keymap.go);
// robotgo.go's //go:generate line runs it.
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
