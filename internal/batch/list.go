package batch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
)

// MaxName is the longest name a list may hold (a path is at most 4096
// bytes on Linux, an S3 key 1024): a longer line is an error, not an
// allocation of whatever the list holds.
const MaxName = 64 << 10

// ReadList yields the names of the list r: one a line, or, with nul, one
// before each NUL byte (as find -print0 writes them). A last name without
// its separator counts; empty names are skipped. Names are not trimmed: a
// name may hold spaces. Memory is one name, whatever the length of the
// list. The iteration stops at the first error, which it yields.
func ReadList(r io.Reader, nul bool) iter.Seq2[string, error] {
	sep := byte('\n')
	if nul {
		sep = 0
	}
	return func(yield func(string, error) bool) {
		br := bufio.NewReaderSize(r, 64<<10)
		var buf []byte
		line := 0
		for {
			chunk, err := br.ReadSlice(sep)
			if len(buf)+len(chunk) > MaxName+1 {
				yield("", errkind.Wrap(errkind.Usage, fmt.Errorf("entry %d of the list is longer than %d bytes", line+1, MaxName)))
				return
			}
			buf = append(buf, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if len(buf) > 0 {
				line++
				name := string(bytes.TrimSuffix(buf, []byte{sep}))
				buf = buf[:0]
				if name != "" && !yield(name, nil) {
					return
				}
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				yield("", fmt.Errorf("failed to read the list: %w", err))
				return
			}
		}
	}
}
