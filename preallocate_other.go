//go:build !linux

package main

import "os"

// preallocate does nothing outside Linux: see preallocate_linux.go.
func preallocate(f *os.File, n int64) bool { return false }
