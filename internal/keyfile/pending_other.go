//go:build !linux

package keyfile

import "os"

// pendingInput cannot tell here whether stdin holds input: it says no.
func pendingInput(*os.File) bool { return false }
