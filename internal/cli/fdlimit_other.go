//go:build !unix

package cli

// openFileLimit returns 0: the limit is not known here.
func openFileLimit() int { return 0 }
