//go:build !linux

package outfile

import (
	"errors"
	"os"
)

// openBeneath is not available here: the output folder is checked for
// links before the output is made (see Options.Beneath), not held.
func openBeneath(root, dir string) (*os.File, error) { return nil, errors.ErrUnsupported }

func dirPath(d *os.File, name string) string { return name }
