// Command laxity runs recurring analytical queries over a stream
// intermittently, at the lowest cost that meets every deadline.
package main

import (
	"os"

	"github.com/laxity-dev/laxity/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
