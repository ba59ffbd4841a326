// Command gen writes keys/table_gen.go from qemu's keycodemapdb keymaps.csv;
// go generate runs it from keys/. Package keygen does the work and documents
// the rule for CSV rows that share a USB usage: the first row in file order
// with a W3C name wins, else the first row.
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
	if *in == "" || *license == "" {
		log.Fatal("gen: -in and -license are required")
	}
	src, err := keygen.Generate(*in, *license)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
