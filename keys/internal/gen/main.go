// Command gen writes keys/table_gen.go (see package keygen); go generate
// runs it from keys/.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/keyrelay/keyrelay/keys/internal/keygen"
)

func main() {
	in := flag.String("in", "", "keymaps.csv")
	out := flag.String("out", "table_gen.go", "output file")
	license := flag.String("license", "", "LICENSE.BSD to quote in the header")
	flag.Parse()
	src, err := keygen.Generate(*in, *license)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
