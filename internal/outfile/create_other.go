//go:build !unix

package outfile

import "os"

// createNew creates the new file name for reading and writing.
func createNew(name string, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR, perm)
}
