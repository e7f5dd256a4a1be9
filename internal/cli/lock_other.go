//go:build !unix

package cli

import "os"

// lockFile does nothing here: two runs of decrypt --continue on one
// output are not kept apart on this system.
func lockFile(*os.File) error { return nil }

// ownedPrivate cannot check the owner here: it checks the mode only.
func ownedPrivate(fi os.FileInfo) bool { return fi.Mode().Perm()&0o077 == 0 }

// mountedOn cannot tell here: it says no.
func mountedOn(string) bool { return false }

// singleLink cannot tell here: it says yes.
func singleLink(os.FileInfo) bool { return true }
