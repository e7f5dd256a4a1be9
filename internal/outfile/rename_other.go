//go:build !linux

package outfile

import "errors"

// renameNoReplace is not available here: place falls back to link(2).
func renameNoReplace(tmp, final string) error { return errors.ErrUnsupported }
