//go:build !unix

package clitest

import "os"

// lockFile does nothing here: test processes that fill one cache folder
// at once are not kept apart on this system.
func lockFile(*os.File) error { return nil }

// unlockFile does nothing either.
func unlockFile(*os.File) error { return nil }
