//go:build !unix

package s3test

import "os"

// lockFile does nothing here: two test binaries that install versitygw
// at once are not kept apart on this system.
func lockFile(*os.File) error { return nil }

// unlockFile does nothing either.
func unlockFile(*os.File) error { return nil }
