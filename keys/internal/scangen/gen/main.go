// Command gen writes keys/scancode_gen.go, the USB HID usage ↔ Windows scan
// code table, from qemu's keycodemapdb keymaps.csv; go generate runs it from
// keys/. Package scangen does the work and documents the rules.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/keyrelay/keyrelay/keys/internal/scangen"
)

func main() {
	in := flag.String("in", "", "keymaps.csv")
	out := flag.String("out", "scancode_gen.go", "output file")
	license := flag.String("license", "", "LICENSE.BSD to quote in the header")
	flag.Parse()
	if *in == "" || *license == "" {
		log.Fatal("scangen: -in and -license are required")
	}
	src, err := scangen.Generate(*in, *license)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
