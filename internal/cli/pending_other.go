//go:build !linux

package cli

import "os"

// pendingInput cannot tell here whether stdin holds input: it says no.
func pendingInput(*os.File) bool { return false }
