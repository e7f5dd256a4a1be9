package c4gh

import (
	"io"
	"os"
)

// bodySection reports where the body of src lies when src is a regular
// file positioned at the start of the body: the file as an io.ReaderAt,
// the current offset and the file size.
func bodySection(src io.Reader) (ra io.ReaderAt, start, end int64, ok bool) {
	f, isFile := src.(*os.File)
	if !isFile {
		return nil, 0, 0, false
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, 0, 0, false
	}
	start, err = f.Seek(0, io.SeekCurrent)
	if err != nil || start > fi.Size() {
		return nil, 0, 0, false
	}
	return f, start, fi.Size(), true
}
