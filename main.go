// Command crypt4gh encrypts and decrypts files in the GA4GH Crypt4GH format.
//
// It reads and writes the same files, keys, flags and environment variables
// as the reference Python tool, so that a pipeline can switch by changing the
// name of the binary. Run "crypt4gh help" for the commands.
package main

import (
	"os"

	"github.com/c4gh-go/crypt4gh/internal/cli"
	_ "github.com/c4gh-go/crypt4gh/internal/prefault" // the heap's first pages in one system call
)

func main() {
	os.Exit(cli.Run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}
