// Command keyrelay relays a keyboard over UDP: see README.md.
package main

import (
	"os"

	"github.com/keyrelay/keyrelay/cmd"
)

func main() {
	os.Exit(cmd.Execute())
}
