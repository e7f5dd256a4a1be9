//go:build !unix

package outfile

import "os"

// Lock does nothing here: two runs on one journal, or of decrypt
// --continue on one output, are not kept apart on this system.
func Lock(*os.File) error { return nil }

// OwnedPrivate cannot check the owner here: it checks the mode only.
func OwnedPrivate(fi os.FileInfo) bool { return fi.Mode().Perm()&0o077 == 0 }

// MountedOn cannot tell here: it says no.
func MountedOn(string) bool { return false }

// SingleLink cannot tell here: it says yes.
func SingleLink(os.FileInfo) bool { return true }
