//go:build !linux

package mount

import "context"

// Server is a mounted file system. On this system [Mount] always fails
// with [ErrNotSupported], so there is never one.
type Server struct{}

// Mount fails with [ErrNotSupported]: this package mounts file systems on
// Linux only.
func Mount(src Source, mountpoint string, opts Options) (*Server, error) {
	return nil, ErrNotSupported
}

// Wait returns ErrNotSupported.
func (s *Server) Wait(ctx context.Context) error { return ErrNotSupported }

// Unmount returns ErrNotSupported.
func (s *Server) Unmount() error { return ErrNotSupported }

// Top returns the zero Shown.
func (s *Server) Top() Shown { return Shown{} }
