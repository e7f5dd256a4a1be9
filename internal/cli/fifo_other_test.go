//go:build !unix

package cli

import "testing"

// makeFIFO makes nothing: there are no named pipes in a folder here, and
// what the tests ask of one (not found) holds for a missing file too.
func makeFIFO(t *testing.T, path string) {}
