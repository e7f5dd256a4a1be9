// Command fileserve serves the files of a folder over HTTP as a plain
// static file server does, with net/http's FileServer (Range requests,
// sendfile from the file to the socket): the ceiling against which
// scripts/bench-serve.sh puts the data endpoint of crypt4gh serve, the
// same bytes to the same client with no work of crypt4gh's own.
//
// Usage:
//
//	go run ./scripts/fileserve DIR
//
// It listens on a free loopback port and prints "at http://ADDR" on
// stderr, then serves until it is killed.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: fileserve DIR")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fileserve:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fileserve: at http://%s\n", ln.Addr())
	err = http.Serve(ln, http.FileServer(http.Dir(os.Args[1])))
	fmt.Fprintln(os.Stderr, "fileserve:", err)
	os.Exit(1)
}
