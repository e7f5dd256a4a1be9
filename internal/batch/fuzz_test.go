package batch

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func FuzzReadList(f *testing.F) {
	f.Add([]byte("a\nb\n"), false)
	f.Add([]byte("a\x00b"), true)
	f.Fuzz(func(t *testing.T, data []byte, nul bool) {
		sep := byte('\n')
		if nul {
			sep = 0
		}
		n := 0
		for name, err := range ReadList(bytes.NewReader(data), nul) {
			if err != nil {
				return
			}
			if name == "" || bytes.IndexByte([]byte(name), sep) >= 0 || len(name) > MaxName {
				t.Fatalf("name %q", name)
			}
			n++
		}
		if n > len(data) {
			t.Fatalf("%d names from %d bytes", n, len(data))
		}
	})
}

// FuzzJournal opens journals of any content: an error or a journal, and
// a journal opened twice is the same.
func FuzzJournal(f *testing.F) {
	f.Add([]byte(`{"journal":"crypt4gh","version":1,"command":"decrypt"}` + "\n" + `{"start":"a","output":"b"}` + "\n" + `{"done":"a","output":"b","size":3}` + "\n{\"do"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "j")
		os.WriteFile(path, data, 0o600)
		j, err := OpenJournal(path, Binding{Command: "decrypt"})
		if err != nil {
			return
		}
		_, done := j.Done("a")
		j.Close()
		j, err = OpenJournal(path, Binding{Command: "decrypt"})
		if err != nil {
			t.Fatalf("a journal opened once fails the second time: %v", err)
		}
		if _, again := j.Done("a"); again != done {
			t.Fatalf("Done changed between two opens")
		}
		j.Close()
	})
}

// FuzzParseShard: a shard parses to 0 ≤ I < N and prints back as given
// in its canonical form, or is a usage error.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/4", "3/4", "4/4", "1/0", "01/2", "a/b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := ParseShard(s)
		if err != nil {
			return
		}
		if sh.N == 0 || sh.I >= sh.N {
			t.Fatalf("ParseShard(%q) = %+v", s, sh)
		}
		if again, err := ParseShard(sh.String()); err != nil || again != sh {
			t.Fatalf("ParseShard(%q) = %+v, printed %q, parsed again %+v, %v", s, sh, sh.String(), again, err)
		}
	})
}
