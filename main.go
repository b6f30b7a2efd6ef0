// Command laxity runs recurring analytical queries over a stream
// intermittently, at the lowest cost that meets every deadline. Installed
// as kubectl-laxity, it is also a kubectl plugin: kubectl laxity plan.
package main

import (
	"os"
	"path/filepath"

	"github.com/laxity-dev/laxity/internal/cli"
)

func main() {
	os.Exit(cli.Execute(filepath.Base(os.Args[0]), os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
