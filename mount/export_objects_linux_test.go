package mount

// MaxRead returns max_read of the mounts made next, for the bounds of the
// tests in package mount_test.
func MaxRead() int { return maxRead }
